// The system layer is searched first and never written; an unusable user directory degrades to
// memory with exactly one warning; a directory others may write is refused.
#include "cache_test_util.h"

#include <catch2/catch.hpp>

#include <cerrno>
#include <climits>
#include <dirent.h>
#include <functional>
#include <unistd.h>
#include <map>
#include <sys/stat.h>

using namespace fa4jit::cache;
using namespace fa4jit::cache::test;

namespace {

// path -> (mode, mtime ns, size) for everything under root.
using Snapshot = std::map<std::string, std::tuple<unsigned, long long, long long>>;
void snapshot(const std::string &path, Snapshot &out) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0)
    return;
  out[path] = {unsigned(st.st_mode), st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec, (long long)st.st_size};
  if (!S_ISDIR(st.st_mode))
    return;
  DIR *d = ::opendir(path.c_str());
  while (struct dirent *e = d ? ::readdir(d) : nullptr) {
    std::string name = e->d_name;
    if (name != "." && name != "..")
      snapshot(path + "/" + name, out);
  }
  if (d)
    ::closedir(d);
}

llvm::Expected<EntryFiles> mustNotRun() {
  return llvm::createStringError(std::errc::operation_not_permitted, "producer ran");
}

} // namespace

TEST_CASE("the system layer is searched first and never written", "[cache]") {
  ScratchDir dir;
  std::string system = dir.sub("system");
  std::string user = dir.sub("user");
  CacheKey shipped = sampleKey("shipped");
  REQUIRE(static_cast<bool>(KernelCache::open(userConfig(system))->publish(shipped, sampleFiles("shipped"))));
  // The user layer holds a different payload under the same key: the system one must win.
  EntryFiles userVersion = sampleFiles("shipped");
  userVersion["spec.json"] = "{\"from\":\"user\"}";
  REQUIRE(static_cast<bool>(KernelCache::open(userConfig(user))->publish(shipped, userVersion)));
  Snapshot before;
  snapshot(system, before);

  CacheConfig config = userConfig(user);
  config.system_dir = system;
  config.max_bytes = 0; // even a prune to nothing must leave the system layer alone
  auto cache = KernelCache::open(config);
  REQUIRE(cache->stat().system.available);
  auto entry = cache->getOrCreate(shipped, mustNotRun);
  REQUIRE(static_cast<bool>(entry));
  CHECK((*entry)->layer == Layer::System);
  CHECK((*entry)->files == sampleFiles("shipped"));
  CHECK(cache->stat().counters.system_hits == 1);

  auto fresh = cache->getOrCreate(sampleKey("new"), [] { return llvm::Expected<EntryFiles>(sampleFiles("new")); });
  REQUIRE(static_cast<bool>(fresh));
  cache->prune({0});
  cache->clear();
  cache->verify({});
  Snapshot unchanged;
  snapshot(system, unchanged);
  CHECK(unchanged == before);

  // A damaged system entry is skipped, never removed.
  flipByte(entryPath(system, shipped.digest) + "/kernel.cubin", 1);
  before.clear();
  snapshot(system, before);
  config.max_bytes = uint64_t(1) << 30;
  auto fallback = KernelCache::open(config);
  VerifyOptions fix;
  fix.remove_bad = true;
  VerifyReport report = fallback->verify(fix);
  REQUIRE(report.bad.size() == 1);
  CHECK(report.bad[0].layer == Layer::System);
  CHECK_FALSE(report.bad[0].removed);
  auto recompiled = fallback->getOrCreate(shipped, [] { return llvm::Expected<EntryFiles>(sampleFiles("shipped")); });
  REQUIRE(static_cast<bool>(recompiled));
  CHECK((*recompiled)->layer == Layer::Produced);
  Snapshot after;
  snapshot(system, after);
  CHECK(before == after);
  std::vector<EntryInfo> ls = fallback->list();
  REQUIRE(ls.size() == 2);
  CHECK(ls[0].layer == Layer::System);
  CHECK(ls[1].layer == Layer::User);
}

