// `fa4jit compile` and `fa4jit tune` refuse what would hang or pass for success: thread counts
// that wrap, lists that name nothing, a causal flag other than 0/1, a bundle directory that
// cannot hold a cache. Each is a clear error and a non-zero exit, before any compile.
#include "cli_run.h"

#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

using fa4jit::testing::runFa4jit;
using fa4jit::testing::Stderr;

namespace {
const std::string kSmall = "compile --family quantize --target sm_90a --head-dim 64 ";
} // namespace

TEST_CASE("compile and tune refuse thread counts that wrap or overflow", "[cli][compile]") {
  for (const char *n : {"-1", "2147483648", "5000"}) {
    INFO(n);
    const auto r = runFa4jit(kSmall + "--threads " + n, Stderr::Merge);
    CHECK(r.status != 0);
    CHECK(r.out.find("--threads") != std::string::npos);
  }
  const auto t = runFa4jit("tune --threads -1", Stderr::Merge);
  CHECK(t.status != 0);
  CHECK(t.out.find("--threads -1") != std::string::npos);
}

TEST_CASE("compile refuses empty lists and a causal flag other than 0 or 1", "[cli][compile]") {
  for (const char *args : {"compile --head-dim ,,, --family quantize", "compile --target \"\" --family quantize",
                           "compile --route , --family attention"}) {
    INFO(args);
    const auto r = runFa4jit(args, Stderr::Merge);
    CHECK(r.status != 0);
    CHECK(r.out.find("compiled") == std::string::npos);
  }
  const auto c = runFa4jit("compile --causal 2 --family attention --route bf16 --head-dim 64", Stderr::Merge);
  CHECK(c.status != 0);
  CHECK(c.out.find("--causal 2") != std::string::npos);
}

TEST_CASE("compile --bundle into a directory that cannot hold a cache fails", "[cli][compile]") {
  // /proc/self is not writable: the cache falls back to memory, which a bundle must not.
  const auto r = runFa4jit(kSmall + "--bundle /proc/self/fa4jit-bundle", Stderr::Merge);
  CHECK(r.status != 0);
  CHECK(r.out.find("--bundle /proc/self/fa4jit-bundle") != std::string::npos);
}

TEST_CASE("tune --show exits non-zero on a tuning file it cannot use, naming it", "[cli][tune]") {
  char pattern[] = "/tmp/fa4jit-tune-show.XXXXXX";
  REQUIRE(::mkdtemp(pattern) != nullptr);
  const std::string root = pattern, tuning = root + "/tuning";
  REQUIRE(::mkdir(tuning.c_str(), 0700) == 0);
  ::setenv("FA4JIT_CACHE_DIR", root.c_str(), 1);
  const auto empty = runFa4jit("tune --show", Stderr::Merge);
  CHECK(empty.status == 0);
  std::FILE *f = std::fopen((tuning + "/nvidia-h200-132sm.json").c_str(), "w");
  REQUIRE(f != nullptr);
  std::fputs("{\"schema\": 1, \"records\": {", f); // (cut short)
  std::fclose(f);
  const auto bad = runFa4jit("tune --show", Stderr::Merge);
  CHECK(bad.status == 1);
  CHECK(bad.out.find("nvidia-h200-132sm.json") != std::string::npos);
  const auto json = runFa4jit("tune --show --json", Stderr::Merge);
  CHECK(json.status == 1);
  ::unsetenv("FA4JIT_CACHE_DIR");
  std::remove((tuning + "/nvidia-h200-132sm.json").c_str());
  ::rmdir(tuning.c_str());
  ::rmdir(root.c_str());
}

TEST_CASE("fa4jit --version prints the library version and exits 0", "[cli]") {
  const auto r = runFa4jit("--version", Stderr::Merge);
  CHECK(r.status == 0);
  CHECK(r.out.rfind("fa4jit ", 0) == 0);
  CHECK(r.out.find('.') != std::string::npos);
}

TEST_CASE("progress is drawn on a terminal only: a pipe gets the report alone", "[cli][compile]") {
  char pattern[] = "/tmp/fa4jit-progress.XXXXXX";
  REQUIRE(::mkdtemp(pattern) != nullptr);
  ::setenv("FA4JIT_CACHE_DIR", pattern, 1);
  const auto r = runFa4jit(kSmall, Stderr::Merge);
  ::unsetenv("FA4JIT_CACHE_DIR");
  std::system(("rm -rf '" + std::string(pattern) + "'").c_str());
  INFO(r.out);
  CHECK(r.status == 0);
  CHECK(r.out.find("fa4jit_quant_nvfp4_d64_") != std::string::npos); // (the report)
  CHECK(r.out.find('\r') == std::string::npos);
  CHECK(r.out.find("compiled ") == std::string::npos); // (was printed every 16 kernels to a pipe)
}
