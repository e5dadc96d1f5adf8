// E4M3 Q/K as a spec choice (OperandSpec::qk_format) and the route presets that name it.
#include "fa4jit/codegen/heuristics.h"
#include "fa4jit/codegen/route_presets.h"
#include "fa4jit/codegen/spec_io.h"
#include "fa4jit/codegen/spec_validate.h"
#include "fa4jit/codegen/variants.h"
#include "spec_problems.h"

#include <catch2/catch.hpp>
#include <string>

using namespace fa4jit;

using fa4jit::testing::specProblems;

TEST_CASE("route presets: names, round trip and the refused", "[codegen][presets]") {
  REQUIRE(routePresets().size() == 5);
  for (const RoutePreset &p : routePresets()) {
    auto back = parseRoutePreset(toString(p));
    REQUIRE(static_cast<bool>(back));
    CHECK(*back == p);
  }
  auto fp8 = parseRoutePreset("fp8");
  REQUIRE(static_cast<bool>(fp8));
  CHECK(fp8->route == Route::Nvfp8);
  CHECK(fp8->qk_format == QkFormat::E4m3);
  auto bad = parseRoutePreset("fp4");
  REQUIRE_FALSE(static_cast<bool>(bad));
  CHECK_THAT(llvm::toString(bad.takeError()), Catch::Contains("fp8-directp"));
}

TEST_CASE("E4M3 Q/K specs: JSON, names and canonical form", "[codegen][presets]") {
  const KernelSpec nvfp4 = defaultAttentionSpec(Route::Nvfp8, 128, true, Target::Sm90a);
  const KernelSpec e4m3 = withQkFormat(nvfp4, QkFormat::E4m3);
  // NVFP4 specs keep the JSON (and so the cache keys) they had before the field.
  CHECK(toJson(nvfp4).find("qk_format") == std::string::npos);
  CHECK(toJson(e4m3).find("\"qk_format\":\"e4m3\"") != std::string::npos);
  auto back = parseSpec(toJson(e4m3));
  REQUIRE(static_cast<bool>(back));
  CHECK(specsEqual(*back, e4m3));
  CHECK_FALSE(specsEqual(nvfp4, e4m3));
  CHECK(specHash(nvfp4) != specHash(e4m3));
  CHECK(kernelName(e4m3).rfind("fa4jit_attn_nvfp8_qk8_d128_c1_", 0) == 0);
  CHECK(kernelName(nvfp4).rfind("fa4jit_attn_nvfp8_d128_c1_", 0) == 0);
  // The quantizer's shift is part of its spec (baked), and absent from the other formats'.
  KernelSpec q = defaultQuantizeSpec(QuantFormat::E4m3Rows, 128, Target::Sm90a);
  CHECK(q.quantize.code_shift == 7);
  CHECK(q.quantize.layout == QuantLayout::RowMajorK);
  KernelSpec q3 = q;
  q3.quantize.code_shift = 3;
  CHECK(specHash(q) != specHash(q3));
  CHECK(toJson(defaultQuantizeSpec(QuantFormat::Nvfp4, 128, Target::Sm90a)).find("code_shift") == std::string::npos);
  auto qback = parseSpec(toJson(q3));
  REQUIRE(static_cast<bool>(qback));
  CHECK(qback->quantize.code_shift == 3);
}

TEST_CASE("E4M3 Q/K: the sm_90a wgmma kernel only, with the E4M3 widening", "[codegen][validate][presets]") {
  for (Route r : {Route::Nvfp8, Route::DirectP})
    for (int d : {64, 128, 256}) {
      INFO(toString(r) << " d" << d);
      const KernelSpec wgmma = withQkFormat(defaultAttentionSpec(r, d, false, Target::Sm90a), QkFormat::E4m3);
      CHECK(specProblems(wgmma).empty());
      const KernelSpec mma_sync = withAttentionSchedule(wgmma, AttentionSchedule::MmaSync);
      CHECK_THAT(specProblems(mma_sync), Catch::Contains("attention.operands.qk_format"));
      const KernelSpec blackwell = withQkFormat(defaultAttentionSpec(r, d, false, Target::Sm100a), QkFormat::E4m3);
      CHECK_THAT(specProblems(blackwell), Catch::Contains("sm_90a wgmma kernel only"));
    }
  KernelSpec bf16_widened = withQkFormat(defaultAttentionSpec(Route::Nvfp8, 128, false, Target::Sm90a), QkFormat::E4m3);
  bf16_widened.attention.operands.qk_widening = Widening::Bf16;
  CHECK_THAT(specProblems(bf16_widened), Catch::Contains("qk_widening must be e4m3"));
  KernelSpec q = defaultQuantizeSpec(QuantFormat::E4m3Rows, 64, Target::Sm90a);
  q.quantize.code_shift = 2;
  CHECK_THAT(specProblems(q), Catch::Contains("quantize.code_shift"));
}

TEST_CASE("E4M3 Q/K variants cover every producer path and both shifts", "[codegen][variants][presets]") {
  int attention = 0, quantize = 0, in_kernel = 0, fused = 0, passes = 0;
  for (const KernelSpec &s : enumerateVariants({Target::Sm90a})) {
    if (s.family == KernelFamily::Quantize && s.quantize.format == QuantFormat::E4m3Rows)
      ++quantize;
    if (s.family != KernelFamily::AttentionForward || s.attention.operands.qk_format != QkFormat::E4m3)
      continue;
    ++attention;
    const StagingSpec &st = s.attention.tile.staging;
    in_kernel += st.kv == KvStaging::InKernel;
    fused += st.fused_widening;
    passes += st.kv == KvStaging::Prewidened && !st.fused_widening;
  }
  CHECK(quantize == 3 * 3 * 2); // head dims x inputs x shifts
  CHECK(attention >= 12);
  CHECK(in_kernel > 0);
  CHECK(fused > 0);
  CHECK(passes > 0);
  for (Target t : {Target::Sm80, Target::Sm89, Target::Sm100a})
    for (const KernelSpec &s : enumerateAttentionVariants(t))
      CHECK(s.attention.operands.qk_format == QkFormat::Nvfp4);
}
