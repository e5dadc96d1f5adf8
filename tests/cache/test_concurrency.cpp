// N processes (and threads) starting cold on one cache: each kernel is produced exactly once and
// every one of them gets it.
#include "cache_test_util.h"

#include <catch2/catch.hpp>

#include "llvm/Support/FileSystem.h"

#include <chrono>
#include <fcntl.h>
#include <functional>
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

// Forks n children; child i runs child(i) and exits 0 when it returns true. The parent runs
// `started` once all are forked (say, to open a start gate), then waits for them all. Returns how
// many failed.
int runChildren(int n, const std::function<bool(int)> &child, const std::function<void()> &started = {}) {
  std::vector<pid_t> children;
  for (int i = 0; i < n; ++i) {
    pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0)
      ::_exit(child(i) ? 0 : 1);
    children.push_back(pid);
  }
  if (started)
    started();
  int failures = 0;
  for (pid_t pid : children) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    failures += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  return failures;
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
  const int failures = runChildren(
      kProcesses,
      [&](int) {
        ::close(gate[1]);
        char c;
        (void)!::read(gate[0], &c, 1); // returns when the parent closes the gate: all start together
        auto cache = KernelCache::open(userConfig(root));
        auto entry = cache->getOrCreate(key, [&] { return countingProducer(counter, "race"); });
        bool ok = entry && (*entry)->files == sampleFiles("race") && cache->hasUserLayer();
        if (!entry)
          llvm::consumeError(entry.takeError());
        return ok;
      },
      [&] {
        ::close(gate[0]);
        ::close(gate[1]);
      });
  CHECK(failures == 0);
  CHECK(lineCount(counter) == 1);
  auto cache = KernelCache::open(userConfig(root));
  CHECK(cache->list().size() == 1);
  CHECK(cache->verify({}).bad.empty());
  CHECK(cache->stat().user.temp_dirs == 0);
}

TEST_CASE("8 processes racing on 4 keys compile each key once", "[cache]") {
  ScratchDir dir;
  std::string root = dir.sub("cache");
  const int failures = runChildren(8, [&](int i) {
    auto cache = KernelCache::open(userConfig(root));
    bool ok = true;
    for (int k = 0; k < 4; ++k) {
      std::string name = "multi" + std::to_string((k + i) % 4);
      auto entry = cache->getOrCreate(sampleKey(name), [&] { return countingProducer(dir.sub(name), name); });
      ok = ok && entry && (*entry)->files == sampleFiles(name);
      if (!entry)
        llvm::consumeError(entry.takeError());
    }
    return ok;
  });
  CHECK(failures == 0);
  for (int k = 0; k < 4; ++k)
    CHECK(lineCount(dir.sub("multi" + std::to_string(k))) == 1);
}

TEST_CASE("threads of one process racing on a key produce it once", "[cache]") {
  ScratchDir dir;
  std::string counter = dir.sub("compiles.txt");
  for (bool disk : {true, false}) {
    CacheConfig config = userConfig(dir.sub(disk ? "cache" : ""));
    config.disable_disk = !disk;
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

// Prune removes an entry's lock file with it (so locks/ does not grow without bound). Producers
// racing a pruner that empties the cache again and again must still never produce one key in two
// processes at once: a waiter that gets the flock of a file its holder unlinked starts over on the
// path's new file (key_lock.h). Each producer proves its exclusivity with an O_EXCL marker file.
TEST_CASE("producers racing a pruner that removes lock files never overlap on a key", "[cache]") {
  ScratchDir dir;
  const std::string root = dir.sub("cache");
  CacheConfig config = userConfig(root);
  config.memory_max_bytes = 0; // every lookup goes to the disk
  const std::string violations = dir.sub("violations.txt");
  auto exclusiveProducer = [&](const std::string &name) -> llvm::Expected<EntryFiles> {
    const std::string marker = dir.sub("inside-" + name);
    const int fd = ::open(marker.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (fd < 0) {
      const int v = ::open(violations.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
      if (v >= 0) {
        (void)!::write(v, "x\n", 2);
        ::close(v);
      }
    } else {
      ::close(fd);
    }
    ::usleep(2000);
    if (fd >= 0)
      ::unlink(marker.c_str());
    return sampleFiles(name);
  };
  const int failures = runChildren(8, [&](int i) {
    auto cache = KernelCache::open(config);
    bool ok = true;
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(1500);
    for (int n = 0; std::chrono::steady_clock::now() < until; ++n) {
      if (i < 2) { // the pruners: empty the disk layer, lock files included
        cache->prune({0});
        continue;
      }
      const std::string name = "churn" + std::to_string(n % 2);
      auto entry = cache->getOrCreate(sampleKey(name), [&] { return exclusiveProducer(name); });
      ok = ok && entry && (*entry)->files == sampleFiles(name);
      if (!entry)
        llvm::consumeError(entry.takeError());
    }
    return ok;
  });
  CHECK(failures == 0);
  CHECK(lineCount(violations) == 0);
  // A final prune leaves no lock file behind for the entries it removed.
  auto cache = KernelCache::open(config);
  cache->prune({0});
  std::error_code ec;
  int locks = 0;
  for (llvm::sys::fs::directory_iterator it(root + "/locks", ec), end; !ec && it != end; it.increment(ec))
    ++locks;
  CHECK(locks == 0);
}
