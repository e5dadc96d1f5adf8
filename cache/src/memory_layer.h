#pragma once
// The in-process layer in front of the disk: key -> entry, least recently used dropped past a
// byte cap. This is the hot path of every launch after the first, so it is one mutex, one hash
// lookup without allocation, and one list splice.
#include "fa4jit/cache/cache_entry.h"

#include "llvm/ADT/StringMap.h"

#include <cstdint>
#include <list>
#include <mutex>

namespace fa4jit::cache {

class MemoryLayer {
public:
  explicit MemoryLayer(uint64_t maxBytes) : maxBytes_(maxBytes) {}
  EntryPtr get(llvm::StringRef key);
  void put(EntryPtr entry);
  void erase(llvm::StringRef key);
  void clear();
  uint64_t entries() const;
  uint64_t bytes() const;

private:
  using Order = std::list<EntryPtr>; // most recently used first
  void eraseLocked(llvm::StringRef key);
  mutable std::mutex mutex_;
  Order order_;
  llvm::StringMap<Order::iterator> index_;
  uint64_t bytes_ = 0;
  uint64_t maxBytes_;
};

} // namespace fa4jit::cache
