// Publish and lookup: the round trip, the on-disk layout and its permissions, the memory layer,
// and what is never cached.
#include "cache_test_util.h"

#include "fa4jit/cache/manifest.h"

#include <catch2/catch.hpp>

#include <chrono>

using namespace fa4jit::cache;
using namespace fa4jit::cache::test;

TEST_CASE("an entry published by one cache is found, intact, by a fresh one", "[cache]") {
  ScratchDir dir;
  std::string root = dir.sub("cache");
  CacheKey key = sampleKey("roundtrip");
  int produced = 0;
  {
    auto cache = KernelCache::open(userConfig(root));
    REQUIRE(cache->hasUserLayer());
    auto entry = cache->getOrCreate(key, [&]() -> llvm::Expected<EntryFiles> {
      ++produced;
      return sampleFiles("roundtrip");
    });
    REQUIRE(static_cast<bool>(entry));
    CHECK((*entry)->layer == Layer::Produced);
    CHECK(*(*entry)->file("kernel.cubin") == sampleFiles("roundtrip").at("kernel.cubin"));
  }
  auto fresh = KernelCache::open(userConfig(root));
  EntryPtr hit = fresh->lookup(key.digest);
  REQUIRE(hit);
  CHECK(hit->layer == Layer::User);
  CHECK(hit->files == sampleFiles("roundtrip"));
  auto again = fresh->getOrCreate(key, [&]() -> llvm::Expected<EntryFiles> {
    ++produced;
    return sampleFiles("roundtrip");
  });
  REQUIRE(static_cast<bool>(again));
  CHECK(produced == 1);
  CacheStats st = fresh->stat();
  CHECK(st.counters.user_hits == 1);
  CHECK(st.counters.memory_hits == 1);
  CHECK(st.counters.produced == 0);
}

TEST_CASE("the on-disk layout is <root>/<key[0:2]>/<key>/ with a manifest, and private", "[cache]") {
  ScratchDir dir;
  std::string root = dir.sub("a/b/cache");
  auto cache = KernelCache::open(userConfig(root));
  CacheKey key = sampleKey("layout");
  REQUIRE(static_cast<bool>(cache->publish(key, sampleFiles("layout"))));
  std::string entry = entryPath(root, key.digest);
  CHECK(modeOf(root) == 0700);
  CHECK(modeOf(dir.sub("a")) == 0700);
  CHECK(modeOf(root + "/" + key.digest.substr(0, 2)) == 0700);
  CHECK(modeOf(entry) == 0700);
  CHECK(modeOf(entry + "/kernel.cubin") == 0600);
  llvm::Expected<Manifest> manifest = parseManifest(readFile(entry + "/manifest.json"));
  REQUIRE(static_cast<bool>(manifest));
  CHECK(manifest->key == key.digest);
  CHECK(manifest->files.size() == 3);
  CHECK(manifest->writer_version == "0.5.0");
  CHECK(readFile(entry + "/spec.json") == sampleFiles("layout").at("spec.json"));
  std::vector<EntryInfo> ls = cache->list();
  REQUIRE(ls.size() == 1);
  CHECK(ls[0].key == key.digest);
  CHECK(ls[0].files.size() == 3);
  CHECK(ls[0].problem.empty());
}

TEST_CASE("a producer error is returned and nothing is cached", "[cache]") {
  ScratchDir dir;
  auto cache = KernelCache::open(userConfig(dir.sub("cache")));
  CacheKey key = sampleKey("fails");
  auto failed = cache->getOrCreate(key, []() -> llvm::Expected<EntryFiles> {
    return llvm::createStringError(std::errc::invalid_argument, "nvrtc said no");
  });
  REQUIRE_FALSE(static_cast<bool>(failed));
  CHECK(llvm::toString(failed.takeError()) == "nvrtc said no");
  CHECK(cache->lookup(key.digest) == nullptr);
  CHECK(cache->list().empty());
}

TEST_CASE("file names that could escape the entry or clash with the cache's own are refused", "[cache]") {
  ScratchDir dir;
  auto cache = KernelCache::open(userConfig(dir.sub("cache")));
  for (const char *bad : {"../x", "manifest.json", "last_use", ".hidden", "a/b", ""}) {
    auto r = cache->publish(sampleKey(bad), EntryFiles{{bad, "x"}});
    INFO(bad);
    REQUIRE_FALSE(static_cast<bool>(r));
    llvm::consumeError(r.takeError());
  }
  CHECK(cache->list().empty());
}

TEST_CASE("an in-process hit costs at most 5 microseconds", "[cache]") {
  ScratchDir dir;
  auto cache = KernelCache::open(userConfig(dir.sub("cache")));
  CacheKey key = sampleKey("hot");
  REQUIRE(static_cast<bool>(cache->publish(key, sampleFiles("hot"))));
  // The best of several batches: other work on a shared machine only slows some of them.
  double best = 1e9;
  for (int batch = 0; batch < 20; ++batch) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 1000; ++i) {
      auto e = cache->getOrCreate(key, []() -> llvm::Expected<EntryFiles> { return EntryFiles{}; });
      REQUIRE(static_cast<bool>(e));
    }
    double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / 1000;
    best = std::min(best, us);
  }
  INFO("best per-hit time " << best << " us");
  CHECK(best <= 5.0);
  CHECK(cache->stat().counters.produced == 0);
}

TEST_CASE("the memory layer keeps its byte cap", "[cache]") {
  CacheConfig config;
  config.disable_disk = true;
  config.memory_max_bytes = 5000;
  auto cache = KernelCache::open(config);
  for (int i = 0; i < 10; ++i)
    REQUIRE(static_cast<bool>(cache->publish(sampleKey(std::to_string(i)), sampleFiles(std::to_string(i), 1000))));
  CacheStats st = cache->stat();
  CHECK(st.mode == "disabled");
  CHECK(st.memory_bytes <= 5000);
  CHECK(st.memory_entries >= 1);
  CHECK(cache->lookup(sampleKey("9").digest) != nullptr); // the newest stays
  CHECK(cache->lookup(sampleKey("0").digest) == nullptr);
}
