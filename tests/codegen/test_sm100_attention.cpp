// The sm_100a tcgen05 attention kernel on the codegen side: defaults, the TMEM plan it is built
// with, the emitted instantiation, and the descriptor bits the template hands the tensor core.
#include "fa4jit/attention_sm100/descriptors.cuh"
#include "fa4jit/codegen/emitter.h"
#include "fa4jit/codegen/heuristics.h"
#include "fa4jit/codegen/sm100_attention.h"
#include "fa4jit/codegen/spec_validate.h"
#include "fa4jit/codegen/tmem_planner.h"

#include "expected_checks.h"

#include <catch2/catch.hpp>

using namespace fa4jit;
namespace dev = fa4jit::device::sm100;

TEST_CASE("sm_100a defaults of the FP4/FP8 routes are tcgen05 kernels with a planned TMEM", "[codegen][sm100]") {
  for (Route r : {Route::Nvfp8, Route::DirectP})
    for (int d : {64, 128, 256})
      for (bool causal : {false, true}) {
        const KernelSpec s = defaultAttentionSpec(r, d, causal, Target::Sm100a);
        INFO(toString(r) << " d" << d << " causal " << causal);
        CHECK(isTcgen05Attention(s));
        CHECK(specViolations(s).empty());
        CHECK(s.attention.tile.shape.block_m == 128);
        CHECK(s.attention.tile.shape.block_n == 128);
        CHECK(s.attention.operands.qk_widening == Widening::Native);
        CHECK(s.attention.operands.v_widening == (r == Route::DirectP ? Widening::Native : Widening::E4m3));
        // The recorded plan is the planner's for this spec, and it fits.
        llvm::Expected<tmem::TmemRequest> req = tmem::requestFromSpec(s);
        REQUIRE_OK(req);
        CHECK(req->q_tiles == 1);
        llvm::Expected<tmem::TmemPlan> plan = tmem::planTmem(*req);
        REQUIRE_OK(plan);
        REQUIRE(plan->fits);
        const TmemPlanRef &t = s.attention.tmem;
        CHECK(t.columns_allocated == plan->allocation_columns);
        CHECK(t.s_col[0] == plan->find("S0")->first_column);
        CHECK(t.o_col[0] == plan->find("O0")->first_column);
        CHECK(t.p_col[0] == plan->find("P0")->first_column);
        CHECK(t.sfq_col[0] >= 0);
        CHECK(t.sfk_col[0] >= 0);
        CHECK((t.sfp_col[0] >= 0) == (r == Route::DirectP)); // nvfp8's PV has no block scales
        CHECK(attentionSharedBytes(s.attention) == tcgen05AttentionSharedBytes(s.attention));
        CHECK(attentionSharedBytes(s.attention) <= targetLimits(Target::Sm100a).max_shared_bytes);
      }
  // The bf16 route and the other targets keep their kernels.
  CHECK_FALSE(isTcgen05Attention(defaultAttentionSpec(Route::Bf16, 128, false, Target::Sm100a)));
  CHECK_FALSE(isTcgen05Attention(defaultAttentionSpec(Route::DirectP, 128, false, Target::Sm90a)));
}

TEST_CASE("the emitted sm_100a kernel bakes the planner's columns and pins threads and shared memory",
          "[codegen][sm100]") {
  const KernelSpec s = defaultAttentionSpec(Route::DirectP, 128, true, Target::Sm100a);
  llvm::Expected<EmittedKernel> k = emitKernel(s);
  REQUIRE_OK(k);
  const std::string &src = k->source;
  CHECK_THAT(src, Catch::Contains("#include \"fa4jit/attention_sm100/kernel.cuh\""));
  CHECK_THAT(src, Catch::Contains("attentionForwardSm100<"));
  CHECK_THAT(src, Catch::Contains("static constexpr int tmem_columns = " + std::to_string(s.attention.tmem.columns_allocated) + ";"));
  CHECK_THAT(src, Catch::Contains("static constexpr int tmem_p_col = " + std::to_string(s.attention.tmem.p_col[0]) + ";"));
  CHECK_THAT(src, Catch::Contains("static constexpr int stages = 2;"));
  CHECK_THAT(src, Catch::Contains("kSharedBytes == " + std::to_string(tcgen05AttentionSharedBytes(s.attention))));
  REQUIRE(k->entries.size() == 2); // and _nonfinite_rows
  CHECK(k->entries[0].threads == 128);
  CHECK(k->entries[0].dynamic_shared_bytes == tcgen05AttentionSharedBytes(s.attention));
}

