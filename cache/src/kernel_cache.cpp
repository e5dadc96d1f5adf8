#include "fa4jit/cache/kernel_cache.h"

#include "disk_store.h"
#include "key_lock.h"
#include "memory_layer.h"

#include "fa4jit/logging/log.h"

namespace fa4jit::cache {

KernelCache::KernelCache(const CacheConfig &config)
    : config_(config), memory_(std::make_unique<MemoryLayer>(config.memory_max_bytes, config.last_use_refresh_hits,
                                                              config.last_use_refresh_seconds)),
      keyMutexes_(std::make_unique<KeyMutexes>()) {}

KernelCache::~KernelCache() = default;

std::unique_ptr<KernelCache> KernelCache::open(const CacheConfig &config) {
  std::unique_ptr<KernelCache> cache(new KernelCache(config));
  if (config.disable_disk)
    return cache;
  if (!config.system_dir.empty()) {
    if (!isDirectory(config.system_dir)) {
      cache->system_reason_ = "'" + config.system_dir + "' is not a directory";
      logging::logger().debug("fa4jit cache: no system layer: {}", cache->system_reason_);
    } else if (auto system = DiskStore::openReadOnly(config.system_dir)) {
      cache->system_ = std::move(*system);
    } else {
      cache->system_reason_ = llvm::toString(system.takeError());
      logging::logger().warn("fa4jit cache: system layer not used: {}", cache->system_reason_);
    }
  }
  if (config.user_dir.empty()) {
    cache->degrade("no cache directory is configured");
    return cache;
  }
  if (auto user = DiskStore::openWritable(config.user_dir))
    cache->user_ = std::move(*user);
  else if (std::string why = llvm::toString(user.takeError()); why.find(config.user_dir) != std::string::npos)
    cache->degrade(why);
  else
    cache->degrade("cache directory '" + config.user_dir + "' is unusable: " + why);
  return cache;
}

std::shared_ptr<const DiskStore> KernelCache::userStore() const {
  std::lock_guard<std::mutex> lock(stateMutex_);
  return user_;
}

std::shared_ptr<const DiskStore> KernelCache::writableUserStore() const {
  std::lock_guard<std::mutex> lock(stateMutex_);
  return writes_stopped_reason_.empty() ? user_ : nullptr;
}

bool KernelCache::hasUserLayer() const { return userStore() != nullptr; }

std::string KernelCache::writesStoppedReason() const {
  std::lock_guard<std::mutex> lock(stateMutex_);
  return writes_stopped_reason_;
}

std::string KernelCache::degradedReason() const {
  std::lock_guard<std::mutex> lock(stateMutex_);
  return degraded_reason_;
}

void KernelCache::setPublishHookForTesting(PublishHook hook) {
  std::lock_guard<std::mutex> lock(stateMutex_);
  hook_ = std::move(hook);
}

// A process that cannot write its cache still runs, recompiling what it uses once; saying so
// more than once would flood logs of jobs that launch thousands of kernels.
void KernelCache::degrade(const std::string &reason) {
  std::lock_guard<std::mutex> lock(stateMutex_);
  user_.reset();
  if (degraded_reason_.empty())
    degraded_reason_ = reason;
  if (!warned_)
    logging::logger().warn("fa4jit cache: using memory only (compiled kernels are not kept across runs): {}", reason);
  warned_ = true;
}

void KernelCache::stopWriting(const std::string &reason) {
  std::lock_guard<std::mutex> lock(stateMutex_);
  if (!writes_stopped_reason_.empty())
    return;
  writes_stopped_reason_ = reason;
  logging::logger().warn("fa4jit cache: not writing new kernels to the cache any more (its entries are still read, "
                         "new ones are kept in memory): {}",
                         reason);
}

llvm::Error KernelCache::publishMakingRoom(const DiskStore &user, const CacheKey &key, const EntryFiles &files,
                                           const PublishHook &hook) {
  llvm::Error first = user.publishLocked(key, files, hook);
  if (!first)
    return first;
  std::error_code code;
  std::string message;
  llvm::handleAllErrors(std::move(first), [&](const llvm::ErrorInfoBase &info) {
    code = info.convertToErrorCode();
    message = info.message();
  });
  const auto full = [](std::error_code c) {
    return c == std::errc::no_space_on_device || c == std::error_code(EDQUOT, std::generic_category());
  };
  if (!full(code))
    return llvm::createStringError(code, "%s", message.c_str());
  // Room for about twice this entry, taken from the least recently used entries (and whatever
  // temporary folders dead writers left).
  uint64_t need = 0;
  for (const auto &file : files)
    need += file.second.size();
  need = 2 * need + 64 * 1024;
  const PruneReport seen = user.prune(UINT64_MAX);
  const uint64_t now = seen.bytes_before - seen.bytes_removed;
  const PruneReport freed = user.prune(now > need ? now - need : 0);
  logging::logger().info("fa4jit cache: the disk is full ({}); removed {} entries ({} bytes) and trying again", message,
                         freed.entries_removed, freed.bytes_removed);
  return user.publishLocked(key, files, hook);
}

EntryPtr KernelCache::remember(std::shared_ptr<CacheEntry> entry) {
  EntryPtr shared = std::move(entry);
  memory_->put(shared);
  return shared;
}

EntryPtr KernelCache::loadUnlocked(llvm::StringRef digest, bool *userCorrupt) {
  *userCorrupt = false;
  if (system_) {
    LoadResult r = system_->load(digest, /*touchLastUse=*/false);
    if (r.status == LoadStatus::Hit) {
      ++counters_.system_hits;
      return remember(std::move(r.entry));
    }
    if (r.status == LoadStatus::Corrupt)
      logging::logger().warn("fa4jit cache: ignoring corrupt entry {} in the system layer {}: {}", digest.str(),
                   system_->root(), r.problem);
  }
  if (auto user = userStore()) {
    LoadResult r = user->load(digest, /*touchLastUse=*/true);
    if (r.status == LoadStatus::Hit) {
      ++counters_.user_hits;
      return remember(std::move(r.entry));
    }
    // Judged again under the key's lock: a reader racing a prune sees files vanish.
    *userCorrupt = r.status == LoadStatus::Corrupt;
  }
  return nullptr;
}

EntryPtr KernelCache::recheckLocked(const DiskStore &user, llvm::StringRef digest) {
  LoadResult r = user.load(digest, /*touchLastUse=*/true);
  if (r.status == LoadStatus::Hit) {
    ++counters_.user_hits;
    return remember(std::move(r.entry));
  }
  if (r.status == LoadStatus::Corrupt) {
    const bool removed = user.removeLocked(digest);
    if (removed)
      ++counters_.corrupt_removed;
    logging::logger().warn("fa4jit cache: entry {} in {} is corrupt ({}); {}, it will be recompiled", digest.str(),
                           user.root(), r.problem, removed ? "removed it" : "left it in place");
  }
  return nullptr;
}

EntryPtr KernelCache::memoryHit(llvm::StringRef digest) {
  bool refresh = false;
  EntryPtr hit = memory_->get(digest, &refresh);
  if (!hit)
    return nullptr;
  ++counters_.memory_hits;
  // Entries of the user layer, loaded or produced here (a system entry is never pruned by us).
  if (refresh && hit->layer != Layer::System)
    if (auto user = userStore())
      user->touch(digest);
  return hit;
}

EntryPtr KernelCache::lookup(llvm::StringRef digest) {
  if (EntryPtr hit = memoryHit(digest))
    return hit;
  bool userCorrupt = false;
  if (EntryPtr hit = loadUnlocked(digest, &userCorrupt))
    return hit;
  if (userCorrupt)
    if (auto user = userStore()) {
      KeyMutexes::Guard guard(*keyMutexes_, digest.str());
      llvm::Expected<std::unique_ptr<FileLock>> lock = user->lockKey(digest, /*wait=*/true);
      if (!lock)
        llvm::consumeError(lock.takeError());
      else if (EntryPtr hit = recheckLocked(*user, digest))
        return hit;
    }
  return nullptr;
}

llvm::Expected<EntryPtr> KernelCache::getOrCreate(const CacheKey &key, Producer produce) {
  if (EntryPtr hit = memoryHit(key.digest))
    return hit;
  // Threads of this process queue here; processes queue on the key's file lock below.
  KeyMutexes::Guard guard(*keyMutexes_, key.digest);
  if (EntryPtr hit = memoryHit(key.digest))
    return hit;
  bool userCorrupt = false;
  if (EntryPtr hit = loadUnlocked(key.digest, &userCorrupt))
    return hit;
  // (once writes have stopped, nothing is locked or written: the entry is kept in memory)
  std::shared_ptr<const DiskStore> user = writableUserStore();
  std::unique_ptr<FileLock> lock = lockUserKey(key.digest, user);
  // The double check: whoever held the lock before us may have just published this key.
  if (user)
    if (EntryPtr hit = recheckLocked(*user, key.digest))
      return hit;
  ++counters_.misses;
  llvm::Expected<EntryFiles> files = produce();
  if (!files)
    return files.takeError();
  ++counters_.produced;
  llvm::Expected<EntryPtr> stored = storeProduced(key, std::move(*files), user.get());
  lock.reset();
  if (stored && user && writableUserStore())
    pruneAfterPublish(*user);
  return stored;
}

std::unique_ptr<FileLock> KernelCache::lockUserKey(llvm::StringRef digest,
                                                   std::shared_ptr<const DiskStore> &user) {
  if (!user)
    return nullptr;
  llvm::Expected<std::unique_ptr<FileLock>> locked = user->lockKey(digest, /*wait=*/true);
  if (!locked) {
    degrade(llvm::toString(locked.takeError()));
    user.reset();
    return nullptr;
  }
  return std::move(*locked);
}

llvm::Expected<EntryPtr> KernelCache::storeProduced(const CacheKey &key, EntryFiles files, const DiskStore *user) {
  for (const auto &[name, data] : files)
    if (std::string why = checkEntryFileName(name); !why.empty())
      return llvm::createStringError(std::errc::invalid_argument, "cannot cache kernel %s: %s", key.digest.c_str(),
                                     why.c_str());
  if (user) {
    PublishHook hook;
    {
      std::lock_guard<std::mutex> state(stateMutex_);
      hook = hook_;
    }
    if (llvm::Error e = publishMakingRoom(*user, key, files, hook)) {
      stopWriting(llvm::toString(std::move(e)));
    } else {
      std::lock_guard<std::mutex> state(stateMutex_);
      written_.insert(key.digest);
    }
  }
  auto entry = std::make_shared<CacheEntry>();
  entry->key = key.digest;
  entry->files = std::move(files);
  entry->layer = Layer::Produced;
  return remember(std::move(entry));
}

void KernelCache::pruneAfterPublish(const DiskStore &user) {
  const PruneReport report = user.prune(config_.max_bytes);
  std::lock_guard<std::mutex> state(stateMutex_);
  for (const std::string &k : report.removed_keys) {
    if (!written_.count(k) || thrash_warned_)
      continue;
    thrash_warned_ = true;
    logging::logger().warn("fa4jit cache: the size cap of {} bytes (FA4JIT_CACHE_MAX_BYTES) evicted kernel {}, which "
                           "this process compiled: the cap is smaller than the kernels in use, so runs compile "
                           "them again; raise it",
                           config_.max_bytes, k.substr(0, 16));
  }
}

llvm::Expected<EntryPtr> KernelCache::publish(const CacheKey &key, EntryFiles files) {
  KeyMutexes::Guard guard(*keyMutexes_, key.digest);
  std::shared_ptr<const DiskStore> user = writableUserStore();
  std::unique_ptr<FileLock> lock = lockUserKey(key.digest, user);
  llvm::Expected<EntryPtr> stored = storeProduced(key, std::move(files), user.get());
  lock.reset();
  if (stored && user && writableUserStore())
    pruneAfterPublish(*user);
  return stored;
}

} // namespace fa4jit::cache
