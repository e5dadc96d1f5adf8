#pragma once
// How a KernelCache is set up. Filled by fa4jit::runtime::loadConfig() (the one place that
// reads FA4JIT_* variables) or directly by tests and tools.
#include <cstdint>
#include <string>

namespace fa4jit::cache {

struct CacheConfig {
  // Writable user layer; empty means memory only.
  std::string user_dir;
  // Read-only layer of pre-compiled kernels shipped with a deployment, searched before the user
  // layer and never written; empty means none.
  std::string system_dir;
  // The user layer is pruned to this many bytes (least recently used first) after a publish.
  uint64_t max_bytes = uint64_t(4) << 30;
  // The in-process layer keeps at most this many bytes of entries.
  uint64_t memory_max_bytes = uint64_t(512) << 20;
  // A long-lived process finds its kernels in memory and would never mark them used on disk, so
  // another process's prune (least recently used first) could evict the hottest ones. Every
  // lastUseRefreshHits-th memory hit of a user-layer entry therefore refreshes its disk last_use,
  // at most once per lastUseRefreshSeconds; 0 hits turns that off.
  uint32_t last_use_refresh_hits = 1024;
  uint32_t last_use_refresh_seconds = 60;
  // No disk at all (FA4JIT_DISABLE_CACHE): every process compiles what it uses once.
  bool disable_disk = false;
};

} // namespace fa4jit::cache
