// Damaged entries are never trusted: verify reports them (exit code material for the CLI), and
// the next getOrCreate warns, removes the entry and compiles again.
#include "cache_test_util.h"

#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

using namespace fa4jit::cache;
using namespace fa4jit::cache::test;

namespace {

struct Damage {
  const char *what;
  void (*apply)(const std::string &entryDir);
};

const Damage kDamages[] = {
    {"a flipped byte in the cubin", [](const std::string &d) { flipByte(d + "/kernel.cubin", 500); }},
    {"a flipped byte at the start of the cubin", [](const std::string &d) { flipByte(d + "/kernel.cubin", 0); }},
    {"a flipped byte in the manifest", [](const std::string &d) { flipByte(d + "/manifest.json", 40); }},
    {"a flipped byte in the manifest's creation time",
     [](const std::string &d) {
       std::string m = readFile(d + "/manifest.json");
       flipByte(d + "/manifest.json", m.find("\"created_unix\":") + 16);
     }},
    {"a truncated cubin",
     [](const std::string &d) { writeFile(d + "/kernel.cubin", readFile(d + "/kernel.cubin").substr(0, 10)); }},
    {"a missing spec file", [](const std::string &d) { ::unlink((d + "/spec.json").c_str()); }},
    {"a missing manifest", [](const std::string &d) { ::unlink((d + "/manifest.json").c_str()); }},
    {"an empty manifest", [](const std::string &d) { writeFile(d + "/manifest.json", ""); }},
    // A FIFO would block a plain open() forever (no writer): it must be damage, not a hang.
    {"a FIFO in place of the cubin",
     [](const std::string &d) {
       ::unlink((d + "/kernel.cubin").c_str());
       REQUIRE(::mkfifo((d + "/kernel.cubin").c_str(), 0600) == 0);
     }},
    {"a FIFO in place of the manifest",
     [](const std::string &d) {
       ::unlink((d + "/manifest.json").c_str());
       REQUIRE(::mkfifo((d + "/manifest.json").c_str(), 0600) == 0);
     }},
};

} // namespace

TEST_CASE("damaged entries are detected by verify and healed by the next getOrCreate", "[cache]") {
  for (const Damage &damage : kDamages) {
    SECTION(damage.what) {
      ScratchDir dir;
      std::string root = dir.sub("cache");
      CacheKey key = sampleKey("victim");
      CacheKey bystander = sampleKey("bystander");
      {
        auto cache = KernelCache::open(userConfig(root));
        REQUIRE(static_cast<bool>(cache->publish(key, sampleFiles("victim"))));
        REQUIRE(static_cast<bool>(cache->publish(bystander, sampleFiles("bystander"))));
        REQUIRE(cache->verify({}).bad.empty());
      }
      damage.apply(entryPath(root, key.digest));

      auto cache = KernelCache::open(userConfig(root));
      VerifyReport report = cache->verify({});
      CHECK(report.checked == 2);
      REQUIRE(report.bad.size() == 1);
      CHECK(report.bad[0].key == key.digest);
      CHECK_FALSE(report.bad[0].problem.empty());
      CHECK_FALSE(report.bad[0].removed);

      WarningCounter warnings;
      int produced = 0;
      auto entry = cache->getOrCreate(key, [&]() -> llvm::Expected<EntryFiles> {
        ++produced;
        return sampleFiles("victim");
      });
      REQUIRE(static_cast<bool>(entry));
      CHECK(produced == 1);
      CHECK((*entry)->files == sampleFiles("victim"));
      CHECK(warnings.warnings() == 1);
      CHECK_THAT(warnings.last(), Catch::Contains("corrupt"));
      CHECK(cache->stat().counters.corrupt_removed == 1);
      CHECK(cache->verify({}).bad.empty());
      EntryPtr healed = KernelCache::open(userConfig(root))->lookup(key.digest);
      REQUIRE(healed);
      CHECK(healed->files == sampleFiles("victim"));
    }
  }
}

TEST_CASE("lookup treats a corrupt entry as a miss and removes it", "[cache]") {
  ScratchDir dir;
  std::string root = dir.sub("cache");
  CacheKey key = sampleKey("lookup");
  REQUIRE(static_cast<bool>(KernelCache::open(userConfig(root))->publish(key, sampleFiles("lookup"))));
  flipByte(entryPath(root, key.digest) + "/kernel.cubin", 3);
  auto cache = KernelCache::open(userConfig(root));
  CHECK(cache->lookup(key.digest) == nullptr);
  CHECK(::access(entryPath(root, key.digest).c_str(), F_OK) != 0);
  CHECK(cache->list().empty());
}

TEST_CASE("verify with removeBad removes only the bad user entries", "[cache]") {
  ScratchDir dir;
  std::string root = dir.sub("cache");
  auto cache = KernelCache::open(userConfig(root));
  REQUIRE(static_cast<bool>(cache->publish(sampleKey("good"), sampleFiles("good"))));
  REQUIRE(static_cast<bool>(cache->publish(sampleKey("bad"), sampleFiles("bad"))));
  flipByte(entryPath(root, sampleKey("bad").digest) + "/kernel.cubin", 7);
  VerifyOptions fix;
  fix.remove_bad = true;
  VerifyReport report = cache->verify(fix);
  REQUIRE(report.bad.size() == 1);
  CHECK(report.bad[0].removed);
  CHECK(cache->verify({}).bad.empty());
  CHECK(cache->list().size() == 1);
  CHECK(cache->list()[0].key == sampleKey("good").digest);
}