TEST_CASE("the system layer loads only entries that root or this user wrote", "[cache]") {
  // Each way another user could have written into a shipped entry: the entry must not load as
  // `system` (the producer runs instead), and `verify` must count it bad without removing it.
  struct Forgery {
    const char *what;
    std::function<void(const std::string &shard, const std::string &entry)> apply;
    bool needs_root; // (chown to another user needs root)
  };
  const Forgery forgeries[] = {
      {"a group-writable entry folder", [](const std::string &, const std::string &e) { ::chmod(e.c_str(), 0770); },
       false},
      {"an other-writable shard folder", [](const std::string &s, const std::string &) { ::chmod(s.c_str(), 0703); },
       false},
      {"a group-writable cubin",
       [](const std::string &, const std::string &e) { ::chmod((e + "/kernel.cubin").c_str(), 0620); }, false},
      {"a shard folder that is a symbolic link",
       [](const std::string &s, const std::string &) {
         REQUIRE(::rename(s.c_str(), (s + ".real").c_str()) == 0);
         REQUIRE(::symlink((s + ".real").c_str(), s.c_str()) == 0);
       },
       false},
      {"a cubin that is a symbolic link",
       [](const std::string &, const std::string &e) {
         REQUIRE(::rename((e + "/kernel.cubin").c_str(), (e + "/real.cubin").c_str()) == 0);
         REQUIRE(::symlink((e + "/real.cubin").c_str(), (e + "/kernel.cubin").c_str()) == 0);
       },
       false},
      {"a manifest owned by another user",
       [](const std::string &, const std::string &e) { REQUIRE(::chown((e + "/manifest.json").c_str(), 65534, 65534) == 0); },
       true},
      {"an entry folder owned by another user",
       [](const std::string &, const std::string &e) { REQUIRE(::chown(e.c_str(), 65534, 65534) == 0); }, true},
  };
  int tried = 0;
  for (const Forgery &f : forgeries) {
    if (f.needs_root && ::geteuid() != 0)
      continue;
    ++tried;
    INFO(f.what);
    ScratchDir dir;
    const std::string system = dir.sub("system");
    const CacheKey shipped = sampleKey("shipped");
    REQUIRE(static_cast<bool>(KernelCache::open(userConfig(system))->publish(shipped, sampleFiles("shipped"))));
    const std::string entry = entryPath(system, shipped.digest);
    f.apply(system + "/" + shipped.digest.substr(0, 2), entry);
    CacheConfig config = userConfig(dir.sub("user"));
    config.system_dir = system;
    auto cache = KernelCache::open(config);
    REQUIRE(cache->stat().system.available);
    VerifyReport report = cache->verify({});
    REQUIRE(report.bad.size() == 1);
    CHECK(report.bad[0].layer == Layer::System);
    CHECK_THAT(report.bad[0].problem, Catch::Contains("not trusted"));
    bool produced = false;
    auto e = cache->getOrCreate(shipped, [&] {
      produced = true;
      return llvm::Expected<EntryFiles>(sampleFiles("shipped"));
    });
    REQUIRE(static_cast<bool>(e));
    CHECK(produced);
    CHECK((*e)->layer == Layer::Produced);
    CHECK(::access((entry + "/manifest.json").c_str(), F_OK) == 0); // (never removed)
  }
  CHECK(tried >= 5);
}

TEST_CASE("an unwritable user directory degrades to memory with one warning", "[cache]") {
  ScratchDir dir;
  // A path below a regular file cannot be created, even by root (tests run as root, where mode
  // bits do not stop writes).
  writeFile(dir.sub("file"), "not a directory");
  WarningCounter warnings;
  auto cache = KernelCache::open(userConfig(dir.sub("file/cache")));
  CHECK_FALSE(cache->hasUserLayer());
  CHECK(warnings.warnings() == 1);
  CHECK_THAT(warnings.last(), Catch::Contains("memory only") && Catch::Contains("file/cache"));
  CHECK_THAT(cache->degradedReason(), Catch::Contains("file/cache"));
  int produced = 0;
  for (int i = 0; i < 3; ++i)
    for (const char *name : {"a", "b"}) {
      auto e = cache->getOrCreate(sampleKey(name), [&]() -> llvm::Expected<EntryFiles> {
        ++produced;
        return sampleFiles(name);
      });
      REQUIRE(static_cast<bool>(e));
      CHECK((*e)->files == sampleFiles(name));
    }
  CHECK(produced == 2);
  cache->prune({0});
  cache->verify({});
  CHECK(warnings.warnings() == 1);
  CacheStats st = cache->stat();
  CHECK(st.mode == "memory");
  CHECK_FALSE(st.user.available);
  CHECK(st.memory_entries == 2);
}

