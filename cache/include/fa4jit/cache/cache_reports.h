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
  int64_t createdUnixSeconds = 0;
  int64_t lastUseUnixSeconds = 0;
  std::string writerVersion;
  std::vector<ManifestFile> files;
  std::vector<std::pair<std::string, std::string>> keyParts;
  std::string problem; // non-empty when the manifest could not be read (hashes are not checked)
};

struct LayerStats {
  std::string dir;
  bool available = false;
  std::string unavailableReason;
  uint64_t entries = 0;
  uint64_t bytes = 0;
  uint64_t tempDirs = 0; // publishes in progress or left by a crash (prune removes the latter)
};

struct CacheCounters {
  uint64_t memoryHits = 0;
  uint64_t systemHits = 0;
  uint64_t userHits = 0;
  uint64_t misses = 0;
  uint64_t produced = 0;
  uint64_t corruptRemoved = 0;
};

struct CacheStats {
  std::string mode; // "disk", "memory" (degraded or no directory) or "disabled"
  std::string degradedReason;
  LayerStats user;
  LayerStats system;
  uint64_t maxBytes = 0;
  uint64_t memoryEntries = 0;
  uint64_t memoryBytes = 0;
  CacheCounters counters; // of this process
};

struct VerifyOptions {
  bool removeBad = false; // user layer only; the system layer is never written
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
  uint64_t maxBytes = 0;
};

struct PruneReport {
  uint64_t entriesBefore = 0;
  uint64_t bytesBefore = 0;
  uint64_t entriesRemoved = 0;
  uint64_t bytesRemoved = 0;
  uint64_t entriesAfter = 0;
  uint64_t bytesAfter = 0;
  uint64_t tempDirsRemoved = 0;
  uint64_t skippedBusy = 0; // entries whose lock another process held
};

} // namespace fa4jit::cache
