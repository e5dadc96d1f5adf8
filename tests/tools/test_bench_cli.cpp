// `fa4jit bench --variants` names, as a user types them: every tile field's bench name from the
// field table is accepted before any GPU work, and an unknown one is an error listing them; the
// same for `--backward`'s head dims, variants and flags.
#include "fa4jit/codegen/spec_fields.h"

#include "cli_run.h"

#include <catch2/catch.hpp>

#include <string>

using fa4jit::testing::runFa4jit;
using fa4jit::testing::Stderr;

namespace {
// A grid that is cheap where a GPU is present; without one the command stops at "needs a GPU".
const std::string kTinyGrid = "bench --routes bf16 --head-dims 64 --seqlens 256 --causal 0 --reps 1 ";
} // namespace

TEST_CASE("bench rejects an unknown variant, naming it and the field table's names", "[tools][bench]") {
  const auto r = runFa4jit(kTinyGrid + "--variants default,keys128+nope", Stderr::Merge);
  CHECK(r.status != 0);
  CHECK(r.out.find("unknown bench variant 'nope'") != std::string::npos);
  for (const fa4jit::TileField &f : fa4jit::tileFields())
    for (const char *name : f.bench.names)
      if (name) {
        INFO(name);
        CHECK(r.out.find(name) != std::string::npos);
      }
}

TEST_CASE("bench accepts every tile field's bench names and the other variant kinds", "[tools][bench]") {
  std::string variants = "default,slack3,affine,skip-pv";
  for (const fa4jit::TileField &f : fa4jit::tileFields()) {
    for (const char *name : f.bench.names)
      if (name)
        variants += std::string(",") + name;
    if (f.bench.prefix)
      variants += "," + std::string(f.bench.prefix) + std::to_string(f.bench.lo) + "+" + f.bench.prefix +
                  std::to_string(f.bench.hi);
  }
  const auto r = runFa4jit(kTinyGrid + "--variants " + variants, Stderr::Merge);
  INFO(r.out);
  CHECK(r.out.find("unknown bench variant") == std::string::npos);
  CHECK((r.status == 0 || r.out.find("needs a GPU") != std::string::npos));
}

TEST_CASE("bench --backward checks its head dims, variants and flags before any GPU work", "[tools][bench]") {
  const std::string grid = "bench --backward --seqlen 256 --causal 1 --reps 1 ";
  auto r = runFa4jit(grid + "--head-dim 64,256", Stderr::Merge);
  CHECK(r.status == 2);
  CHECK(r.out.find("head dim 256 has no backward kernel") != std::string::npos);
  r = runFa4jit(grid + "--head-dim 64 --variants default,nope", Stderr::Merge);
  CHECK(r.status == 2);
  CHECK(r.out.find("unknown variant 'nope'") != std::string::npos);
  r = runFa4jit(grid + "--head-dim 64 --variants tile32x128", Stderr::Merge);
  CHECK(r.status == 2);
  CHECK(r.out.find("unknown variant 'tile32x128'") != std::string::npos);
  r = runFa4jit(grid + "--head-dim 64 --route directp", Stderr::Merge);
  CHECK(r.status == 2);
  CHECK(r.out.find("no --route") != std::string::npos);
  r = runFa4jit(grid + "--head-dim 64,128 --variants default,deterministic,mxfp4,saved-nvfp4,mma-sync,wgmma,tile32x128x8",
                Stderr::Merge);
  INFO(r.out);
  CHECK(r.out.find("unknown variant") == std::string::npos);
  CHECK((r.status == 0 || r.out.find("needs a GPU") != std::string::npos));
}