TEST_CASE("a cache folder that cannot be made leaves no folders behind", "[cache]") {
  ScratchDir dir;
  std::string too_long = dir.sub("deep");
  while (too_long.size() < PATH_MAX + 100)
    too_long += "/abcdefghijklmnopqrstuvwxyz";
  const std::string long_name = dir.sub("parent/child/") + std::string(NAME_MAX + 10, 'n');
  for (const std::string &root : {too_long, long_name}) {
    INFO(root.substr(0, 120));
    WarningCounter warnings;
    auto cache = KernelCache::open(userConfig(root));
    CHECK_FALSE(cache->hasUserLayer());
    CHECK(warnings.warnings() == 1);
    CHECK_THAT(cache->degradedReason(), Catch::Contains("cannot create directory"));
    // Nothing of the refused path was made (the long name's parents were, then removed).
    DIR *d = ::opendir(dir.path().c_str());
    REQUIRE(d != nullptr);
    int left = 0;
    while (struct dirent *e = ::readdir(d))
      left += std::string(e->d_name) != "." && std::string(e->d_name) != "..";
    ::closedir(d);
    CHECK(left == 0);
  }
}

TEST_CASE("a shard that is a symbolic link is never read, written or emptied through", "[cache]") {
  ScratchDir dir;
  const std::string root = dir.sub("cache"), outside = dir.sub("outside");
  const CacheKey key = sampleKey("one");
  {
    auto cache = KernelCache::open(userConfig(root));
    REQUIRE(static_cast<bool>(cache->publish(key, sampleFiles("one"))));
  }
  // The entry's shard moves out of the cache and a link takes its place.
  const std::string shard = root + "/" + key.digest.substr(0, 2);
  REQUIRE(::mkdir(outside.c_str(), 0700) == 0);
  const std::string moved = outside + "/" + key.digest.substr(0, 2);
  REQUIRE(::rename(shard.c_str(), moved.c_str()) == 0);
  REQUIRE(::symlink(moved.c_str(), shard.c_str()) == 0);

  WarningCounter warnings;
  auto cache = KernelCache::open(userConfig(root));
  int produced = 0;
  auto e = cache->getOrCreate(key, [&]() -> llvm::Expected<EntryFiles> {
    ++produced;
    return sampleFiles("one");
  });
  REQUIRE(static_cast<bool>(e));
  CHECK(produced == 1); // (the entry behind the link is not loaded)
  CHECK(warnings.warnings() >= 1);
  CHECK_THAT(warnings.last(), Catch::Contains("symbolic link"));
  // (that cache now runs in memory; a fresh one prunes and verifies the folder)
  auto fresh = KernelCache::open(userConfig(root));
  REQUIRE(fresh->hasUserLayer());
  fresh->prune({0});
  const VerifyReport report = fresh->verify({true});
  REQUIRE(report.bad.size() == 1); // (named, and left alone)
  CHECK_THAT(report.bad[0].problem, Catch::Contains("symbolic link"));
  CHECK_FALSE(report.bad[0].removed);
  // The entry outside is where it was, and nothing else was written there.
  const std::string outsideEntry = moved + "/" + key.digest;
  CHECK(::access((outsideEntry + "/manifest.json").c_str(), F_OK) == 0);
  DIR *d = ::opendir(moved.c_str());
  REQUIRE(d != nullptr);
  int names = 0;
  while (struct dirent *ent = ::readdir(d))
    names += std::string(ent->d_name) != "." && std::string(ent->d_name) != "..";
  ::closedir(d);
  CHECK(names == 1);
}

