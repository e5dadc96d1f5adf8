#pragma once
// The in-process layer in front of the disk: key -> entry, least recently used dropped past a
// byte cap. This is the hot path of every launch after the first, so it is one mutex, one hash
// lookup without allocation, one list splice and a hit count (a clock read every refreshHits-th
// hit of an entry: when the disk's last_use is due for a refresh, get() says so).
#include "fa4jit/cache/cache_entry.h"

#include "llvm/ADT/StringMap.h"

#include <cstdint>
#include <list>
#include <mutex>

namespace fa4jit::cache {

class MemoryLayer {
public:
  MemoryLayer(uint64_t maxBytes, uint32_t refreshHits, uint32_t refreshSeconds)
      : max_bytes_(maxBytes), refreshHits_(refreshHits), refreshSeconds_(refreshSeconds) {}
  // *refreshDue: the entry's disk last_use should be refreshed now (the caller does it).
  EntryPtr get(llvm::StringRef key, bool *refreshDue);
  void put(EntryPtr entry);
  void erase(llvm::StringRef key);
  void clear();
  uint64_t entries() const;
  uint64_t bytes() const;

private:
  struct Node {
    EntryPtr entry;
    uint32_t hits = 0;         // since the last refresh check
    int64_t refreshed_at = 0;   // unix seconds of the last refresh (the put: its load touched it)
  };
  using Order = std::list<Node>; // most recently used first
  void eraseLocked(llvm::StringRef key);
  mutable std::mutex mutex_;
  Order order_;
  llvm::StringMap<Order::iterator> index_;
  uint64_t bytes_ = 0;
  uint64_t max_bytes_;
  uint32_t refreshHits_, refreshSeconds_;
};

} // namespace fa4jit::cache
