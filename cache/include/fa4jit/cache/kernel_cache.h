#pragma once
// The kernel cache: an in-process layer, then a read-only system layer, then the user layer on
// disk. Entries are content-addressed (CacheKey), published atomically, verified on every load,
// and produced at most once across processes by a per-key lock with a double-checked lookup.
// It never fails to open: an unusable user directory degrades to memory with one warning.
#include "fa4jit/cache/cache_config.h"
#include "fa4jit/cache/cache_entry.h"
#include "fa4jit/cache/cache_key.h"
#include "fa4jit/cache/cache_reports.h"
#include "fa4jit/cache/publish_hook.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <set>
#include <string>
#include <vector>

namespace fa4jit::cache {

class DiskStore;
class FileLock;
class KeyMutexes;
class MemoryLayer;

class KernelCache {
public:
  using Producer = llvm::function_ref<llvm::Expected<EntryFiles>()>;

  static std::unique_ptr<KernelCache> open(const CacheConfig &config);
  ~KernelCache();
  KernelCache(const KernelCache &) = delete;
  KernelCache &operator=(const KernelCache &) = delete;

  // Memory, system, user; on a miss, lock the key, look again, produce, publish, unlock.
  // A producer error is returned as is and nothing is cached.
  llvm::Expected<EntryPtr> getOrCreate(const CacheKey &key, Producer produce);
  // nullptr on a miss. A corrupt user entry is reported, removed and treated as a miss.
  EntryPtr lookup(llvm::StringRef digest);
  // Stores an entry made elsewhere (e.g. by a pre-compiling tool).
  llvm::Expected<EntryPtr> publish(const CacheKey &key, EntryFiles files);

  std::vector<EntryInfo> list() const; // system layer first, then user
  CacheStats stat() const;
  VerifyReport verify(const VerifyOptions &options);
  // Prunes the user layer to options.max_bytes; a no-op report without a user layer.
  PruneReport prune(const PruneOptions &options);
  // Removes every user entry and empties the memory layer.
  PruneReport clear();

  bool hasUserLayer() const;
  // Why the user layer is off (empty when it is on or was never configured).
  std::string degradedReason() const;
  // Why new entries are no longer written to the user layer, whose entries are still read (a
  // write that failed again after a prune, such as on a full disk); empty while it is written.
  std::string writesStoppedReason() const;

  void setPublishHookForTesting(PublishHook hook);

private:
  explicit KernelCache(const CacheConfig &config);
  std::shared_ptr<const DiskStore> userStore() const;
  // The user layer while new entries are written to it, else nullptr.
  std::shared_ptr<const DiskStore> writableUserStore() const;
  void degrade(const std::string &reason);
  // New entries go to memory only from now on; the user layer's entries are still read.
  void stopWriting(const std::string &reason);
  // publishLocked, and on a full disk (ENOSPC, EDQUOT) a prune that frees about twice the entry's
  // size and one retry. The caller holds the key's lock.
  llvm::Error publishMakingRoom(const DiskStore &user, const CacheKey &key, const EntryFiles &files,
                                const PublishHook &hook);
  // The key's cross-process lock in the user layer (waiting for it); if it cannot be taken the
  // cache degrades to memory and `user` is cleared, so the caller stores in memory only.
  std::unique_ptr<FileLock> lockUserKey(llvm::StringRef digest, std::shared_ptr<const DiskStore> &user);
  // Without the key's lock; *userCorrupt tells whether the user entry failed verification.
  EntryPtr loadUnlocked(llvm::StringRef digest, bool *userCorrupt);
  // The memory layer's hit (counted), refreshing the disk last_use of a user-layer entry when due.
  EntryPtr memoryHit(llvm::StringRef digest);
  EntryPtr remember(std::shared_ptr<CacheEntry> entry);
  // With the key locked: a hit, or nullptr after removing a corrupt entry.
  EntryPtr recheckLocked(const DiskStore &user, llvm::StringRef digest);
  // With the key locked when user is set.
  llvm::Expected<EntryPtr> storeProduced(const CacheKey &key, EntryFiles files, const DiskStore *user);
  // The size cap's prune after a publish; warns once when it evicts an entry this process wrote
  // (the cap is smaller than the working set: every run would compile again).
  void pruneAfterPublish(const DiskStore &user);

  CacheConfig config_;
  std::unique_ptr<MemoryLayer> memory_;
  std::unique_ptr<KeyMutexes> keyMutexes_;
  std::shared_ptr<const DiskStore> system_;
  std::string system_reason_;
  mutable std::mutex stateMutex_; // guards user_, degraded_reason_, writes_stopped_reason_, warned_, hook_,
                                  // written_, thrash_warned_
  std::shared_ptr<const DiskStore> user_;
  std::string degraded_reason_;
  std::string writes_stopped_reason_;
  bool warned_ = false;
  PublishHook hook_;
  std::set<std::string> written_; // keys this process published to the user layer
  bool thrash_warned_ = false;
  struct AtomicCounters {
    std::atomic<uint64_t> memory_hits{0}, system_hits{0}, user_hits{0}, misses{0}, produced{0}, corrupt_removed{0};
  };
  mutable AtomicCounters counters_;
};

} // namespace fa4jit::cache
