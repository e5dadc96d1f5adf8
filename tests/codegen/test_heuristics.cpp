// Defaults and the variant list that `fa4jit compile --all` and the NVRTC CI test walk.
#include "fa4jit/codegen/emitter.h"
#include "fa4jit/codegen/alternatives.h"
#include "fa4jit/codegen/heuristics.h"
#include "fa4jit/codegen/variants.h"
#include "fa4jit/codegen/spec_io.h"
#include "fa4jit/codegen/spec_validate.h"

#include <catch2/catch.hpp>
#include <set>
#include <string>

using namespace fa4jit;

TEST_CASE("quantizer variants: every format, head dim, input type and key order", "[codegen][heuristics]") {
  for (Target t : {Target::Sm80, Target::Sm89, Target::Sm90a, Target::Sm100a}) {
    const std::vector<KernelSpec> v = enumerateQuantizeVariants(t);
    // NVFP4: 3 head dims x 3 input types (BF16, FP32, FP16); MXFP4 and FP8 V^T: x 2 key orders each;
    // E4M3 Q/K rows: x 2 shifts.
    CHECK(v.size() == 9 + 18 + 18 + 18);
    int permuted = 0, fp32 = 0, fp16 = 0;
    for (const KernelSpec &s : v) {
      CHECK(s.family == KernelFamily::Quantize);
      CHECK(s.target == t);
      CHECK(specViolations(s).empty());
      permuted += s.quantize.keys_permuted16;
      fp32 += s.quantize.input_fp32;
      fp16 += s.quantize.input_fp16;
    }
    CHECK(permuted == 18);
    CHECK(fp32 == 21);
    CHECK(fp16 == 21);
  }
}

TEST_CASE("every variant has a distinct name and emits", "[codegen][heuristics]") {
  const std::vector<KernelSpec> all = enumerateVariants();
  std::set<std::string> names;
  std::set<Target> targets;
  for (const KernelSpec &s : all) {
    names.insert(kernelName(s));
    targets.insert(s.target);
    llvm::Expected<EmittedKernel> k = emitKernel(s);
    if (!k)
      FAIL(llvm::toString(k.takeError()));
  }
  CHECK(names.size() == all.size());
  CHECK(targets.count(Target::Sm90a));
  CHECK(targets.count(Target::Sm100a));
  const std::vector<KernelSpec> two = enumerateVariants({Target::Sm90a, Target::Sm100a});
  CHECK(two.size() == enumerateQuantizeVariants(Target::Sm90a).size() * 2 +
                          enumerateAttentionVariants(Target::Sm90a).size() +
                          enumerateAttentionVariants(Target::Sm100a).size() +
                          enumerateBackwardVariants(Target::Sm90a).size() +
                          enumerateMergeVariants(Target::Sm90a).size() * 2 +
                          enumeratePagedKvVariants(Target::Sm90a).size() * 2);
}

TEST_CASE("paged-kv variants: every head dim, page size, warp count and staging on every target, each valid",
          "[codegen][heuristics]") {
  for (Target t : {Target::Sm80, Target::Sm89, Target::Sm90a, Target::Sm100a}) {
    const std::vector<KernelSpec> v = enumeratePagedKvVariants(t);
    CHECK(v.size() == 2 * 5 * 2 * 2 * 3);
    for (const KernelSpec &s : v) {
      CHECK(s.family == KernelFamily::PagedKv);
      CHECK_FALSE(static_cast<bool>(validateSpec(s)));
      llvm::Expected<EmittedKernel> k = emitKernel(s);
      REQUIRE(static_cast<bool>(k));
      REQUIRE(k->entries.size() == 3);
      CHECK(k->entries[0].name == k->name + "_decode");
      CHECK(k->entries[0].threads == s.paged.warps * 32);
      CHECK(k->entries[0].dynamic_shared_bytes > 0);
      // (the ring fits every target's shared memory: sm_89's 99 KB per CTA is the least)
      CHECK(k->entries[0].dynamic_shared_bytes <= 99 * 1024);
      CHECK(k->entries[1].name == k->name + "_combine");
      CHECK(k->entries[2].name == k->name + "_append");
    }
  }
  KernelSpec bad = defaultPagedKvSpec(256, 16, 4, Target::Sm90a);
  CHECK(static_cast<bool>(validateSpec(bad)));
  bad = defaultPagedKvSpec(128, 24, 4, Target::Sm90a);
  llvm::Error e = validateSpec(bad);
  REQUIRE(static_cast<bool>(e));
  CHECK(llvm::toString(std::move(e)).find("paged.page_size") != std::string::npos);
  bad = defaultPagedKvSpec(128, 16, 2, Target::Sm90a);
  CHECK(static_cast<bool>(validateSpec(bad)));
}

