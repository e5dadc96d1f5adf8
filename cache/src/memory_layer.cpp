#include "memory_layer.h"

#include <chrono>

namespace fa4jit::cache {

namespace {
int64_t unixNow() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}
} // namespace

EntryPtr MemoryLayer::get(llvm::StringRef key, bool *refreshDue) {
  *refreshDue = false;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = index_.find(key);
  if (it == index_.end())
    return nullptr;
  order_.splice(order_.begin(), order_, it->second);
  Node &node = *it->second;
  if (refreshHits_ != 0 && ++node.hits >= refreshHits_) {
    node.hits = 0;
    const int64_t now = unixNow();
    if (now - node.refreshed_at >= static_cast<int64_t>(refreshSeconds_)) {
      node.refreshed_at = now;
      *refreshDue = true;
    }
  }
  return node.entry;
}

void MemoryLayer::put(EntryPtr entry) {
  uint64_t size = entry->bytes();
  std::lock_guard<std::mutex> lock(mutex_);
  eraseLocked(entry->key);
  if (size > max_bytes_)
    return;
  order_.push_front(Node{std::move(entry), 0, unixNow()});
  index_[order_.front().entry->key] = order_.begin();
  bytes_ += size;
  while (bytes_ > max_bytes_)
    eraseLocked(order_.back().entry->key);
}

void MemoryLayer::erase(llvm::StringRef key) {
  std::lock_guard<std::mutex> lock(mutex_);
  eraseLocked(key);
}

void MemoryLayer::eraseLocked(llvm::StringRef key) {
  auto it = index_.find(key);
  if (it == index_.end())
    return;
  bytes_ -= it->second->entry->bytes();
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
