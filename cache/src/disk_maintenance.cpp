// The walks over one cache root behind ls, stat and prune.
#include "disk_store.h"

#include "fa4jit/cache/manifest.h"
#include "fa4jit/cache/sha256.h"

#include "layout.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <cassert>

namespace fa4jit::cache {
namespace {

bool isShardName(llvm::StringRef name) {
  return name.size() == 2 && isSha256Hex((name + std::string(62, '0')).str());
}

int64_t unixSeconds(FileTime t) {
  return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
}

} // namespace

std::vector<DiskStore::Scan> DiskStore::scanEntries() const {
  std::vector<Scan> out;
  for (const std::string &shard : listDirectory(root_)) {
    if (!isShardName(shard))
      continue;
    for (const std::string &key : listDirectory(root_ + "/" + shard)) {
      if (!isSha256Hex(key) || llvm::StringRef(key).take_front(2) != shard)
        continue;
      Scan s;
      s.key = key;
      std::string dir = entryDir(root_, key);
      for (const std::string &name : listDirectory(dir))
        s.bytes += fileSize(dir + "/" + name);
      s.last_use = modificationTime(dir + "/" + kLastUseName);
      if (s.last_use == FileTime())
        s.last_use = modificationTime(dir + "/" + kManifestName);
      out.push_back(std::move(s));
    }
  }
  return out;
}

std::vector<std::string> DiskStore::tempDirs() const {
  std::vector<std::string> out;
  for (const std::string &name : listDirectory(tmpDir(root_)))
    out.push_back(tmpDir(root_) + "/" + name);
  return out;
}

std::vector<EntryInfo> DiskStore::list() const {
  std::vector<EntryInfo> out;
  for (const Scan &s : scanEntries()) {
    EntryInfo info;
    info.key = s.key;
    info.layer = layer();
    info.bytes = s.bytes;
    info.last_use_unix_seconds = unixSeconds(s.last_use);
    llvm::Expected<std::string> text = readWholeFile(entryDir(root_, s.key) + "/" + kManifestName, 1 << 20);
    llvm::Expected<Manifest> manifest = text ? parseManifest(*text) : text.takeError();
    if (manifest) {
      info.created_unix_seconds = manifest->created_unix_seconds;
      info.writer_version = manifest->writer_version;
      info.files = manifest->files;
      info.key_parts = manifest->key_parts;
    } else {
      info.problem = llvm::toString(manifest.takeError());
    }
    out.push_back(std::move(info));
  }
  std::sort(out.begin(), out.end(), [](const EntryInfo &a, const EntryInfo &b) { return a.key < b.key; });
  return out;
}

LayerStats DiskStore::stats() const {
  LayerStats st;
  st.dir = root_;
  st.available = true;
  for (const Scan &s : scanEntries()) {
    ++st.entries;
    st.bytes += s.bytes;
  }
  st.temp_dirs = tempDirs().size();
  return st;
}

PruneReport DiskStore::prune(uint64_t maxBytes) const {
  assert(writable_ && "the system layer is never pruned");
  PruneReport report;
  for (const std::string &path : tempDirs()) {
    llvm::StringRef name = llvm::sys::path::filename(path);
    llvm::StringRef key = name.take_front(64);
    std::unique_ptr<FileLock> held;
    if (isSha256Hex(key)) {
      // Writers keep their temp dir only while they hold the key's lock; a free lock means the
      // writer died (SIGKILL, power loss) and the directory is garbage.
      llvm::Expected<std::unique_ptr<FileLock>> lock = lockKey(key, /*wait=*/false);
      if (!lock) {
        llvm::consumeError(lock.takeError());
        continue;
      }
      if (!*lock)
        continue;
      held = std::move(*lock);
    }
    removeTree(path);
    // Taking the lock created its file if the path had none (a concurrent prune of the entry,
    // whose rename into tmp/ this directory may be, had removed it): with no entry for the key,
    // the lock file goes too, or locks/ would keep a file that no entry's removal takes away.
    // (Holding the lock, no writer can publish the entry meanwhile.)
    if (held && !llvm::sys::fs::exists(entryDir(root_, key)))
      held->removeFile();
    ++report.temp_dirs_removed;
  }
  std::vector<Scan> entries = scanEntries();
  for (const Scan &s : entries) {
    ++report.entries_before;
    report.bytes_before += s.bytes;
  }
  std::sort(entries.begin(), entries.end(), [](const Scan &a, const Scan &b) {
    return a.last_use != b.last_use ? a.last_use < b.last_use : a.key < b.key;
  });
  uint64_t total = report.bytes_before;
  for (const Scan &s : entries) {
    if (total <= maxBytes)
      break;
    llvm::Expected<std::unique_ptr<FileLock>> lock = lockKey(s.key, /*wait=*/false);
    if (!lock)
      llvm::consumeError(lock.takeError());
    if (!lock || !*lock) {
      ++report.skipped_busy;
      continue;
    }
    if (!removeLocked(s.key)) { // (behind a linked shard: outside the cache, never removed)
      ++report.skipped_busy;
      continue;
    }
    (*lock)->removeFile(); // the key's lock file goes with it (key_lock.h: waiters start over)
    total -= s.bytes;
    ++report.entries_removed;
    report.bytes_removed += s.bytes;
    report.removed_keys.push_back(s.key);
  }
  report.entries_after = report.entries_before - report.entries_removed;
  report.bytes_after = total;
  return report;
}

} // namespace fa4jit::cache