TEST_CASE("decode grid: full batches take 4 warps and no split, small ones split up to 16", "[codegen][heuristics]") {
  const DecodeGridChoice full = chooseDecodeGrid(64 * 8, 32768, 132);
  CHECK(full.warps == 4);
  CHECK(full.splits == 1);
  const DecodeGridChoice one = chooseDecodeGrid(8, 131072, 132);
  CHECK(one.warps == 8);
  CHECK(one.splits == 16);
  // short sequences keep at least 256 keys per split
  CHECK(chooseDecodeGrid(8, 1000, 132).splits == 4);
  CHECK(chooseDecodeGrid(8, 100, 132).splits == 1);
  CHECK(chooseDecodeGrid(0, 100, 132).splits == 1);
  // a grid that nearly fills the SMs is not split into a partial second wave
  CHECK(chooseDecodeGrid(16 * 8, 131072, 132).splits == 1);
  CHECK(chooseDecodeGrid(16 * 8, 131072, 132).warps == 8);
  CHECK(chooseDecodeGrid(40, 131072, 132).splits == 3);
}

TEST_CASE("merge variants: every state type and head dim on every target, each valid", "[codegen][heuristics]") {
  for (Target t : {Target::Sm80, Target::Sm89, Target::Sm90a, Target::Sm100a}) {
    const std::vector<KernelSpec> v = enumerateMergeVariants(t);
    CHECK(v.size() == 9);
    for (const KernelSpec &s : v) {
      CHECK(s.family == KernelFamily::MergeStates);
      CHECK(s.target == t);
      CHECK_FALSE(static_cast<bool>(validateSpec(s)));
    }
  }
  KernelSpec bad = defaultMergeSpec(StateType::F16, 96, Target::Sm90a);
  bad.merge.threads = 100;
  const std::string e = llvm::toString(validateSpec(bad));
  CHECK(e.find("merge.head_dim: 96 is not one of 64, 128, 256") != std::string::npos);
  CHECK(e.find("merge.threads: 100 is not a power of two") != std::string::npos);
}

TEST_CASE("backward variants: sm_90a only, each valid, the defaults per head dim", "[codegen][heuristics]") {
  for (Target t : {Target::Sm80, Target::Sm89, Target::Sm100a})
    CHECK(enumerateBackwardVariants(t).empty());
  if (!backwardTemplatesAvailable()) {
    CHECK(enumerateBackwardVariants(Target::Sm90a).empty());
    return;
  }
  const std::vector<KernelSpec> v = enumerateBackwardVariants(Target::Sm90a);
  std::set<std::string> names;
  int mxfp4 = 0, deterministic = 0, saved = 0;
  for (const KernelSpec &s : v) {
    CHECK(s.family == KernelFamily::AttentionBackward);
    INFO(toJson(s));
    CHECK(specViolations(s).empty());
    names.insert(kernelName(s));
    mxfp4 += s.backward.pv == BackwardPvFormat::Mxfp4;
    deterministic += s.backward.deterministic;
    saved += s.backward.qk == BackwardQkOperands::SavedNvfp4;
  }
  CHECK(names.size() == v.size());
  // Per main pass (wgmma, mma.sync) and head dim: MXFP4 at the chosen step and at 32 queries
  // (the same for mma.sync's D128), each mode once.
  CHECK(mxfp4 == 7);
  CHECK(deterministic == 4);
  CHECK(saved == 4);
  for (int d : {64, 128})
    for (bool causal : {false, true}) {
      const KernelSpec s = defaultBackwardSpec(d, causal, 0.0f, Target::Sm90a);
      CHECK(s.backward.forward.head_dim == d);
      CHECK(s.backward.forward.causal == causal);
      CHECK(s.backward.mma == BackwardMma::Wgmma);
      CHECK(s.backward.tile.block_m == 64);
      CHECK(s.backward.tile.block_n == 128);
      CHECK(s.backward.tile.warps == 8);
      CHECK(s.backward.pv == BackwardPvFormat::E4m3);
      CHECK(s.backward.qk == BackwardQkOperands::Bf16);
      // the nvfp8 forward's widening, which the rebuilt S must repeat
      CHECK(s.backward.forward.operands.qk_widen_shift ==
            defaultAttentionSpec(Route::Nvfp8, d, causal, Target::Sm90a).attention.operands.qk_widen_shift);
    }
}

