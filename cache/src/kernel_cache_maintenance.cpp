// KernelCache's ls, stat, verify, prune and clear.
#include "fa4jit/cache/kernel_cache.h"

#include "disk_store.h"
#include "key_lock.h"
#include "memory_layer.h"

#include <spdlog/spdlog.h>

namespace fa4jit::cache {

std::vector<EntryInfo> KernelCache::list() const {
  std::vector<EntryInfo> out;
  if (system_)
    out = system_->list();
  if (auto user = userStore()) {
    std::vector<EntryInfo> more = user->list();
    out.insert(out.end(), more.begin(), more.end());
  }
  return out;
}

CacheStats KernelCache::stat() const {
  CacheStats st;
  std::shared_ptr<const DiskStore> user = userStore();
  st.mode = config_.disable_disk ? "disabled" : user ? "disk" : "memory";
  st.degraded_reason = degradedReason();
  st.writes_stopped_reason = writesStoppedReason();
  st.max_bytes = config_.max_bytes;
  if (user) {
    st.user = user->stats();
  } else {
    st.user.dir = config_.user_dir;
    st.user.unavailable_reason = config_.disable_disk ? "the disk cache is disabled" : st.degraded_reason;
  }
  if (system_) {
    st.system = system_->stats();
  } else {
    st.system.dir = config_.system_dir;
    st.system.unavailable_reason = config_.system_dir.empty() ? "none configured" : system_reason_;
  }
  st.memory_entries = memory_->entries();
  st.memory_bytes = memory_->bytes();
  st.counters.memory_hits = counters_.memory_hits;
  st.counters.system_hits = counters_.system_hits;
  st.counters.user_hits = counters_.user_hits;
  st.counters.misses = counters_.misses;
  st.counters.produced = counters_.produced;
  st.counters.corrupt_removed = counters_.corrupt_removed;
  return st;
}

VerifyReport KernelCache::verify(const VerifyOptions &options) {
  VerifyReport report;
  auto check = [&](const DiskStore &store) {
    for (const DiskStore::Scan &s : store.scanEntries()) {
      ++report.checked;
      LoadResult r = store.load(s.key, /*touchLastUse=*/false);
      if (r.status != LoadStatus::Corrupt)
        continue;
      VerifyIssue issue{s.key, store.layer(), r.problem, false};
      if (options.remove_bad && store.layer() == Layer::User) {
        KeyMutexes::Guard guard(*keyMutexes_, s.key);
        llvm::Expected<std::unique_ptr<FileLock>> lock = store.lockKey(s.key, /*wait=*/true);
        if (!lock) {
          llvm::consumeError(lock.takeError());
        } else if (store.load(s.key, false).status == LoadStatus::Corrupt && store.removeLocked(s.key)) {
          memory_->erase(s.key);
          ++counters_.corrupt_removed;
          issue.removed = true;
        }
      }
      report.bad.push_back(std::move(issue));
    }
  };
  if (system_)
    check(*system_);
  if (auto user = userStore())
    check(*user);
  return report;
}

PruneReport KernelCache::prune(const PruneOptions &options) {
  auto user = userStore();
  return user ? user->prune(options.max_bytes) : PruneReport{};
}

PruneReport KernelCache::clear() {
  memory_->clear();
  return prune(PruneOptions{0});
}

} // namespace fa4jit::cache
