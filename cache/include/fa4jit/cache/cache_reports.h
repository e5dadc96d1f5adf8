#pragma once
// What the maintenance operations (ls, stat, verify, prune, clear) return: plain data for the
// CLI's tables and JSON (cache_json.h).
#include "fa4jit/cache/cache_entry.h"
#include "fa4jit/cache/manifest.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace fa4jit::cache {

struct EntryInfo {
  std::string key;
  Layer layer = Layer::User;
  uint64_t bytes = 0; // on disk, manifest included
  int64_t created_unix_seconds = 0;
  int64_t last_use_unix_seconds = 0;
  std::string writer_version;
  std::vector<ManifestFile> files;
  std::vector<std::pair<std::string, std::string>> key_parts;
  std::string problem; // non-empty when the manifest could not be read (hashes are not checked)
};

struct LayerStats {
  std::string dir;
  bool available = false;
  std::string unavailable_reason;
  uint64_t entries = 0;
  uint64_t bytes = 0;
  uint64_t temp_dirs = 0; // publishes in progress or left by a crash (prune removes the latter)
};

struct CacheCounters {
  uint64_t memory_hits = 0;
  uint64_t system_hits = 0;
  uint64_t user_hits = 0;
  uint64_t misses = 0;
  uint64_t produced = 0;
  uint64_t corrupt_removed = 0;
};

struct CacheStats {
  std::string mode; // "disk", "memory" (degraded or no directory) or "disabled"
  std::string degraded_reason;
  std::string writes_stopped_reason; // new entries kept in memory, the user layer still read
  LayerStats user;
  LayerStats system;
  uint64_t max_bytes = 0;
  uint64_t memory_entries = 0;
  uint64_t memory_bytes = 0;
  CacheCounters counters; // of this process
};

struct VerifyOptions {
  bool remove_bad = false; // user layer only; the system layer is never written
};

struct VerifyIssue {
  std::string key;
  Layer layer = Layer::User;
  std::string problem;
  bool removed = false;
};

struct VerifyReport {
  uint64_t checked = 0;
  std::vector<VerifyIssue> bad;
};

struct PruneOptions {
  uint64_t max_bytes = 0;
};

struct PruneReport {
  uint64_t entries_before = 0;
  uint64_t bytes_before = 0;
  uint64_t entries_removed = 0;
  uint64_t bytes_removed = 0;
  uint64_t entries_after = 0;
  uint64_t bytes_after = 0;
  uint64_t temp_dirs_removed = 0;
  uint64_t skipped_busy = 0; // entries whose lock another process held
  std::vector<std::string> removed_keys; // the entries removed, oldest use first
};

} // namespace fa4jit::cache
