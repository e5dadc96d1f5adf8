#include "disk_store.h"

#include "fa4jit/cache/cache_version.h"
#include "fa4jit/cache/manifest.h"
#include "fa4jit/cache/sha256.h"

#include "layout.h"

#include <cassert>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <unistd.h>

namespace fa4jit::cache {
namespace {

constexpr uint64_t kMaxManifestBytes = 1 << 20;

// mkdtemp under <root>/tmp; the name starts with the key so prune can tell, through the key's
// lock, whether its writer is still alive.
llvm::Expected<std::string> makeTempDir(llvm::StringRef root, llvm::StringRef key, llvm::StringRef what) {
  std::string pattern = tmpDir(root) + "/" + key.str() + "." + what.str() + "." + std::to_string(::getpid()) + ".XXXXXX";
  if (!::mkdtemp(pattern.data()))
    return errnoError("cannot create temporary directory", pattern, errno);
  return pattern;
}

} // namespace

llvm::Expected<std::unique_ptr<DiskStore>> DiskStore::openWritable(llvm::StringRef root) {
  if (llvm::Error e = createPrivateDirectories(root))
    return e;
  if (llvm::Error e = checkPrivateDirectory(root, /*requireOwnedByUs=*/true))
    return e;
  for (const std::string &dir : {tmpDir(root), locksDir(root)}) {
    if (llvm::Error e = createPrivateDirectories(dir))
      return e;
    if (llvm::Error e = checkRealDirectory(dir))
      return e;
  }
  // A read-only mount, a full disk or a foreign ACL pass every check above; only a write tells.
  std::string probe = tmpDir(root) + "/probe." + std::to_string(::getpid()) + ".XXXXXX";
  int fd = ::mkstemp(probe.data());
  if (fd < 0)
    return errnoError("cannot write in cache directory", root, errno);
  ::close(fd);
  ::unlink(probe.c_str());
  return std::unique_ptr<DiskStore>(new DiskStore(root.str(), true));
}

llvm::Expected<std::unique_ptr<DiskStore>> DiskStore::openReadOnly(llvm::StringRef root) {
  if (llvm::Error e = checkPrivateDirectory(root, /*requireOwnedByUs=*/false))
    return e;
  return std::unique_ptr<DiskStore>(new DiskStore(root.str(), false));
}

void DiskStore::touch(llvm::StringRef key) const {
  if (writable_) // utimensat creates nothing: an entry pruned meanwhile stays gone
    llvm::consumeError(setModificationTime(entryDir(root_, key) + "/" + kLastUseName, std::chrono::system_clock::now()));
}

LoadResult DiskStore::load(llvm::StringRef key, bool touchLastUse) const {
  std::string dir = entryDir(root_, key);
  auto corrupt = [&](std::string why) {
    // Gone in between (pruned or healed by another process) is a miss, not damage.
    if (!pathExists(dir))
      return LoadResult{LoadStatus::Miss, nullptr, ""};
    return LoadResult{LoadStatus::Corrupt, nullptr, std::move(why)};
  };
  if (!pathExists(dir))
    return {};
  // The system layer loads only what root or this user wrote (fs_util.h); the user layer's root
  // is this user's own private directory.
  const auto read = [this](const std::string &path, uint64_t max_bytes) {
    return writable_ ? readWholeFile(path, max_bytes) : readTrustedFile(path, max_bytes);
  };
  if (!writable_)
    if (llvm::Error e = checkTrustedPath(root_, dir))
      return corrupt(llvm::toString(std::move(e)));
  if (writable_) // (an entry reached through a linked shard lies outside the cache)
    if (llvm::Error e = checkRealDirectory(shardDir(root_, key)))
      return corrupt(llvm::toString(std::move(e)));
  llvm::Expected<std::string> text = read(dir + "/" + kManifestName, kMaxManifestBytes);
  if (!text)
    return corrupt(llvm::toString(text.takeError()));
  llvm::Expected<Manifest> manifest = parseManifest(*text);
  if (!manifest)
    return corrupt(llvm::toString(manifest.takeError()));
  if (manifest->schema != schemaVersion())
    return corrupt("schema " + std::to_string(manifest->schema) + ", expected " + std::to_string(schemaVersion()));
  if (manifest->key != key)
    return corrupt("manifest names key " + manifest->key);
  auto entry = std::make_shared<CacheEntry>();
  entry->key = key.str();
  entry->layer = layer();
  for (const ManifestFile &f : manifest->files) {
    llvm::Expected<std::string> data = read(dir + "/" + f.name, f.size);
    if (!data)
      return corrupt(llvm::toString(data.takeError()));
    if (data->size() != f.size)
      return corrupt(f.name + " has " + std::to_string(data->size()) + " bytes, manifest says " +
                     std::to_string(f.size));
    if (sha256Hex(*data) != f.sha256)
      return corrupt(f.name + " does not match its SHA256 in the manifest");
    entry->files.emplace(f.name, std::move(*data));
  }
  // Best effort: a lost update only makes the entry look older to prune.
  if (touchLastUse)
    touch(key);
  return {LoadStatus::Hit, std::move(entry), ""};
}

llvm::Expected<std::unique_ptr<FileLock>> DiskStore::lockKey(llvm::StringRef key, bool wait) const {
  assert(writable_ && "the system layer is never locked");
  return FileLock::acquire(lockPath(root_, key), wait);
}

llvm::Error DiskStore::publishLocked(const CacheKey &key, const EntryFiles &files, const PublishHook &hook) const {
  assert(writable_ && "the system layer is never written");
  llvm::Expected<std::string> temp = makeTempDir(root_, key.digest, "new");
  if (!temp)
    return temp.takeError();
  auto fail = [&](llvm::Error e) {
    removeTree(*temp);
    return e;
  };
  Manifest manifest;
  manifest.schema = schemaVersion();
  manifest.key = key.digest;
  manifest.writer_version = writerVersion();
  manifest.created_unix_seconds =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  manifest.key_parts = key.parts;
  bool first = true;
  for (const auto &[name, data] : files) {
    if (llvm::Error e = writeFileDurably(*temp + "/" + name, data))
      return fail(std::move(e));
    manifest.files.push_back({name, data.size(), sha256Hex(data)});
    if (first && hook)
      if (int err = hook(PublishStage::FirstFileWritten))
        return fail(errnoError("cannot write", *temp + "/" + name, err));
    first = false;
  }
  if (llvm::Error e = writeFileDurably(*temp + "/" + kManifestName, serializeManifest(manifest)))
    return fail(std::move(e));
  if (llvm::Error e = writeFileDurably(*temp + "/" + kLastUseName, ""))
    return fail(std::move(e));
  // Sub-second precision: the kernel stamps files with a coarse clock, and LRU order between
  // entries made in one burst matters.
  if (llvm::Error e = setModificationTime(*temp + "/" + kLastUseName, std::chrono::system_clock::now()))
    return fail(std::move(e));
  // The directory's own records (the names) must be durable before the rename publishes them.
  if (llvm::Error e = fsyncDirectory(*temp))
    return fail(std::move(e));
  if (hook)
    if (int err = hook(PublishStage::BeforeRename))
      return fail(errnoError("cannot write", *temp, err));
  std::string shard = shardDir(root_, key.digest);
  if (llvm::Error e = createPrivateDirectories(shard))
    return fail(std::move(e));
  if (llvm::Error e = checkRealDirectory(shard))
    return fail(std::move(e));
  std::string target = entryDir(root_, key.digest);
  if (::rename(temp->c_str(), target.c_str()) != 0) {
    int err = errno;
    removeTree(*temp);
    if (err == EEXIST || err == ENOTEMPTY) // another writer got there first; its entry stands
      return llvm::Error::success();
    return errnoError("cannot rename a new entry into", target, err);
  }
  return fsyncDirectory(shard);
}

bool DiskStore::removeLocked(llvm::StringRef key) const {
  assert(writable_ && "the system layer is never written");
  std::string dir = entryDir(root_, key);
  if (llvm::Error e = checkRealDirectory(shardDir(root_, key))) {
    llvm::consumeError(std::move(e));
    return !pathExists(shardDir(root_, key)); // (no shard: nothing to remove)
  }
  llvm::Expected<std::string> grave = makeTempDir(root_, key, "old");
  if (!grave) {
    llvm::consumeError(grave.takeError());
    removeTree(dir);
    return true;
  }
  // Renaming over the empty grave hides the whole entry at once; readers never see half of it.
  if (::rename(dir.c_str(), grave->c_str()) != 0) {
    removeTree(*grave);
    removeTree(dir);
    return true;
  }
  removeTree(*grave);
  return true;
}

} // namespace fa4jit::cache
