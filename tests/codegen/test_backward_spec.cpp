// The attention backward's spec: canonical JSON round trip, what canonicalize keeps of the
// forward, the validator's rules (each names its field), and the emitted entry points.
#include "fa4jit/codegen/emitter.h"
#include "fa4jit/codegen/heuristics.h"
#include "fa4jit/codegen/spec_io.h"
#include "fa4jit/codegen/spec_validate.h"

#include <catch2/catch.hpp>

#include <string>

using namespace fa4jit;

namespace {

std::string violations(const KernelSpec &s) {
  std::string all;
  for (const std::string &v : specViolations(s))
    all += v + "\n";
  return all;
}

} // namespace

TEST_CASE("backward spec: JSON round trip and canonical forward fields", "[codegen][backward]") {
  KernelSpec s = defaultBackwardSpec(64, true, 0.125f, Target::Sm90a);
  s.backward.pv = BackwardPvFormat::Mxfp4;
  s.backward.qk = BackwardQkOperands::SavedNvfp4;
  s.backward.deterministic = true;
  s.backward.tile = TileShape{32, 64, 4};
  auto parsed = parseSpec(toJson(s));
  REQUIRE(static_cast<bool>(parsed));
  CHECK(specsEqual(*parsed, canonicalize(s)));
  CHECK(toJson(*parsed) == toJson(s));
  CHECK(kernelName(*parsed).rfind("fa4jit_attn_bwd_mxfp4_d64_c1_", 0) == 0);

  // Forward fields the backward does not read do not change the kernel.
  KernelSpec other = s;
  other.backward.forward.classifier.kind = ClassifierKind::Affine;
  other.backward.forward.tile.shape.block_m = 192;
  other.backward.forward.operands.p_offset_log2 = 3;
  CHECK(specHash(other) == specHash(s));
  // The ones it reads do.
  other = s;
  other.backward.forward.softmax_scale = 0.25f;
  CHECK(specHash(other) != specHash(s));
  other = s;
  other.backward.forward.operands.qk_widen_shift = 4;
  CHECK(specHash(other) != specHash(s));
  other = s;
  other.backward.deterministic = false;
  CHECK(specHash(other) != specHash(s));
  other = s;
  other.backward.mma = BackwardMma::MmaSync;
  CHECK(specHash(other) != specHash(s));
  CHECK_THAT(toJson(other), Catch::Contains("\"mma\":\"mma-sync\""));
  auto mma_sync = parseSpec(toJson(other));
  REQUIRE(static_cast<bool>(mma_sync));
  CHECK(mma_sync->backward.mma == BackwardMma::MmaSync);
}

TEST_CASE("backward spec: parse errors name the key", "[codegen][backward]") {
  const std::string good = toJson(defaultBackwardSpec(128, false, 0.0f, Target::Sm90a));
  std::string bad = good;
  bad.replace(bad.find("\"e4m3\""), 6, "\"fp6\"");
  auto e = parseSpec(bad);
  REQUIRE_FALSE(static_cast<bool>(e));
  CHECK_THAT(llvm::toString(e.takeError()), Catch::Contains("backward P/V format 'fp6'"));
  std::string mixed = good;
  mixed.insert(1, "\"attention\":{},");
  auto m = parseSpec(mixed);
  REQUIRE_FALSE(static_cast<bool>(m));
  CHECK_THAT(llvm::toString(m.takeError()), Catch::Contains("not allowed in a spec of family 'attention-backward'"));
}

TEST_CASE("backward spec: the rules", "[codegen][backward]") {
  CHECK(violations(defaultBackwardSpec(64, false, 0.0f, Target::Sm90a)).empty());
  CHECK(violations(defaultBackwardSpec(128, true, 0.0f, Target::Sm90a)).empty());
  // The mma.sync main pass's, from its own tiles.
  KernelSpec d64 = defaultBackwardSpec(64, false, 0.0f, Target::Sm90a);
  d64.backward.mma = BackwardMma::MmaSync;
  d64.backward.tile = TileShape{64, 64, 4};
  KernelSpec d128 = defaultBackwardSpec(128, false, 0.0f, Target::Sm90a);
  d128.backward.mma = BackwardMma::MmaSync;
  d128.backward.tile = TileShape{32, 64, 4};
  CHECK(violations(d64).empty());
  CHECK(violations(d128).empty());

  KernelSpec s = d64;
  s.target = Target::Sm100a;
  CHECK_THAT(violations(s), Catch::Contains("target: sm_100a"));
  s = d64;
  s.backward.forward.head_dim = 256;
  CHECK_THAT(violations(s), Catch::Contains("backward.head_dim: 256"));
  s = d64;
  s.backward.forward.operands.qk_widening = Widening::Bf16;
  CHECK_THAT(violations(s), Catch::Contains("backward.qk_widening"));
  s = d64;
  s.backward.p_offset_log2 = 9;
  CHECK_THAT(violations(s), Catch::Contains("backward.p_offset_log2: 9"));
  s = d64;
  s.backward.tile.block_n = 96;
  CHECK_THAT(violations(s), Catch::Contains("backward.block_n: 96 must be 16 * warps (64)"));
  s = d64;
  s.backward.tile = TileShape{64, 32, 2};
  CHECK_THAT(violations(s), Catch::Contains("backward.block_m: 64: dQ = dS K"));
  s = d64;
  s.backward.tile = TileShape{16, 64, 4};
  CHECK_THAT(violations(s), Catch::Contains("head_dim 64 steps 32 or 64 queries"));
  s = d128;
  s.backward.tile = TileShape{64, 64, 4};
  CHECK_THAT(violations(s), Catch::Contains("head_dim 128 holds 128 accumulator registers"));
  s.backward.tile = TileShape{32, 32, 2};
  CHECK_THAT(violations(s), Catch::Contains("head_dim 128 holds 128 accumulator registers"));
  s = d128;
  s.backward.tile = TileShape{16, 64, 4};
  s.backward.pv = BackwardPvFormat::Mxfp4;
  CHECK_THAT(violations(s), Catch::Contains("mxfp4 P blocks 32 queries"));
  s.backward.tile = TileShape{32, 64, 4};
  CHECK(violations(s).empty());
  s = d128;
  s.backward.tile = TileShape{16, 128, 8};
  CHECK(violations(s).empty());
  s.backward.tile = TileShape{16, 32, 2};
  CHECK(violations(s).empty());
}