TEST_CASE("a write failure after opening stops writing once; entries on disk are still read", "[cache]") {
  ScratchDir dir;
  std::string root = dir.sub("cache");
  REQUIRE(static_cast<bool>(KernelCache::open(userConfig(root))->publish(sampleKey("w"), sampleFiles("w"))));
  auto cache = KernelCache::open(userConfig(root));
  REQUIRE(cache->hasUserLayer());
  // Make publishing impossible: the temporary directory's place is taken by a regular file.
  llvm::sys::fs::remove_directories(root + "/tmp");
  writeFile(root + "/tmp", "");
  WarningCounter warnings;
  for (const char *name : {"x", "y", "z"}) {
    auto e = cache->getOrCreate(sampleKey(name), [&] { return llvm::Expected<EntryFiles>(sampleFiles(name)); });
    REQUIRE(static_cast<bool>(e));
  }
  CHECK(warnings.warnings() == 1);
  CHECK_THAT(warnings.last(), Catch::Contains("still read"));
  CHECK(cache->hasUserLayer());
  CHECK_THAT(cache->writesStoppedReason(), Catch::Contains("tmp"));
  CHECK(cache->lookup(sampleKey("z").digest) != nullptr);
  bool produced = false;
  auto w = cache->getOrCreate(sampleKey("w"), [&] {
    produced = true;
    return llvm::Expected<EntryFiles>(sampleFiles("w"));
  });
  REQUIRE(static_cast<bool>(w));
  CHECK_FALSE(produced); // (read from the disk)
  CHECK((*w)->layer == Layer::User);
}

TEST_CASE("a full disk: prune, retry once, then keep reading without writing", "[cache]") {
  ScratchDir dir;
  std::string root = dir.sub("cache");
  auto cache = KernelCache::open(userConfig(root));
  for (const char *name : {"old1", "old2", "old3"})
    REQUIRE(static_cast<bool>(cache->publish(sampleKey(name), sampleFiles(name))));
  REQUIRE(cache->list().size() == 3);
  int failures_left = 1, hook_calls = 0, fail_with = ENOSPC;
  cache->setPublishHookForTesting([&](PublishStage s) {
    if (s != PublishStage::FirstFileWritten)
      return 0;
    ++hook_calls;
    return failures_left-- > 0 ? fail_with : 0;
  });
  WarningCounter warnings;
  // One failure: the least recently used entry makes room and the retry lands.
  REQUIRE(static_cast<bool>(cache->getOrCreate(sampleKey("new"), [] { return llvm::Expected<EntryFiles>(sampleFiles("new")); })));
  CHECK(hook_calls == 2);
  CHECK(warnings.warnings() == 0);
  CHECK(cache->writesStoppedReason().empty());
  std::vector<EntryInfo> listed = cache->list();
  CHECK(listed.size() < 4); // (at least one old entry went)
  bool has_new = false;
  for (const EntryInfo &e : listed)
    has_new |= e.key == sampleKey("new").digest;
  CHECK(has_new);
  // The retry fails too: writing stops with one warning, reading goes on.
  failures_left = 2;
  REQUIRE(static_cast<bool>(cache->getOrCreate(sampleKey("new2"), [] { return llvm::Expected<EntryFiles>(sampleFiles("new2")); })));
  CHECK(hook_calls == 4);
  CHECK(warnings.warnings() == 1);
  CHECK_THAT(cache->writesStoppedReason(), Catch::Contains("No space left on device"));
  CHECK(cache->hasUserLayer());
  CHECK(cache->stat().mode == "disk");
  CHECK_THAT(cache->stat().writes_stopped_reason, Catch::Contains("No space left on device"));
  REQUIRE(static_cast<bool>(cache->getOrCreate(sampleKey("new3"), [] { return llvm::Expected<EntryFiles>(sampleFiles("new3")); })));
  CHECK(hook_calls == 4); // (no more attempts)
  CHECK(warnings.warnings() == 1);
  // An entry another process writes meanwhile is read from the disk.
  REQUIRE(static_cast<bool>(KernelCache::open(userConfig(root))->publish(sampleKey("later"), sampleFiles("later"))));
  bool produced = false;
  auto later = cache->getOrCreate(sampleKey("later"), [&] {
    produced = true;
    return llvm::Expected<EntryFiles>(sampleFiles("later"));
  });
  REQUIRE(static_cast<bool>(later));
  CHECK_FALSE(produced);
  CHECK((*later)->layer == Layer::User);
}