TEST_CASE("attention variants follow the target's tensor cores", "[codegen][heuristics]") {
  if (!attentionTemplatesAvailable()) {
    CHECK(enumerateAttentionVariants(Target::Sm90a).empty());
    return;
  }
  for (const KernelSpec &s : enumerateAttentionVariants(Target::Sm80))
    CHECK(s.attention.route == Route::Bf16); // no FP8 mma.sync before sm_89
  for (Target t : {Target::Sm89, Target::Sm90a, Target::Sm100a}) {
    std::set<int> routes, dims, classifiers;
    bool causal = false, permuted = false;
    for (const KernelSpec &s : enumerateAttentionVariants(t)) {
      routes.insert(static_cast<int>(s.attention.route));
      dims.insert(s.attention.head_dim);
      if (s.attention.route == Route::DirectP)
        classifiers.insert(static_cast<int>(s.attention.classifier.kind));
      causal |= s.attention.causal;
      permuted |= s.attention.operands.v_keys_permuted16;
    }
    CHECK(routes.size() == 3);
    CHECK(dims == std::set<int>{64, 128, 256});
    CHECK(classifiers.size() == 4); // piecewise (default), threshold, affine, mixed
    CHECK(causal);
    if (t != Target::Sm100a) // the register-P key order serves mma.sync / wgmma
      CHECK(permuted);
  }
}

TEST_CASE("defaults fit the template and the target", "[codegen][heuristics]") {
  for (int d : {64, 128, 256}) {
    // sm_89 runs the mma.sync template only: 16 rows per warp.
    const KernelSpec s = defaultAttentionSpec(Route::DirectP, d, false, Target::Sm89);
    CHECK(s.attention.tile.shape.block_m == 16 * s.attention.tile.shape.warps);
    CHECK(s.attention.tile.shape.block_n % 32 == 0);
    CHECK(s.attention.operands.qk_widening == Widening::E4m3);
    CHECK(attentionSharedBytes(s.attention) <= targetLimits(Target::Sm89).max_shared_bytes);
    CHECK(specViolations(defaultAttentionSpec(Route::DirectP, d, false, Target::Sm90a)).empty());
    // sm_90a: the wgmma kernel is among the variants (causal too) and valid with its default tiles.
    const KernelSpec w = withAttentionSchedule(defaultAttentionSpec(Route::Nvfp8, d, true, Target::Sm90a),
                                               AttentionSchedule::WgmmaWarpSpecialized);
    CHECK(specViolations(w).empty());
    bool listed = false;
    for (const KernelSpec &v : enumerateAttentionVariants(Target::Sm90a))
      listed |= specsEqual(v, w);
    CHECK(listed);
  }
  const KernelSpec old = defaultAttentionSpec(Route::Bf16, 128, true, Target::Sm80);
  CHECK(old.attention.causal);
  CHECK(old.attention.operands.qk_widening == Widening::Bf16);
}

