// The size cap: after a publish the user layer is pruned to the cap, least recently used first,
// where a load counts as a use.
#include "cache_test_util.h"

#include <catch2/catch.hpp>

#include <set>

#include <fcntl.h>
#include <sys/stat.h>

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
  config.max_bytes = 3 * one + one / 2;

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
    CHECK(cache->stat().user.bytes <= config.max_bytes);

    REQUIRE(static_cast<bool>(cache->publish(sampleKey("k4"), sampleFiles("k4", 4000))));
    keys = keysOnDisk(*cache);
    CHECK(keys.count(sampleKey("k2").digest) == 0);
    CHECK(keys.size() == 3);
    CHECK(cache->stat().user.bytes <= config.max_bytes);
  }
}

TEST_CASE("a cap smaller than the working set warns once, when it evicts what this process wrote", "[cache]") {
  ScratchDir dir;
  {
    auto probe = KernelCache::open(userConfig(dir.sub("probe")));
    REQUIRE(static_cast<bool>(probe->publish(sampleKey("p"), sampleFiles("p", 4000))));
  }
  const uint64_t one = entryBytes(dir.sub("probe"), sampleKey("p"));
  CacheConfig config = userConfig(dir.sub("cache"));
  config.max_bytes = one + one / 2; // room for one of the ten
  WarningCounter warnings;
  {
    auto cache = KernelCache::open(config);
    for (int i = 0; i < 10; ++i) {
      const std::string name = "w" + std::to_string(i);
      auto e = cache->getOrCreate(sampleKey(name), [&] { return llvm::Expected<EntryFiles>(sampleFiles(name, 4000)); });
      REQUIRE(static_cast<bool>(e));
    }
  }
  CHECK(warnings.warnings() == 1);
  CHECK_THAT(warnings.last(), Catch::Contains("FA4JIT_CACHE_MAX_BYTES") && Catch::Contains("raise it"));
  // Another process evicting those entries is ordinary LRU, not thrashing: no warning.
  {
    auto cache = KernelCache::open(config);
    REQUIRE(static_cast<bool>(cache->publish(sampleKey("x"), sampleFiles("x", 4000))));
  }
  CHECK(warnings.warnings() == 1);
}

TEST_CASE("prune to an explicit size and clear report what they removed", "[cache]") {
  ScratchDir dir;
  std::string root = dir.sub("cache");
  auto cache = KernelCache::open(userConfig(root));
  for (int i = 0; i < 5; ++i)
    REQUIRE(static_cast<bool>(cache->publish(sampleKey(std::to_string(i)), sampleFiles(std::to_string(i), 2000))));
  uint64_t total = cache->stat().user.bytes;
  PruneReport r = cache->prune({total / 2});
  CHECK(r.entries_before == 5);
  CHECK(r.bytes_before == total);
  CHECK(r.bytes_after <= total / 2);
  CHECK(r.entries_removed == 3);
  CHECK(r.entries_after == 2);
  CHECK(keysOnDisk(*cache).count(sampleKey("4").digest) == 1); // the newest survives
  PruneReport cleared = cache->clear();
  CHECK(cleared.entries_removed == 2);
  CHECK(cache->list().empty());
  CHECK(cache->stat().memory_entries == 0);
  CHECK(cache->lookup(sampleKey("4").digest) == nullptr);
}

namespace {
int64_t lastUseSeconds(const std::string &root, const CacheKey &key) {
  struct stat st {};
  REQUIRE(::stat((entryPath(root, key.digest) + "/last_use").c_str(), &st) == 0);
  return st.st_mtime;
}
void ageLastUse(const std::string &root, const CacheKey &key) {
  const struct timespec old[2] = {{1000000000, 0}, {1000000000, 0}}; // 2001
  REQUIRE(::utimensat(AT_FDCWD, (entryPath(root, key.digest) + "/last_use").c_str(), old, 0) == 0);
}
} // namespace

// A long-lived process hits its kernels in memory; without a refresh their disk last_use would
// age, and another process's prune would evict the hottest entries first.
TEST_CASE("memory hits refresh the disk last_use of user entries, rate-limited", "[cache]") {
  ScratchDir dir;
  const std::string root = dir.sub("cache");
  const CacheKey hot = sampleKey("hot"), cold = sampleKey("cold");
  CacheConfig config = userConfig(root);
  config.last_use_refresh_hits = 3;
  config.last_use_refresh_seconds = 0;
  auto cache = KernelCache::open(config);
  REQUIRE(static_cast<bool>(cache->publish(hot, sampleFiles("hot", 2000))));
  REQUIRE(static_cast<bool>(cache->publish(cold, sampleFiles("cold", 2000))));
  REQUIRE(cache->lookup(hot.digest) != nullptr); // in memory since its publish
  ageLastUse(root, hot);
  ageLastUse(root, cold);
  REQUIRE(cache->lookup(hot.digest) != nullptr);
  CHECK(lastUseSeconds(root, hot) == 1000000000); // two hits: not yet due
  REQUIRE(cache->lookup(hot.digest) != nullptr);
  CHECK(lastUseSeconds(root, hot) > 1000000000 + 3600); // the third: refreshed
  CHECK(lastUseSeconds(root, cold) == 1000000000);
  CHECK(cache->stat().counters.memory_hits >= 3);
  // Pruned to one entry, the hot one survives although both were published alike.
  cache->prune({cache->stat().user.bytes / 2 + 1});
  CHECK(keysOnDisk(*cache).count(hot.digest) == 1);
  CHECK(keysOnDisk(*cache).count(cold.digest) == 0);
  // An entry pruned away is not recreated by a refresh.
  for (int i = 0; i < 6; ++i)
    REQUIRE(cache->lookup(cold.digest) != nullptr); // still in this process's memory
  CHECK(keysOnDisk(*cache).count(cold.digest) == 0);

  // Rate limit: with a minute between refreshes, a second due hit does not touch again; and
  // with refreshing off nothing is touched at all.
  for (const uint32_t hits : {1u, 0u}) {
    ScratchDir d2;
    const std::string r2 = d2.sub("cache");
    CacheConfig c2 = userConfig(r2);
    c2.last_use_refresh_hits = hits;
    c2.last_use_refresh_seconds = 60;
    auto again = KernelCache::open(c2);
    REQUIRE(static_cast<bool>(again->publish(hot, sampleFiles("hot", 2000))));
    ageLastUse(r2, hot);
    for (int i = 0; i < 4; ++i)
      REQUIRE(again->lookup(hot.digest) != nullptr);
    CHECK(lastUseSeconds(r2, hot) == 1000000000); // the publish counts as the last refresh
  }
}