TEST_CASE("a write error other than a full disk evicts nothing", "[cache]") {
  ScratchDir dir;
  std::string root = dir.sub("cache");
  auto cache = KernelCache::open(userConfig(root));
  for (const char *name : {"a", "b"})
    REQUIRE(static_cast<bool>(cache->publish(sampleKey(name), sampleFiles(name))));
  int hook_calls = 0;
  cache->setPublishHookForTesting([&](PublishStage s) {
    hook_calls += s == PublishStage::FirstFileWritten;
    return s == PublishStage::FirstFileWritten ? EIO : 0;
  });
  WarningCounter warnings;
  REQUIRE(static_cast<bool>(cache->getOrCreate(sampleKey("c"), [] { return llvm::Expected<EntryFiles>(sampleFiles("c")); })));
  CHECK(hook_calls == 1); // (no retry)
  CHECK(cache->list().size() == 2);
  CHECK(warnings.warnings() == 1);
}

TEST_CASE("a cache directory writable by group or others is refused", "[cache]") {
  for (unsigned mode : {0777u, 0770u, 0757u}) {
    ScratchDir dir;
    std::string root = dir.sub("cache");
    REQUIRE(::mkdir(root.c_str(), 0700) == 0);
    REQUIRE(::chmod(root.c_str(), mode) == 0);
    WarningCounter warnings;
    auto cache = KernelCache::open(userConfig(root));
    INFO("mode " << std::oct << mode);
    CHECK_FALSE(cache->hasUserLayer());
    CHECK_THAT(cache->degradedReason(), Catch::Contains("writable by group or others") && Catch::Contains(root));
    CHECK(warnings.warnings() == 1);
    REQUIRE(static_cast<bool>(cache->publish(sampleKey("m"), sampleFiles("m"))));
    CHECK(cache->stat().mode == "memory");
    CHECK(modeOf(root) == mode); // not "fixed" behind the user's back
    CHECK(::access((root + "/tmp").c_str(), F_OK) != 0);
  }
}

TEST_CASE("a system layer writable by others is not used", "[cache]") {
  ScratchDir dir;
  std::string system = dir.sub("system");
  CacheKey key = sampleKey("planted");
  REQUIRE(static_cast<bool>(KernelCache::open(userConfig(system))->publish(key, sampleFiles("planted"))));
  REQUIRE(::chmod(system.c_str(), 0777) == 0);
  CacheConfig config = userConfig(dir.sub("user"));
  config.system_dir = system;
  auto cache = KernelCache::open(config);
  CHECK(cache->hasUserLayer());
  CHECK_FALSE(cache->stat().system.available);
  CHECK_THAT(cache->stat().system.unavailable_reason, Catch::Contains("writable by group or others"));
  CHECK(cache->lookup(key.digest) == nullptr);
}

TEST_CASE("with the disk disabled nothing is written and nothing is warned", "[cache]") {
  ScratchDir dir;
  CacheConfig config = userConfig(dir.sub("cache"));
  config.disable_disk = true;
  WarningCounter warnings;
  auto cache = KernelCache::open(config);
  REQUIRE(static_cast<bool>(cache->publish(sampleKey("d"), sampleFiles("d"))));
  CHECK(cache->lookup(sampleKey("d").digest) != nullptr);
  CHECK(cache->stat().mode == "disabled");
  CHECK(warnings.warnings() == 0);
  CHECK(::access(dir.sub("cache").c_str(), F_OK) != 0);
}
