// Cache keys: every named part changes the digest, the order parts are given in does not, and
// option normalization only merges option lists that compile the same.
#include "fa4jit/cache/cache_key.h"
#include "fa4jit/cache/cache_version.h"
#include "fa4jit/cache/sha256.h"

#include <catch2/catch.hpp>

using namespace fa4jit::cache;

namespace {
CacheKeyBuilder base() {
  return CacheKeyBuilder()
      .source("src")
      .header("fa4jit/attention/x.cuh", "header bytes")
      .nvrtcVersion(13, 0, "build1")
      .target("sm_100a")
      .options({"-std=c++17"});
}
} // namespace

TEST_CASE("sha256Hex matches the FIPS 180-2 test vector", "[cache]") {
  CHECK(sha256Hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(isSha256Hex(sha256Hex("")));
  CHECK_FALSE(isSha256Hex("ABC"));
}

TEST_CASE("the key digest is deterministic and independent of the order parts are added", "[cache]") {
  CacheKey a = base().build();
  CacheKey b = CacheKeyBuilder()
                   .options({"-std=c++17"})
                   .target("sm_100a")
                   .nvrtcVersion(13, 0, "build1")
                   .header("fa4jit/attention/x.cuh", "header bytes")
                   .source("src")
                   .build();
  CHECK(isSha256Hex(a.digest));
  CHECK(a.digest == b.digest);
  CHECK(a.digest == base().build().digest);
}

TEST_CASE("every part changes the digest", "[cache]") {
  std::string ref = base().build().digest;
  CHECK(CacheKeyBuilder().source("src2").header("fa4jit/attention/x.cuh", "header bytes").nvrtcVersion(13, 0, "build1").target("sm_100a").options({"-std=c++17"}).build().digest != ref);
  CHECK(CacheKeyBuilder().source("src").header("fa4jit/attention/x.cuh", "header bytes!").nvrtcVersion(13, 0, "build1").target("sm_100a").options({"-std=c++17"}).build().digest != ref);
  CHECK(CacheKeyBuilder().source("src").header("fa4jit/attention/x.cuh", "header bytes").nvrtcVersion(13, 0, "build2").target("sm_100a").options({"-std=c++17"}).build().digest != ref);
  CHECK(CacheKeyBuilder().source("src").header("fa4jit/attention/x.cuh", "header bytes").nvrtcVersion(13, 1, "build1").target("sm_100a").options({"-std=c++17"}).build().digest != ref);
  CHECK(CacheKeyBuilder().source("src").header("fa4jit/attention/x.cuh", "header bytes").nvrtcVersion(13, 0, "build1").target("sm_103a").options({"-std=c++17"}).build().digest != ref);
  CHECK(CacheKeyBuilder().source("src").header("fa4jit/attention/x.cuh", "header bytes").nvrtcVersion(13, 0, "build1").target("sm_100a").options({"-std=c++20"}).build().digest != ref);
  CHECK(base().part("codegen_env", "X=1").build().digest != ref);
}

TEST_CASE("length prefixes keep adjacent parts apart", "[cache]") {
  CHECK(CacheKeyBuilder().part("a", "bc").build().digest != CacheKeyBuilder().part("ab", "c").build().digest);
}

TEST_CASE("the schema version enters the key and short parts are listed verbatim", "[cache]") {
  CacheKey k = base().build();
  bool sawSchema = false, sawTarget = false, sawSource = false;
  for (const auto &[name, value] : k.parts) {
    sawSchema |= name == "schema" && value == std::to_string(schemaVersion());
    sawTarget |= name == "target" && value == "sm_100a";
    if (name == "header:fa4jit/attention/x.cuh")
      CHECK(value == sha256Hex("header bytes"));
    sawSource |= name == "source" && value == "src";
  }
  CHECK(sawSchema);
  CHECK(sawTarget);
  CHECK(sawSource);
  std::string longSource(1000, 'x');
  for (const auto &[name, value] : CacheKeyBuilder().source(longSource).build().parts)
    if (name == "source")
      CHECK(value == "sha256:" + sha256Hex(longSource));
}

TEST_CASE("normalizeOptions binds values, sorts by name and keeps order within a name", "[cache]") {
  using V = std::vector<std::string>;
  CHECK(normalizeOptions({" -std=c++17 ", "", "-arch", "sm_100a"}) == V{"-arch sm_100a", "-std=c++17"});
  CHECK(normalizeOptions({"-arch", "sm_100a", "-std=c++17"}) == normalizeOptions({"-std=c++17", "-arch", "sm_100a"}));
  // The last -D of a macro wins in NVRTC, so these must stay distinct.
  CHECK(normalizeOptions({"-DX=1", "-DX=2"}) != normalizeOptions({"-DX=2", "-DX=1"}));
  CHECK(normalizeOptions({"-DX=1", "-DY=2"}) == normalizeOptions({"-DY=2", "-DX=1"}));
  CHECK(normalizeOptions({"-lineinfo", "-lineinfo"}) == V{"-lineinfo"});
  CHECK(CacheKeyBuilder().options({"-DX=1", "-DX=2"}).build().digest !=
        CacheKeyBuilder().options({"-DX=2", "-DX=1"}).build().digest);
}