// The route numerics are the same on every target and schedule: nvfp8 rescales only past 3 log2
// units of slack and feeds P with offset 5 (the most E4M3 allows beside P <= 8); bf16 past 8
// (its P is BF16: no offset); directp rescales on any increase with offset 8.
TEST_CASE("route numerics: the guard slack and P offset of every route on every target", "[codegen][heuristics]") {
  for (Target t : {Target::Sm80, Target::Sm89, Target::Sm90a, Target::Sm100a})
    for (int d : {64, 128, 256})
      for (Route r : {Route::Bf16, Route::Nvfp8, Route::DirectP}) {
        if (r != Route::Bf16 && t == Target::Sm80)
          continue; // (the FP8-fed routes need sm_89)
        INFO(toString(t) << " D" << d << " " << toString(r));
        const KernelSpec s = defaultAttentionSpec(r, d, false, t);
        CHECK(s.attention.guard.kind == GuardKind::SampledAnchor);
        const float slack = r == Route::Nvfp8 ? kNvfp8GuardSlackLog2 : r == Route::Bf16 ? kBf16GuardSlackLog2 : 0.0f;
        CHECK(s.attention.guard.slack_log2 == slack);
        if (r != Route::Bf16) // (bf16 feeds P as BF16: the offset is unused)
          CHECK(s.attention.operands.p_offset_log2 == (r == Route::Nvfp8 ? 5 : 8));
        CHECK(specViolations(s).empty());
        // the mma.sync alternative keeps the numerics
        const KernelSpec m = withAttentionSchedule(s, AttentionSchedule::MmaSync);
        CHECK(m.attention.guard.slack_log2 == s.attention.guard.slack_log2);
        CHECK(m.attention.operands.p_offset_log2 == s.attention.operands.p_offset_log2);
      }
  // One more bit of offset would let P = 2^3 * 2^6 = 512 overflow E4M3 (448): refused.
  KernelSpec over = defaultAttentionSpec(Route::Nvfp8, 128, false, Target::Sm90a);
  over.attention.operands.p_offset_log2 += 1;
  CHECK_FALSE(specViolations(over).empty());
}

TEST_CASE("quantizerFor produces the layouts the attention kernel reads", "[codegen][heuristics]") {
  KernelSpec a = defaultAttentionSpec(Route::DirectP, 64, false, Target::Sm90a);
  a.attention.operands.v_keys_permuted16 = true;
  const KernelSpec q = quantizerFor(a, AttentionOperand::Q);
  CHECK(q.quantize.format == QuantFormat::Nvfp4);
  CHECK(q.quantize.layout == QuantLayout::RowMajorK);
  CHECK(q.quantize.head_dim == 64);
  CHECK(q.target == Target::Sm90a);
  const KernelSpec v = quantizerFor(a, AttentionOperand::V, true);
  CHECK(v.quantize.format == QuantFormat::Mxfp4);
  CHECK(v.quantize.layout == QuantLayout::Transposed);
  CHECK(v.quantize.keys_permuted16);
  CHECK(v.quantize.input_fp32);
  const KernelSpec f = quantizerFor(defaultAttentionSpec(Route::Nvfp8, 128, false, Target::Sm90a), AttentionOperand::V);
  CHECK(f.quantize.format == QuantFormat::Fp8PerHead);
  CHECK(!f.quantize.keys_permuted16);
}

