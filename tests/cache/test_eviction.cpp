// The size cap: after a publish the user layer is pruned to the cap, least recently used first,
// where a load counts as a use.
#include "cache_test_util.h"

#include <catch2/catch.hpp>

#include <set>

using namespace fa4jit::cache;
using namespace fa4jit::cache::test;

namespace {
std::set<std::string> keysOnDisk(KernelCache &cache) {
  std::set<std::string> keys;
  for (const EntryInfo &e : cache.list())
    keys.insert(e.key);
  return keys;
}
uint64_t entryBytes(const std::string &root, const CacheKey &key) {
  auto cache = KernelCache::open(userConfig(root));
  for (const EntryInfo &e : cache->list())
    if (e.key == key.digest)
      return e.bytes;
  return 0;
}
} // namespace

TEST_CASE("publishing past the cap evicts the least recently used entries", "[cache]") {
  ScratchDir dir;
  std::string root = dir.sub("cache");
  // Measure one entry, then allow three of them.
  {
    auto probe = KernelCache::open(userConfig(dir.sub("probe")));
    REQUIRE(static_cast<bool>(probe->publish(sampleKey("k0"), sampleFiles("k0", 4000))));
  }
  uint64_t one = entryBytes(dir.sub("probe"), sampleKey("k0"));
  REQUIRE(one > 4000);
  CacheConfig config = userConfig(root);
  config.maxBytes = 3 * one + one / 2;

  {
    auto cache = KernelCache::open(config);
    for (const char *name : {"k0", "k1", "k2"})
      REQUIRE(static_cast<bool>(cache->publish(sampleKey(name), sampleFiles(name, 4000))));
    REQUIRE(keysOnDisk(*cache).size() == 3);
  }
  {
    // Use k0 from disk (a fresh process): now k1 is the least recently used.
    auto cache = KernelCache::open(config);
    REQUIRE(cache->lookup(sampleKey("k0").digest) != nullptr);
    REQUIRE(static_cast<bool>(cache->publish(sampleKey("k3"), sampleFiles("k3", 4000))));
    std::set<std::string> keys = keysOnDisk(*cache);
    CHECK(keys.size() == 3);
    CHECK(keys.count(sampleKey("k1").digest) == 0);
    CHECK(keys.count(sampleKey("k0").digest) == 1);
    CHECK(keys.count(sampleKey("k3").digest) == 1);
    CHECK(cache->stat().user.bytes <= config.maxBytes);

    REQUIRE(static_cast<bool>(cache->publish(sampleKey("k4"), sampleFiles("k4", 4000))));
    keys = keysOnDisk(*cache);
    CHECK(keys.count(sampleKey("k2").digest) == 0);
    CHECK(keys.size() == 3);
    CHECK(cache->stat().user.bytes <= config.maxBytes);
  }
}

TEST_CASE("prune to an explicit size and clear report what they removed", "[cache]") {
  ScratchDir dir;
  std::string root = dir.sub("cache");
  auto cache = KernelCache::open(userConfig(root));
  for (int i = 0; i < 5; ++i)
    REQUIRE(static_cast<bool>(cache->publish(sampleKey(std::to_string(i)), sampleFiles(std::to_string(i), 2000))));
  uint64_t total = cache->stat().user.bytes;
  PruneReport r = cache->prune({total / 2});
  CHECK(r.entriesBefore == 5);
  CHECK(r.bytesBefore == total);
  CHECK(r.bytesAfter <= total / 2);
  CHECK(r.entriesRemoved == 3);
  CHECK(r.entriesAfter == 2);
  CHECK(keysOnDisk(*cache).count(sampleKey("4").digest) == 1); // the newest survives
  PruneReport cleared = cache->clear();
  CHECK(cleared.entriesRemoved == 2);
  CHECK(cache->list().empty());
  CHECK(cache->stat().memoryEntries == 0);
  CHECK(cache->lookup(sampleKey("4").digest) == nullptr);
}