TEST_CASE("backward spec: the wgmma main pass's rules", "[codegen][backward]") {
  KernelSpec s = defaultBackwardSpec(128, false, 0.0f, Target::Sm90a);
  s.backward.mma = BackwardMma::Wgmma;
  for (TileShape t : {TileShape{32, 64, 4}, TileShape{64, 64, 4}, TileShape{32, 128, 8}, TileShape{64, 128, 8}}) {
    s.backward.tile = t;
    CHECK(violations(s).empty());
  }
  s.backward.tile = TileShape{16, 64, 4};
  CHECK_THAT(violations(s), Catch::Contains("backward.block_m: 16 is not 32 or 64"));
  s.backward.tile = TileShape{32, 32, 2};
  CHECK_THAT(violations(s), Catch::Contains("backward.warps: 2 is not 4 or 8"));
  s.backward.forward.head_dim = 64;
  s.backward.tile = TileShape{32, 128, 8};
  CHECK_THAT(violations(s), Catch::Contains("two warpgroups split dQ = dS K by 32-column halves"));
  s.backward.tile = TileShape{64, 128, 8}; // (two warpgroups at D64: 64-query steps)
  CHECK(violations(s).empty());
  s.backward.tile = TileShape{64, 64, 4};
  s.backward.pv = BackwardPvFormat::Mxfp4;
  CHECK(violations(s).empty());
  CHECK(backwardSharedBytes(s.backward) <= targetLimits(Target::Sm90a).max_shared_bytes);
}

TEST_CASE("backward spec: the wgmma main pass is emitted with its traits and entry point", "[codegen][backward]") {
  if (!backwardTemplatesAvailable())
    return;
  KernelSpec s = defaultBackwardSpec(128, true, 0.0f, Target::Sm90a);
  s.backward.mma = BackwardMma::Wgmma;
  s.backward.tile = TileShape{32, 128, 8};
  auto k = emitKernel(s);
  REQUIRE(static_cast<bool>(k));
  REQUIRE(k->entries.size() == 4);
  CHECK(k->entries[2].threads == 256);
  CHECK(k->entries[2].dynamic_shared_bytes == backwardSharedBytes(s.backward));
  CHECK_THAT(k->source, Catch::Contains("#include \"fa4jit/attention_backward/main_wgmma.cuh\""));
  CHECK_THAT(k->source, Catch::Contains("backwardMainWgmma<"));
  CHECK_THAT(k->source, Catch::Contains("static constexpr bool wgmma = true;"));
}

TEST_CASE("backward spec: four entry points in launch order", "[codegen][backward]") {
  if (!backwardTemplatesAvailable())
    return;
  const KernelSpec s = defaultBackwardSpec(128, true, 0.0f, Target::Sm90a);
  auto k = emitKernel(s);
  REQUIRE(static_cast<bool>(k));
  REQUIRE(k->entries.size() == 4);
  CHECK(k->entries[0].name == k->name + "_prep");
  CHECK(k->entries[1].name == k->name + "_stage");
  CHECK(k->entries[1].dynamic_shared_bytes == 0);
  CHECK(k->entries[2].name == k->name);
  CHECK(k->entries[2].threads == 32 * s.backward.tile.warps);
  CHECK(k->entries[2].dynamic_shared_bytes == backwardSharedBytes(s.backward));
  CHECK(k->entries[3].name == k->name + "_dq");
  CHECK_THAT(k->source, Catch::Contains("static constexpr bool causal = true;"));
  CHECK_THAT(k->source, Catch::Contains("static constexpr int block_m = 64;"));
}