TEST_CASE("causal wgmma grid by length: handed-out persistent tiles up to 8k keys (bf16: 4k)",
          "[codegen][heuristics]") {
  for (Route r : {Route::Bf16, Route::Nvfp8, Route::DirectP})
    for (int d : {64, 128, 256}) {
      INFO("route " << toString(r) << " D " << d);
      const int most = r == Route::Bf16 ? 4096 : 8192;
      for (int keys : {1, 1000, 4096, 8192, 8193, 16384, 32768}) {
        const KernelSpec causal = defaultAttentionSpecForKeys(r, d, true, Target::Sm90a, keys);
        CHECK(causal.attention.tile.schedule.persistent == (keys <= most));
        CHECK(specViolations(causal).empty());
        // Everything else is the length-free default's; non-causal grids do not depend on length.
        // (and nvfp8's fused widening, chosen by length too: the test case below)
        KernelSpec same = causal;
        same.attention.tile.schedule.persistent = defaultAttentionSpec(r, d, true, Target::Sm90a).attention.tile.schedule.persistent;
        same.attention.tile.staging.fused_widening = defaultAttentionSpec(r, d, true, Target::Sm90a).attention.tile.staging.fused_widening;
        CHECK(specsEqual(same, defaultAttentionSpec(r, d, true, Target::Sm90a)));
        KernelSpec non_causal = defaultAttentionSpecForKeys(r, d, false, Target::Sm90a, keys);
        non_causal.attention.tile.staging.fused_widening =
            defaultAttentionSpec(r, d, false, Target::Sm90a).attention.tile.staging.fused_widening;
        CHECK(specsEqual(non_causal, defaultAttentionSpec(r, d, false, Target::Sm90a)));
      }
    }
  // Other targets have no persistent grid.
  CHECK(!defaultAttentionSpecForKeys(Route::Nvfp8, 128, true, Target::Sm100a, 1024).attention.tile.schedule.persistent);
  CHECK(!defaultAttentionSpecForKeys(Route::Bf16, 128, true, Target::Sm80, 1024).attention.tile.schedule.persistent);
  // CI compiles both causal grids of every sm_90a wgmma default, the FP8-fed routes' persistent one
  // with its images fused and by passes.
  int persistent_causal = 0, fused_causal = 0;
  for (const KernelSpec &s : enumerateVariants({Target::Sm90a}))
    if (s.family == KernelFamily::AttentionForward && s.attention.causal && s.attention.tile.schedule.persistent) {
      ++persistent_causal;
      fused_causal += canonicalize(s).attention.tile.staging.fused_widening ? 1 : 0;
    }
  // Three routes x three head dims, and the FP8-fed ones' other widening; the FP8-fed ones' two
  // again with E4M3 Q/K.
  CHECK(persistent_causal == 9 + 6 + 12);
  CHECK(fused_causal == 6 + 6); // (the default form or the other, for each FP8-fed one)
}

