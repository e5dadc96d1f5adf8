// The JIT pipeline without a GPU (NVRTC only): a cold get compiles and publishes, a second JIT on
// the same directory (as a new process would) finds the entry, the in-process memo returns the
// same object, and every input of the compiled bytes (here NVRTC_APPEND_FLAGS) moves the key.
#include "expected_checks.h"

#include "fa4jit/codegen/heuristics.h"
#include "fa4jit/runtime/kernel_jit.h"

#include "llvm/Support/FileSystem.h"

#include <catch2/catch.hpp>

using namespace fa4jit;

namespace {

runtime::RuntimeConfig configIn(const std::string &dir) {
  runtime::RuntimeConfig c;
  c.cache.user_dir = dir;
  return c;
}

std::string freshDir() {
  llvm::SmallString<128> dir;
  REQUIRE_FALSE(llvm::sys::fs::createUniqueDirectory("fa4jit-jit-test", dir));
  return std::string(dir.str());
}

} // namespace

TEST_CASE("cold compile, disk hit in a second JIT, memo hit", "[runtime][jit]") {
  const std::string dir = freshDir();
  const KernelSpec spec = defaultQuantizeSpec(QuantFormat::Nvfp4, 64, Target::Sm90a);
  auto first = runtime::KernelJit::create(configIn(dir));
  REQUIRE_OK(first);
  auto cold = (*first)->get(spec);
  REQUIRE_OK(cold);
  CHECK((*cold)->layer == cache::Layer::Produced);
  CHECK((*cold)->compile_seconds > 0.0);
  CHECK_FALSE((*cold)->cubin.empty());
  auto again = (*first)->get(spec);
  REQUIRE_OK(again);
  CHECK(again->get() == cold->get()); // the memo, not another lookup

  auto second = runtime::KernelJit::create(configIn(dir));
  REQUIRE_OK(second);
  auto hit = (*second)->get(spec);
  REQUIRE_OK(hit);
  CHECK((*hit)->layer == cache::Layer::User);
  CHECK((*hit)->cache_key == (*cold)->cache_key);
  CHECK((*hit)->cubin == (*cold)->cubin);
  CHECK((*hit)->compile_seconds == 0.0);
  llvm::sys::fs::remove_directories(dir);
}

TEST_CASE("NVRTC_APPEND_FLAGS enters the cache key", "[runtime][jit]") {
  const std::string dir = freshDir();
  const KernelSpec spec = defaultQuantizeSpec(QuantFormat::Mxfp4, 64, Target::Sm90a);
  auto plain = runtime::KernelJit::create(configIn(dir));
  REQUIRE_OK(plain);
  auto a = (*plain)->get(spec);
  REQUIRE_OK(a);
  runtime::RuntimeConfig withFlags = configIn(dir);
  withFlags.nvrtc_append_flags = "-DFA4JIT_UNUSED_MACRO=1";
  auto flagged = runtime::KernelJit::create(withFlags);
  REQUIRE_OK(flagged);
  auto b = (*flagged)->get(spec);
  REQUIRE_OK(b);
  CHECK((*b)->cache_key != (*a)->cache_key);
  CHECK((*b)->layer == cache::Layer::Produced); // not served the entry compiled without the flags
  llvm::sys::fs::remove_directories(dir);
}
