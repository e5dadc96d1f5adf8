// N processes (and threads) starting cold on one cache: each kernel is produced exactly once and
// every one of them gets it.
#include "cache_test_util.h"

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace fa4jit::cache;
using namespace fa4jit::cache::test;

namespace {

// The producer appends one line per run, so the file's line count is the number of compiles
// across all processes.
llvm::Expected<EntryFiles> countingProducer(const std::string &counterPath, const std::string &name) {
  int fd = ::open(counterPath.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
  if (fd >= 0) {
    std::string line = std::to_string(::getpid()) + "\n";
    (void)!::write(fd, line.data(), line.size());
    ::close(fd);
  }
  // A compile takes a while; widen the window in which the others arrive.
  ::usleep(200 * 1000);
  return sampleFiles(name);
}

size_t lineCount(const std::string &path) {
  std::string text = readFile(path);
  return size_t(std::count(text.begin(), text.end(), '\n'));
}

} // namespace

TEST_CASE("12 processes racing on a cold cache all succeed and the kernel is compiled once", "[cache]") {
  ScratchDir dir;
  std::string root = dir.sub("cache");
  std::string counter = dir.sub("compiles.txt");
  CacheKey key = sampleKey("race");
  int gate[2];
  REQUIRE(::pipe(gate) == 0);
  constexpr int kProcesses = 12;
  std::vector<pid_t> children;
  for (int i = 0; i < kProcesses; ++i) {
    pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      ::close(gate[1]);
      char c;
      (void)!::read(gate[0], &c, 1); // returns when the parent closes the gate: all start together
      auto cache = KernelCache::open(userConfig(root));
      auto entry = cache->getOrCreate(key, [&] { return countingProducer(counter, "race"); });
      bool ok = entry && (*entry)->files == sampleFiles("race") && cache->hasUserLayer();
      if (!entry)
        llvm::consumeError(entry.takeError());
      ::_exit(ok ? 0 : 1);
    }
    children.push_back(pid);
  }
  ::close(gate[0]);
  ::close(gate[1]);
  int failures = 0;
  for (pid_t pid : children) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    failures += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  CHECK(failures == 0);
  CHECK(lineCount(counter) == 1);
  auto cache = KernelCache::open(userConfig(root));
  CHECK(cache->list().size() == 1);
  CHECK(cache->verify({}).bad.empty());
  CHECK(cache->stat().user.tempDirs == 0);
}

TEST_CASE("8 processes racing on 4 keys compile each key once", "[cache]") {
  ScratchDir dir;
  std::string root = dir.sub("cache");
  std::vector<pid_t> children;
  for (int i = 0; i < 8; ++i) {
    pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      auto cache = KernelCache::open(userConfig(root));
      bool ok = true;
      for (int k = 0; k < 4; ++k) {
        std::string name = "multi" + std::to_string((k + i) % 4);
        auto entry = cache->getOrCreate(sampleKey(name), [&] { return countingProducer(dir.sub(name), name); });
        ok = ok && entry && (*entry)->files == sampleFiles(name);
        if (!entry)
          llvm::consumeError(entry.takeError());
      }
      ::_exit(ok ? 0 : 1);
    }
    children.push_back(pid);
  }
  int failures = 0;
  for (pid_t pid : children) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    failures += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  CHECK(failures == 0);
  for (int k = 0; k < 4; ++k)
    CHECK(lineCount(dir.sub("multi" + std::to_string(k))) == 1);
}

TEST_CASE("threads of one process racing on a key produce it once", "[cache]") {
  ScratchDir dir;
  std::string counter = dir.sub("compiles.txt");
  for (bool disk : {true, false}) {
    CacheConfig config = userConfig(dir.sub(disk ? "cache" : ""));
    config.disableDisk = !disk;
    auto cache = KernelCache::open(config);
    CacheKey key = sampleKey(disk ? "threads-disk" : "threads-memory");
    std::atomic<int> ok{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < 8; ++i)
      threads.emplace_back([&] {
        auto e = cache->getOrCreate(key, [&] { return countingProducer(counter, "threads"); });
        if (e)
          ++ok;
        else
          llvm::consumeError(e.takeError());
      });
    for (auto &t : threads)
      t.join();
    CHECK(ok == 8);
  }
  CHECK(lineCount(counter) == 2);
}
