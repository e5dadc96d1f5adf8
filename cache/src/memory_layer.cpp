#include "memory_layer.h"

namespace fa4jit::cache {

EntryPtr MemoryLayer::get(llvm::StringRef key) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = index_.find(key);
  if (it == index_.end())
    return nullptr;
  order_.splice(order_.begin(), order_, it->second);
  return *it->second;
}

void MemoryLayer::put(EntryPtr entry) {
  uint64_t size = entry->bytes();
  std::lock_guard<std::mutex> lock(mutex_);
  eraseLocked(entry->key);
  if (size > maxBytes_)
    return;
  order_.push_front(entry);
  index_[entry->key] = order_.begin();
  bytes_ += size;
  while (bytes_ > maxBytes_)
    eraseLocked(order_.back()->key);
}

void MemoryLayer::erase(llvm::StringRef key) {
  std::lock_guard<std::mutex> lock(mutex_);
  eraseLocked(key);
}

void MemoryLayer::eraseLocked(llvm::StringRef key) {
  auto it = index_.find(key);
  if (it == index_.end())
    return;
  bytes_ -= (*it->second)->bytes();
  order_.erase(it->second);
  index_.erase(it);
}

void MemoryLayer::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  index_.clear();
  order_.clear();
  bytes_ = 0;
}

uint64_t MemoryLayer::entries() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return order_.size();
}

uint64_t MemoryLayer::bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return bytes_;
}

} // namespace fa4jit::cache
