// Where the library's messages go: fa4jit's own logger, to a host callback when one is installed,
// never through spdlog's default logger (the host's) and never to stdout.
#include "fa4jit/cache/kernel_cache.h"
#include "fa4jit/runtime/fa4jit_c.h"
#include "fa4jit/runtime/logging.h"

#include "../cache/cache_test_util.h"

#include <catch2/catch.hpp>

#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

using namespace fa4jit;
using namespace fa4jit::cache::test;

namespace {

// Counts what reaches spdlog's default logger (the host's) while alive.
struct HostLoggerCounter {
  struct Sink : spdlog::sinks::base_sink<std::mutex> {
    int messages = 0;
    void sink_it_(const spdlog::details::log_msg &) override { ++messages; }
    void flush_() override {}
  };
  std::shared_ptr<Sink> sink = std::make_shared<Sink>();
  HostLoggerCounter() { spdlog::default_logger()->sinks().push_back(sink); }
  ~HostLoggerCounter() {
    auto &sinks = spdlog::default_logger()->sinks();
    sinks.erase(std::remove(sinks.begin(), sinks.end(), sink), sinks.end());
  }
};

// A warning the cache layer logs: a user directory that cannot be created.
void provokeCacheWarning(ScratchDir &dir) {
  writeFile(dir.sub("file"), "not a directory");
  auto cache = fa4jit::cache::KernelCache::open(userConfig(dir.sub("file/cache")));
  CHECK_FALSE(cache->hasUserLayer());
}

} // namespace

TEST_CASE("library warnings reach the host's callback, not spdlog's default logger", "[runtime][logging]") {
  std::vector<std::pair<LogLevel, std::string>> got;
  std::mutex m;
  setLogCallback([&](LogLevel level, const std::string &message) {
    std::lock_guard<std::mutex> lock(m);
    got.emplace_back(level, message);
  });
  const LogLevel before = logLevel();
  setLogLevel(LogLevel::Warn);
  HostLoggerCounter host;
  ScratchDir dir;
  provokeCacheWarning(dir);
  setLogCallback({}); // back to stderr
  setLogLevel(before);
  REQUIRE(got.size() == 1);
  CHECK(got[0].first == LogLevel::Warn);
  CHECK_THAT(got[0].second, Catch::Contains("memory only"));
  CHECK(host.sink->messages == 0);
}

TEST_CASE("the log level filters what the callback receives", "[runtime][logging]") {
  int calls = 0;
  setLogCallback([&](LogLevel, const std::string &) { ++calls; });
  const LogLevel before = logLevel();
  setLogLevel(LogLevel::Error);
  CHECK(logLevel() == LogLevel::Error);
  ScratchDir dir;
  provokeCacheWarning(dir); // a warning: below the level
  setLogCallback({});
  setLogLevel(before);
  CHECK(calls == 0);
}

TEST_CASE("the C API installs a log callback with its user pointer", "[runtime][logging][c-api]") {
  struct Seen {
    int count = 0, level = -1;
    std::string message;
  } seen;
  const LogLevel before = logLevel();
  REQUIRE(fa4jit_set_log_callback(
              [](int level, const char *message, void *user) {
                auto *s = static_cast<Seen *>(user);
                ++s->count, s->level = level, s->message = message;
              },
              3 /* warn */, &seen) == FA4JIT_OK);
  // libfa4jit.so logs through its own logger: an engine of the C API whose cache directory
  // cannot be created warns (before it looks for a GPU, so with or without one).
  ScratchDir dir;
  writeFile(dir.sub("file"), "not a directory");
  const char *old_dir = std::getenv("FA4JIT_CACHE_DIR");
  const std::string saved = old_dir ? old_dir : "";
  ::setenv("FA4JIT_CACHE_DIR", dir.sub("file/cache").c_str(), 1);
  fa4jit_engine *engine = nullptr;
  if (fa4jit_engine_create(0, &engine) == FA4JIT_OK)
    fa4jit_engine_destroy(engine);
  if (old_dir)
    ::setenv("FA4JIT_CACHE_DIR", saved.c_str(), 1);
  else
    ::unsetenv("FA4JIT_CACHE_DIR");
  REQUIRE(fa4jit_set_log_callback(nullptr, int(before), nullptr) == FA4JIT_OK);
  CHECK(seen.count >= 1); // (an engine that opens on a GPU may warn again, from its tuning database)
  CHECK(seen.level == 3);
  CHECK_THAT(seen.message, Catch::Contains("memory only"));
  CHECK(fa4jit_set_log_callback(nullptr, 7, nullptr) == FA4JIT_ERROR);
  CHECK_THAT(std::string(fa4jit_last_error()), Catch::Contains("min_level"));
}