TEST_CASE("directp's thread key blocks: the default on 128-key tiles, a variant elsewhere", "[codegen][heuristics]") {
  for (Route r : {Route::Bf16, Route::Nvfp8, Route::DirectP})
    for (int d : {64, 128, 256})
      for (bool causal : {false, true}) {
        INFO("route " << toString(r) << " D " << d << " causal " << causal);
        const KernelSpec s = defaultAttentionSpec(r, d, causal, Target::Sm90a);
        const bool expected = r == Route::DirectP && s.attention.tile.shape.block_n == 128;
        CHECK(s.attention.tile.softmax.thread_key_blocks == expected);
        CHECK(expected == (r == Route::DirectP)); // (D128: three consumers of 128 keys with FP16 scores)
        CHECK(specViolations(s).empty());
        for (const KernelSpec &alt : wgmmaScheduleAlternatives(s)) // every alternative valid
          CHECK(specViolations(alt).empty());
      }
  // mma.sync and sm_100a kernels never have them.
  CHECK_FALSE(defaultAttentionSpec(Route::DirectP, 64, false, Target::Sm100a).attention.tile.softmax.thread_key_blocks);
  CHECK_FALSE(withAttentionSchedule(defaultAttentionSpec(Route::DirectP, 64, false, Target::Sm90a),
                                    AttentionSchedule::MmaSync)
                  .attention.tile.softmax.thread_key_blocks);
  // A change that moves the key tile or V's key order drops them instead of turning invalid.
  KernelSpec moved = defaultAttentionSpec(Route::DirectP, 256, false, Target::Sm90a);
  moved.attention.tile.shape.block_n = 64;
  CHECK_FALSE(specViolations(moved).empty());
  CHECK_FALSE(keepingFitKeyBlocks(moved).attention.tile.softmax.thread_key_blocks);
  CHECK(specViolations(keepingFitKeyBlocks(moved)).empty());
  KernelSpec permuted = defaultAttentionSpec(Route::DirectP, 64, false, Target::Sm90a);
  permuted.attention.operands.v_keys_permuted16 = true;
  CHECK_FALSE(keepingFitKeyBlocks(permuted).attention.tile.softmax.thread_key_blocks);
  // D128's alternatives carry the 96-key forms of three consumers (quad blocks, thread blocks and
  // FP32 scores on quad blocks: the earlier defaults) and two consumers of 128 keys; D64/D256's
  // carry the quad blocks.
  int d128_thread96 = 0, d128_quad96 = 0, d128_fp32 = 0, d128_two = 0;
  for (const KernelSpec &alt : wgmmaScheduleAlternatives(defaultAttentionSpec(Route::DirectP, 128, false, Target::Sm90a))) {
    const TileSpec &t = alt.attention.tile;
    d128_thread96 += t.softmax.thread_key_blocks && t.shape.block_n == 96 && t.shape.block_m == 192 ? 1 : 0;
    d128_quad96 += !t.softmax.thread_key_blocks && t.shape.block_n == 96 && t.shape.block_m == 192 && t.softmax.scores_fp16 ? 1 : 0;
    d128_fp32 += !t.softmax.scores_fp16 && t.shape.block_n == 96 && t.shape.block_m == 192 ? 1 : 0;
    d128_two += t.shape.block_m == 128 && t.pipeline.overlap ? 1 : 0;
  }
  CHECK(d128_thread96 >= 1);
  CHECK(d128_quad96 >= 1);
  CHECK(d128_fp32 == 1);
  CHECK(d128_two >= 1);
  bool quad = false;
  for (const KernelSpec &alt : wgmmaScheduleAlternatives(defaultAttentionSpec(Route::DirectP, 64, false, Target::Sm90a)))
    quad = quad || (!alt.attention.tile.softmax.thread_key_blocks && alt.attention.tile.shape.block_n == 128 &&
                    alt.attention.tile.shape.block_m == 192);
  CHECK(quad);
  // CI compiles them: every variant the generator lists is valid.
  int listed = 0;
  for (const KernelSpec &s : enumerateVariants({Target::Sm90a}))
    if (s.family == KernelFamily::AttentionForward && s.attention.tile.softmax.thread_key_blocks) {
      CHECK(specViolations(s).empty());
      ++listed;
    }
  CHECK(listed >= 6);
}

// nvfp8's FP16 scores (sm90_decisions.cpp): the sm_90a default at D128 (three consumers of
// 128 keys) and at D256 without causal masking; FP32 elsewhere; the other form is the tuner's
// alternative everywhere, D128's FP32 form on 96-key tiles.
TEST_CASE("nvfp8's FP16 scores: the default at D128 and non-causal D256", "[codegen][heuristics]") {
  for (int d : {64, 128, 256})
    for (bool causal : {false, true}) {
      INFO("D " << d << " causal " << causal);
      const KernelSpec s = defaultAttentionSpec(Route::Nvfp8, d, causal, Target::Sm90a);
      const bool fp16 = d == 128 || (d == 256 && !causal);
      CHECK(s.attention.tile.softmax.scores_fp16 == fp16);
      CHECK(s.attention.operands.qk_widen_shift == (fp16 ? minScoresFp16WidenShift(d) : 3));
      if (d == 128)
        CHECK((s.attention.tile.shape.block_m == 192 && s.attention.tile.shape.block_n == 128));
      CHECK(specViolations(s).empty());
      int other = 0;
      for (const KernelSpec &alt : wgmmaScheduleAlternatives(s))
        if (alt.attention.tile.softmax.scores_fp16 != fp16) {
          ++other;
          CHECK(specViolations(alt).empty());
          if (d == 128)
            CHECK(alt.attention.tile.shape.block_n == 96);
        }
      CHECK(other == 1);
      // The exp2 polynomial: half of each tile's keys at non-causal D256, none elsewhere; the
      // other choice is one alternative where the scores are FP16, and FP32 scores never take it.
      const int poly = d == 256 && !causal ? s.attention.tile.shape.block_n / 16 : 0;
      CHECK(s.attention.tile.softmax.exp2_poly_tiles == poly);
      int poly_alts = 0;
      for (const KernelSpec &alt : wgmmaScheduleAlternatives(s)) {
        if (!alt.attention.tile.softmax.scores_fp16)
          CHECK(alt.attention.tile.softmax.exp2_poly_tiles == 0);
        if (alt.attention.tile.softmax.scores_fp16 && alt.attention.tile.softmax.exp2_poly_tiles != poly) {
          ++poly_alts;
          CHECK(alt.attention.tile.softmax.exp2_poly_tiles == (poly == 0 ? s.attention.tile.shape.block_n / 16 : 0));
          CHECK(specViolations(alt).empty());
        }
      }
      CHECK(poly_alts == (fp16 ? 1 : 0));
    }
  CHECK_FALSE(defaultAttentionSpec(Route::Nvfp8, 128, false, Target::Sm100a).attention.tile.softmax.scores_fp16);
  CHECK_FALSE(withAttentionSchedule(defaultAttentionSpec(Route::Nvfp8, 128, false, Target::Sm90a),
                                    AttentionSchedule::MmaSync)
                  .attention.tile.softmax.scores_fp16);
}

