// A writer SIGKILLed in the middle of a publish leaves no visible entry; the next getOrCreate
// compiles and publishes normally, and prune removes the dead writer's temporary directory.
#include "cache_test_util.h"

#include <catch2/catch.hpp>

#include "llvm/Support/FileSystem.h"

#include <csignal>
#include <sys/wait.h>
#include <unistd.h>

using namespace fa4jit::cache;
using namespace fa4jit::cache::test;

TEST_CASE("a writer killed mid-publish leaves no partial entry", "[cache]") {
  auto stage = GENERATE(PublishStage::FirstFileWritten, PublishStage::BeforeRename);
  ScratchDir dir;
  std::string root = dir.sub("cache");
  CacheKey key = sampleKey("killed");
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(ready[0]);
    auto cache = KernelCache::open(userConfig(root));
    cache->setPublishHookForTesting([&](PublishStage s) {
      if (s != stage)
        return 0;
      (void)!::write(ready[1], "x", 1);
      for (;;)
        ::pause(); // the parent kills us here
    });
    auto entry = cache->getOrCreate(key, [] { return llvm::Expected<EntryFiles>(sampleFiles("killed")); });
    ::_exit(entry ? 3 : 4); // reaching this means the hook never fired
  }
  ::close(ready[1]);
  char c = 0;
  REQUIRE(::read(ready[0], &c, 1) == 1);
  ::close(ready[0]);
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  REQUIRE(WIFSIGNALED(status));

  auto cache = KernelCache::open(userConfig(root));
  CHECK(cache->lookup(key.digest) == nullptr);
  CHECK(cache->list().empty());
  CHECK(::access(entryPath(root, key.digest).c_str(), F_OK) != 0);
  CHECK(cache->stat().user.temp_dirs == 1);
  CHECK(cache->verify({}).bad.empty());

  // The dead writer's lock died with it: prune may clean up, and a new compile goes through.
  PruneReport pruned = cache->prune({uint64_t(1) << 30});
  CHECK(pruned.temp_dirs_removed == 1);
  CHECK(cache->stat().user.temp_dirs == 0);
  // The key has no entry, so its lock file (the dead writer's) goes with the temp dir: a
  // concurrent prune of an entry leaves a renamed temp dir whose lock file it had removed, and a
  // lock file left behind there would never be removed by any entry's removal.
  std::error_code ec;
  int locks = 0;
  for (llvm::sys::fs::directory_iterator it(root + "/locks", ec), end; !ec && it != end; it.increment(ec))
    ++locks;
  CHECK(locks == 0);
  int produced = 0;
  auto entry = cache->getOrCreate(key, [&]() -> llvm::Expected<EntryFiles> {
    ++produced;
    return sampleFiles("killed");
  });
  REQUIRE(static_cast<bool>(entry));
  CHECK(produced == 1);
  CHECK(KernelCache::open(userConfig(root))->lookup(key.digest) != nullptr);
}

TEST_CASE("a publish while another writer holds the key's temp dir does not remove it", "[cache]") {
  ScratchDir dir;
  std::string root = dir.sub("cache");
  CacheKey key = sampleKey("busy");
  int ready[2], release[2];
  REQUIRE(::pipe(ready) == 0);
  REQUIRE(::pipe(release) == 0);
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    auto cache = KernelCache::open(userConfig(root));
    cache->setPublishHookForTesting([&](PublishStage s) {
      if (s != PublishStage::BeforeRename)
        return 0;
      (void)!::write(ready[1], "x", 1);
      char b;
      (void)!::read(release[0], &b, 1);
      return 0;
    });
    auto entry = cache->getOrCreate(key, [] { return llvm::Expected<EntryFiles>(sampleFiles("busy")); });
    ::_exit(entry ? 0 : 1);
  }
  char c = 0;
  REQUIRE(::read(ready[0], &c, 1) == 1);
  auto cache = KernelCache::open(userConfig(root));
  CHECK(cache->prune({0}).temp_dirs_removed == 0); // its writer is alive and holds the lock
  REQUIRE(::write(release[1], "x", 1) == 1);
  int status = 0;
  ::waitpid(pid, &status, 0);
  CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
  CHECK(cache->lookup(key.digest) != nullptr);
}
