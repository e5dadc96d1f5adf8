#pragma once
// One cache root on disk: load with full verification, publish by fsync + atomic rename,
// removal, and the maintenance walks. Used for the user layer (writable) and the system layer
// (read-only: nothing here writes unless the store was opened for writing).
#include "fa4jit/cache/cache_entry.h"
#include "fa4jit/cache/cache_key.h"
#include "fa4jit/cache/cache_reports.h"
#include "fa4jit/cache/publish_hook.h"

#include "fs_util.h"
#include "key_lock.h"

#include "llvm/Support/Error.h"

#include <memory>
#include <string>
#include <vector>

namespace fa4jit::cache {

enum class LoadStatus { Hit, Miss, Corrupt };
struct LoadResult {
  LoadStatus status = LoadStatus::Miss;
  std::shared_ptr<CacheEntry> entry;
  std::string problem;
};

class DiskStore {
public:
  // Creates the root (0700) if needed, refuses one others may write or that is not ours, and
  // proves it writable by creating a file in it.
  static llvm::Expected<std::unique_ptr<DiskStore>> openWritable(llvm::StringRef root);
  // Refuses a root others may write; never creates anything.
  static llvm::Expected<std::unique_ptr<DiskStore>> openReadOnly(llvm::StringRef root);

  const std::string &root() const { return root_; }
  Layer layer() const { return writable_ ? Layer::User : Layer::System; }

  // touchLastUse records the use for LRU (writable stores only).
  LoadResult load(llvm::StringRef key, bool touchLastUse) const;

  // Records a use of the entry for LRU (writable stores; best effort, and nothing is created for
  // an entry that is gone).
  void touch(llvm::StringRef key) const;

  llvm::Expected<std::unique_ptr<FileLock>> lockKey(llvm::StringRef key, bool wait) const;
  // The caller holds lockKey(key.digest). If another writer's entry is already in place, ours
  // is discarded and that is success.
  llvm::Error publishLocked(const CacheKey &key, const EntryFiles &files, const PublishHook &hook) const;
  // The caller holds lockKey(key). The entry vanishes atomically (renamed into tmp/) first.
  // Returns false, removing nothing, when the key's shard is a symbolic link (the entry is then
  // outside the cache).
  bool removeLocked(llvm::StringRef key) const;

  struct Scan {
    std::string key;
    uint64_t bytes = 0;
    FileTime last_use;
  };
  std::vector<Scan> scanEntries() const;
  std::vector<std::string> tempDirs() const;
  std::vector<EntryInfo> list() const;
  LayerStats stats() const;
  // Removes leftover temp dirs (their key lock is free, so their writer is gone), then the least
  // recently used entries until at most maxBytes remain.
  PruneReport prune(uint64_t maxBytes) const;

private:
  DiskStore(std::string root, bool writable) : root_(std::move(root)), writable_(writable) {}
  std::string root_;
  bool writable_;
};

} // namespace fa4jit::cache