// directp's piecewise pieces read from S (sm90_decisions.cpp): the sm_90a default at every
// head dim; forming y_h first is one tuner alternative.
TEST_CASE("fused widening: the default where it measured faster, the other form the alternative",
          "[codegen][heuristics]") {
  for (Route r : {Route::Bf16, Route::Nvfp8, Route::DirectP})
    for (int d : {64, 128, 256})
      for (bool causal : {false, true})
        for (int keys : {4096, 32768}) {
          INFO(toString(r) << " D " << d << " causal " << causal << " keys " << keys);
          const KernelSpec s = defaultAttentionSpecForKeys(r, d, causal, Target::Sm90a, keys);
          const bool fused = canonicalize(s).attention.tile.staging.fused_widening;
          // (D256, and nvfp8 at D128 without causal masking; nvfp8 up to 4k keys: sm90_decisions.cpp;
          // fa4jit bench --route nvfp8,directp --head-dim 128,256 --seqlen 4096,16384 --variants fused-widening,widening-passes)
          const bool measured_faster = (d == 256 || (r == Route::Nvfp8 && d == 128 && !causal)) &&
                                       (r != Route::Nvfp8 || keys <= 4096);
          CHECK(fused == (r != Route::Bf16 && s.attention.tile.schedule.persistent && measured_faster));
          int other = 0;
          for (const KernelSpec &alt : wgmmaScheduleAlternatives(s)) {
            CHECK(specViolations(alt).empty());
            const bool alt_fused = canonicalize(alt).attention.tile.staging.fused_widening;
            if (alt.attention.tile.schedule.persistent && alt_fused != fused) {
              KernelSpec back = alt;
              back.attention.tile.staging.fused_widening = fused;
              other += specsEqual(canonicalize(back), canonicalize(s)) ? 1 : 0;
            }
          }
          CHECK(other == (r != Route::Bf16 && s.attention.tile.schedule.persistent ? 1 : 0));
        }
  // (sm_100a and mma.sync kernels have no widening passes to fuse)
  CHECK_FALSE(canonicalize(defaultAttentionSpec(Route::DirectP, 128, false, Target::Sm100a)).attention.tile.staging.fused_widening);
}

TEST_CASE("directp's folded pieces: the sm_90a default, y_h first the alternative", "[codegen][heuristics]") {
  for (int d : {64, 128, 256})
    for (bool causal : {false, true}) {
      INFO("D " << d << " causal " << causal);
      const KernelSpec s = defaultAttentionSpec(Route::DirectP, d, causal, Target::Sm90a);
      CHECK(canonicalize(s).attention.tile.softmax.pieces_from_scores);
      int unfolded = 0;
      for (const KernelSpec &alt : wgmmaScheduleAlternatives(s))
        unfolded += alt.attention.tile.softmax.scores_fp16 && !canonicalize(alt).attention.tile.softmax.pieces_from_scores ? 1 : 0;
      CHECK(unfolded == 1);
    }
}