TEST_CASE("a spec whose recorded TMEM plan disagrees with the planner is refused", "[codegen][sm100]") {
  KernelSpec s = defaultAttentionSpec(Route::Nvfp8, 64, false, Target::Sm100a);
  s.attention.tmem.o_col[0] += 32;
  llvm::Expected<EmittedKernel> k = emitKernel(s);
  REQUIRE_ERR(k);
  CHECK_THAT(llvm::toString(k.takeError()), Catch::Contains("the planner gives"));
  // A spec without a recorded plan (e.g. written by hand) is planned at emission.
  s.attention.tmem = TmemPlanRef{};
  llvm::Expected<EmittedKernel> planned = emitKernel(s);
  REQUIRE_OK(planned);
  // Tiles the template cannot run are named.
  KernelSpec wrong = defaultAttentionSpec(Route::DirectP, 128, false, Target::Sm100a);
  wrong.attention.tile.shape.block_n = 64;
  wrong.attention.tmem = TmemPlanRef{};
  llvm::Expected<EmittedKernel> e = emitKernel(wrong);
  REQUIRE_ERR(e);
  CHECK_THAT(llvm::toString(e.takeError()), Catch::Contains("block_n must be 128"));
}

TEST_CASE("tcgen05 descriptors: bit positions of CUTLASS's UMMA descriptors", "[codegen][sm100]") {
  // InstrDescriptorBlockScaled: E2M1 (MXF4Format 1) at bits 7 and 10, N >> 3 at 17, scale format
  // at 23, M >> 4 at 24, SF ids at 29 (A) and 4 (B).
  constexpr uint32_t qk = dev::sm100InstrDescBlockScaled(128, 128, dev::kSm100FormatE2m1Mxf4, dev::kSm100FormatE2m1Mxf4,
                                                         dev::Sm100ScaleFormat::Ue4m3, 0, 0);
  CHECK(qk == ((1u << 7) | (1u << 10) | (16u << 17) | (8u << 24)));
  constexpr uint32_t pv = dev::sm100InstrDescBlockScaled(128, 256, dev::kSm100FormatE2m1Mxf4, dev::kSm100FormatE2m1Mxf4,
                                                         dev::Sm100ScaleFormat::Ue8m0, 2, 2);
  CHECK(pv == ((2u << 4) | (1u << 7) | (1u << 10) | (32u << 17) | (1u << 23) | (8u << 24) | (2u << 29)));
  // InstrDescriptor (kind::f8f6f4): F32 accumulator (1) at bit 4, E4M3 = 0.
  CHECK(dev::sm100InstrDescDense(128, 64, dev::kSm100FormatE4m3, dev::kSm100FormatE4m3) ==
        ((1u << 4) | (8u << 17) | (8u << 24)));
  // SmemDescriptor: address, LBO, SBO in 16-byte units; version 1 at bit 46; no swizzle.
  constexpr uint64_t sd = dev::sm100SmemDescriptor(0x1230u, 128u, 1024u);
  CHECK((sd & 0x3FFFu) == 0x123u);
  CHECK(((sd >> 16) & 0x3FFFu) == 8u);
  CHECK(((sd >> 32) & 0x3FFFu) == 64u);
  CHECK(((sd >> 46) & 3u) == 1u);
  CHECK((sd >> 61) == 0u);
  CHECK(dev::sm100SmemDescriptorAdvance(sd, 256u) - sd == 16u);
  CHECK(dev::sm100ScaleAtomDescriptor(0x400u) == ((0x40ull) | (8ull << 32) | (1ull << 46)));
  CHECK(dev::sm100ScaleTmemAddress(0x00000104u, 2u) == 0x80000104u);
  CHECK(dev::sm100TmemAddress(0x10u, 32, 8) == ((32u << 16) | 0x18u));
}
