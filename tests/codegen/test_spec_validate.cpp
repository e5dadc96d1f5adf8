// Spec validation: every generated variant passes; each rule fails with a message naming the field.
#include "fa4jit/codegen/heuristics.h"
#include "fa4jit/codegen/variants.h"
#include "fa4jit/codegen/spec_io.h"
#include "fa4jit/codegen/spec_validate.h"
#include "spec_problems.h"

#include <catch2/catch.hpp>
#include <string>
#include <limits>

namespace {
// The fused widening's shared memory: mbarriers, slots and shape, then three 6 KiB staging areas
// (templates/fa4jit/attention_sm90/layout.cuh's kWidenerSharedBytes).
constexpr int kWidener = 128 + 3 * 6144;
} // namespace

using namespace fa4jit;

namespace {

// All violation messages joined, or "" when the spec is valid.
std::string problems(const KernelSpec &s) { return fa4jit::testing::specProblems(s); }

// The numerics and tile rules below are stated against the mma.sync schedule (valid on every
// target); the wgmma schedule's own rules have their own case.
KernelSpec directp(Target t = Target::Sm90a) {
  return withAttentionSchedule(defaultAttentionSpec(Route::DirectP, 128, false, t), AttentionSchedule::MmaSync);
}

} // namespace

TEST_CASE("every enumerated variant and default is valid", "[codegen][validate]") {
  for (const KernelSpec &s : enumerateVariants()) {
    INFO(toString(s.target));
    CHECK(problems(s).empty());
    llvm::Error e = validateSpec(s);
    const bool failed = static_cast<bool>(e);
    CHECK(!failed);
    llvm::consumeError(std::move(e));
  }
  for (Target t : {Target::Sm89, Target::Sm90a, Target::Sm100a})
    for (Route r : {Route::Bf16, Route::Nvfp8, Route::DirectP})
      for (int d : {64, 128, 256})
        CHECK(problems(defaultAttentionSpec(r, d, true, t)).empty());
  CHECK(problems(defaultAttentionSpec(Route::Bf16, 256, false, Target::Sm80)).empty());
}

TEST_CASE("attention shape and tile rules", "[codegen][validate]") {
  KernelSpec s = directp();
  s.attention.head_dim = 96;
  CHECK_THAT(problems(s), Catch::Contains("attention.head_dim: 96"));
  s = directp();
  s.attention.tile.shape.block_n = 48;
  CHECK_THAT(problems(s), Catch::Contains("attention.tile.shape.block_n: 48") && Catch::Contains("multiple of 32"));
  s = directp();
  s.attention.tile.shape.block_m = 40;
  CHECK_THAT(problems(s), Catch::Contains("attention.tile.shape.block_m"));
  s = directp();
  s.attention.tile.shape.warps = 0;
  CHECK_THAT(problems(s), Catch::Contains("attention.tile.shape.warps"));
  s = directp();
  s.attention.tile.pipeline.stages = 9;
  CHECK_THAT(problems(s), Catch::Contains("attention.tile.pipeline.stages"));
  s = directp();
  s.attention.softmax_scale = -1.0f;
  CHECK_THAT(problems(s), Catch::Contains("attention.softmax_scale"));
}

TEST_CASE("shared memory must fit the target", "[codegen][validate]") {
  KernelSpec s = defaultAttentionSpec(Route::Bf16, 256, false, Target::Sm89);
  s.attention.tile.shape.block_n = 256;
  s.attention.tile.shape.block_m = 256;
  s.attention.tile.shape.warps = 16;
  CHECK(attentionSharedBytes(s.attention) > targetLimits(Target::Sm89).max_shared_bytes);
  CHECK_THAT(problems(s), Catch::Contains("shared memory") && Catch::Contains("sm_89"));
  // The template's layout: (block_m + block_n) rows of Q/K plus V^T [D][block_n], rows padded by 16.
  const KernelSpec d = directp(Target::Sm89); // the mma.sync schedule
  CHECK(attentionSharedBytes(d.attention) == (64 + 64) * (128 + 16) + 128 * (64 + 16));
}

TEST_CASE("wgmma schedule rules and shared memory", "[codegen][validate]") {
  // directp at D128 on three consumers of 96-key tiles (its tiles with FP32 scores, fp32-scores;
  // FP16 scores take 128 keys with thread key blocks). Q [192][128] + 3 stages x
  // (K [96][128] + V^T [128 + 8 row-sum rows][128]: one column block) + 8 mbarriers + 1024 slack.
  KernelSpec def = withAttentionSchedule(defaultAttentionSpec(Route::DirectP, 128, false, Target::Sm90a),
                                         AttentionSchedule::WgmmaWarpSpecialized);
  REQUIRE(def.attention.tile.shape.block_n == 128);
  def.attention.tile.shape.block_n = 96;
  def.attention.tile.softmax.thread_key_blocks = false;
  CHECK(def.attention.tile.shape.block_m == 192);
  CHECK(def.attention.tile.shape.warps == 16);
  CHECK(def.attention.tile.shape.block_n == 96);
  CHECK(problems(def).empty());
  REQUIRE(!fusesWidening(def.attention)); // (directp at D128: the widening passes)
  CHECK(attentionSharedBytes(def.attention) == 1024 + 24576 + 3 * (12288 + 17408) + 8 * 8);
  KernelSpec def_fused = def; // (+ the spare producer warps' area where the grid widens its own images)
  def_fused.attention.tile.staging.fused_widening = true;
  CHECK(attentionSharedBytes(def_fused.attention) == attentionSharedBytes(def.attention) + kWidener);
  CHECK(wgmmaStageBytes(def.attention) == 12288 + 16384);
  // Its two-consumer alternative: 192-key tiles.
  KernelSpec w192 = def;
  w192.attention.tile.shape.block_m = 128;
  w192.attention.tile.shape.warps = 12;
  w192.attention.tile.shape.block_n = 192;
  CHECK(problems(w192).empty());
  KernelSpec w = w192;
  w.attention.tile.shape.block_n = 128;
  REQUIRE(w.attention.tile.schedule.kernel == AttentionSchedule::WgmmaWarpSpecialized);
  CHECK(problems(w).empty());
  // Q [128][128] + 3 stages x (K [128][128] + V^T [128][128] + 8 row-sum rows of 128 bytes)
  // + 8 mbarriers (full/empty per stage, Q full/empty) + 1024 alignment slack.
  REQUIRE(w.attention.tile.softmax.mma_row_sum);
  CHECK(attentionSharedBytes(w.attention) == 1024 + 16384 + 3 * (32768 + 1024) + 8 * 8);
  CHECK(wgmmaStageBytes(w.attention) == 32768); // the bulk-copied image: no row-sum rows
  KernelSpec alu = w;
  alu.attention.tile.softmax.mma_row_sum = false;
  CHECK(attentionSharedBytes(alu.attention) == 1024 + 16384 + 3 * 32768 + 8 * 8);
  // D = 64 keeps 128-byte rows (half used): three consumers' Q [192] 24 KiB, K 16 KiB, V^T [64][128]
  // 8 KiB per stage.
  const KernelSpec w64 = withAttentionSchedule(defaultAttentionSpec(Route::Nvfp8, 64, true, Target::Sm90a),
                                              AttentionSchedule::WgmmaWarpSpecialized);
  REQUIRE(w64.attention.tile.shape.block_m == 192);
  CHECK(w64.attention.tile.shape.warps == 16);
  CHECK(problems(w64).empty());
  REQUIRE(!w64.attention.tile.schedule.persistent);
  CHECK(attentionSharedBytes(w64.attention) == 1024 + 24576 + w64.attention.tile.pipeline.stages * (16384 + 8192 + 1024) +
                                                   8 * (2 * w64.attention.tile.pipeline.stages + 2));
  // (causal, persistent: + the two 16-byte slots of the handed-out work tiles)
  KernelSpec w64_persistent = w64;
  w64_persistent.attention.tile.schedule.persistent = true;
  CHECK(problems(w64_persistent).empty());
  CHECK(attentionSharedBytes(w64_persistent.attention) == attentionSharedBytes(w64.attention) + 32);
  CHECK(handsOutWorkTiles(w64_persistent.attention));
  CHECK(!handsOutWorkTiles(w64.attention));
  KernelSpec w64_clusters = w64_persistent;
  w64_clusters.attention.tile.schedule.kv_multicast = true; // (pairs of m-blocks, in a static order)
  CHECK(!handsOutWorkTiles(w64_clusters.attention));
  KernelSpec bad_rows = w64;
  bad_rows.attention.tile.shape.warps = 12; // a producer warpgroup and one per 64 rows: 16
  CHECK_THAT(problems(bad_rows), Catch::Contains("attention.tile.shape.warps") && Catch::Contains("16"));
  bad_rows = w64;
  bad_rows.attention.tile.shape.block_m = 256;
  bad_rows.attention.tile.shape.warps = 20;
  CHECK_THAT(problems(bad_rows), Catch::Contains("attention.tile.shape.block_m") && Catch::Contains("128 or 192"));
  bad_rows = w64;
  bad_rows.attention.tile.staging.kv = KvStaging::InKernel; // the producer warpgroup would need registers
  bad_rows.attention.tile.schedule.persistent = false;
  CHECK_THAT(problems(bad_rows), Catch::Contains("attention.tile.shape.block_m") && Catch::Contains("one thread"));
  // The row-sum column needs FP8 P (one V^T column block) and PV's N = D + 8 within the wgmma's.
  KernelSpec wide = w;
  wide.attention.head_dim = 256;
  wide.attention.tile.shape.block_n = 64;
  wide.attention.tile.pipeline.stages = 2;
  CHECK_THAT(problems(wide), Catch::Contains("attention.tile.softmax.mma_row_sum") && Catch::Contains("head_dim <= 128"));
  CHECK_FALSE(defaultAttentionSpec(Route::DirectP, 256, false, Target::Sm90a).attention.tile.softmax.mma_row_sum);
  CHECK_FALSE(defaultAttentionSpec(Route::Bf16, 128, false, Target::Sm90a).attention.tile.softmax.mma_row_sum);
  KernelSpec sync = withAttentionSchedule(w, AttentionSchedule::MmaSync);
  sync.attention.tile.softmax.mma_row_sum = true;
  CHECK_THAT(problems(sync), Catch::Contains("attention.tile.softmax.mma_row_sum") && Catch::Contains("wgmma-ws only"));
  KernelSpec s = w;
  s.target = Target::Sm89;
  CHECK_THAT(problems(s), Catch::Contains("attention.tile.schedule.kernel") && Catch::Contains("sm_90a"));
  // The bf16 route runs BF16 wgmma on 2-byte tiles. Its non-causal default at D = 128 has three
  // consumers of 64-key tiles: Q [192][256 B] + 3 stages x (K [64][256 B] + V [64][256 B]).
  const KernelSpec wb3 = defaultAttentionSpec(Route::Bf16, 128, false, Target::Sm90a);
  CHECK(problems(wb3).empty());
  CHECK(wb3.attention.tile.shape.block_m == 192);
  CHECK(wb3.attention.tile.shape.block_n == 64);
  CHECK(attentionSharedBytes(wb3.attention) == 1024 + 49152 + 3 * 32768 + 8 * 8);
  // Two consumers of 128 keys (the causal default, the tuner's alternative):
  // Q [128][256 B] + 3 stages x (K [128][256 B] + V^T [128][256 B]).
  KernelSpec wb = wb3;
  wb.attention.tile.shape.block_m = 128;
  wb.attention.tile.shape.warps = 12;
  wb.attention.tile.shape.block_n = 128;
  CHECK(problems(wb).empty());
  CHECK(wb.attention.tile.pipeline.stages == 3);
  CHECK(attentionSharedBytes(wb.attention) == 1024 + 32768 + 3 * 65536 + 8 * 8);
  CHECK(attentionSharedBytes(wb.attention) <= 227 * 1024);
  CHECK(wgmmaStageBytes(wb.attention) == 65536);
  // 192-key tiles: FP8-fed routes at D <= 128 with prewidened K/V; V^T of two column blocks, each
  // with its 8 row-sum rows: Q + 3 x (K [192][128] + 2 x [128 + 8][128]) + 8 mbarriers + slack.
  KernelSpec keys192 = w;
  keys192.attention.tile.shape.block_n = 192;
  CHECK(problems(keys192).empty());
  CHECK(attentionSharedBytes(keys192.attention) == 1024 + 16384 + 3 * (24576 + 2 * (16384 + 1024)) + 8 * 8);
  KernelSpec keys192_fused = keys192; // (the largest shared memory with the widener area: it fits)
  keys192_fused.attention.tile.staging.fused_widening = true;
  CHECK(problems(keys192_fused).empty());
  CHECK(attentionSharedBytes(keys192_fused.attention) == attentionSharedBytes(keys192.attention) + kWidener);
  CHECK(wgmmaStageBytes(keys192.attention) == 24576 + 32768); // the image: no row-sum rows
  for (auto edit : {+[](KernelSpec &k) { k.attention.route = Route::Bf16; },
                    +[](KernelSpec &k) { k.attention.head_dim = 256; },
                    +[](KernelSpec &k) { k.attention.tile.staging.kv = KvStaging::InKernel; },
                    +[](KernelSpec &k) { k.attention.classifier.kind = ClassifierKind::Threshold; },
                    +[](KernelSpec &k) { k.attention.tile.bench_ablation = StageAblation::SoftmaxTwice; }}) {
    KernelSpec bad = keys192;
    edit(bad);
    CHECK_THAT(problems(bad), Catch::Contains("attention.tile.shape.block_n") && Catch::Contains("192"));
  }
  keys192.attention.classifier.kind = ClassifierKind::Affine; // fits
  CHECK(problems(keys192).empty());
  // 80-key tiles: the bf16 route at D = 256 with tensor-map K/V, whose V lies [keys][D] like K:
  // Q [128][512 B] + 2 x (K [80][512 B] + V [80][512 B]) + 6 mbarriers + slack = 225.05 KiB.
  const KernelSpec keys80 = withAttentionSchedule(defaultAttentionSpec(Route::Bf16, 256, false, Target::Sm90a),
                                                 AttentionSchedule::WgmmaWarpSpecialized);
  REQUIRE(keys80.attention.tile.shape.block_n == 80);
  CHECK(problems(keys80).empty());
  CHECK(wgmmaStageBytes(keys80.attention) == 2 * 40960);
  CHECK(attentionSharedBytes(keys80.attention) == 1024 + 65536 + 2 * 81920 + 8 * 6);
  CHECK(attentionSharedBytes(keys80.attention) <= 227 * 1024);
  for (auto edit : {+[](KernelSpec &k) { k.attention.route = Route::Nvfp8; },
                    +[](KernelSpec &k) { k.attention.head_dim = 128; },
                    +[](KernelSpec &k) { k.attention.tile.staging.kv = KvStaging::Prewidened; }}) {
    KernelSpec bad = keys80;
    edit(bad);
    if (bad.attention.route != Route::Bf16)
      bad.attention.tile.staging.kv = KvStaging::Prewidened; // (tensor maps are bf16's alone)
    CHECK_THAT(problems(bad), Catch::Contains("attention.tile.shape.block_n") && Catch::Contains("80"));
  }
  KernelSpec keys80_sync = withAttentionSchedule(keys80, AttentionSchedule::MmaSync);
  keys80_sync.attention.tile.shape.block_n = 80; // not a whole number of 32-key k-steps there
  CHECK_THAT(problems(keys80_sync), Catch::Contains("attention.tile.shape.block_n") && Catch::Contains("multiple of 32"));
  // The persistent grid (the sm_90a default) needs the one-thread producer of prewidened tiles.
  CHECK(w.attention.tile.schedule.persistent);
  s = w;
  s.attention.tile.staging.kv = KvStaging::InKernel;
  CHECK_THAT(problems(s), Catch::Contains("attention.tile.schedule.persistent") && Catch::Contains("prewidened"));
  s.attention.tile.schedule.persistent = false;
  CHECK(problems(s).empty());
  // Two-CTA clusters sharing each K/V stage: the persistent grid with a one-thread producer only.
  KernelSpec mc = w;
  mc.attention.tile.schedule.kv_multicast = true;
  CHECK(problems(mc).empty());
  mc.attention.tile.schedule.persistent = false;
  CHECK_THAT(problems(mc), Catch::Contains("attention.tile.schedule.kv_multicast") && Catch::Contains("persistent"));
  mc.attention.tile.schedule.persistent = true;
  mc.attention.tile.staging.kv = KvStaging::InKernel;
  CHECK_THAT(problems(mc), Catch::Contains("attention.tile.schedule.kv_multicast"));
  KernelSpec mcb = withAttentionSchedule(defaultAttentionSpec(Route::Bf16, 128, false, Target::Sm90a),
                                         AttentionSchedule::WgmmaWarpSpecialized);
  REQUIRE(mcb.attention.tile.staging.kv == KvStaging::TensorMap);
  mcb.attention.tile.schedule.kv_multicast = true; // (wrong rows on the H200: refused)
  CHECK_THAT(problems(mcb), Catch::Contains("attention.tile.schedule.kv_multicast") && Catch::Contains("tensor-map"));
  // Tensor maps: the bf16 route's own tensors only (FP4 K/V must be widened to E4M3).
  s = w;
  s.attention.tile.staging.kv = KvStaging::TensorMap;
  CHECK_THAT(problems(s), Catch::Contains("attention.tile.staging.kv") && Catch::Contains("bf16 route only"));
  REQUIRE(wb.attention.tile.staging.kv == KvStaging::TensorMap); // the bf16 default on sm_90a
  CHECK(wb.attention.tile.schedule.persistent);                          // its one producer thread loads every Q too
  CHECK(problems(wb).empty());
  s = wb;
  s.attention.tile.staging.kv = KvStaging::Prewidened; // the repacked tiles: the tuner's alternative
  CHECK(problems(s).empty());
  s.attention.tile.schedule.persistent = false;
  CHECK(problems(s).empty());
  s = sync;
  s.attention.tile.softmax.mma_row_sum = false;
  s.attention.tile.schedule.persistent = true;
  CHECK_THAT(problems(s), Catch::Contains("attention.tile.schedule.persistent") && Catch::Contains("wgmma-ws only"));
  s = wb;
  s.attention.tile.staging.kv = KvStaging::InKernel; // no in-kernel V transpose
  CHECK_THAT(problems(s), Catch::Contains("attention.tile.staging.kv") && Catch::Contains("bf16") &&
                              Catch::Contains("tensor-map"));
  s = wb;
  s.attention.tile.pipeline.stages = 4; // 1 KiB + 32 KiB + 4 x 64 KiB > 227 KiB (3 stages fit, barely)
  CHECK_THAT(problems(s), Catch::Contains("shared memory"));
  s = w;
  s.attention.operands.qk_widening = Widening::Bf16;
  CHECK_THAT(problems(s), Catch::Contains("e4m3"));
  s = w;
  s.attention.tile.shape.block_m = 64;
  CHECK_THAT(problems(s), Catch::Contains("attention.tile.shape.block_m: 64") && Catch::Contains("128"));
  s = w;
  s.attention.tile.shape.warps = 8;
  CHECK_THAT(problems(s), Catch::Contains("attention.tile.shape.warps: 8"));
  s = w;
  s.attention.tile.shape.block_n = 160;
  CHECK_THAT(problems(s), Catch::Contains("attention.tile.shape.block_n: 160"));
  s = w;
  s.attention.tile.shape.block_n = 96; // FP8-fed routes at D128 (the widening pass's rounds)
  CHECK(problems(s).empty() == (s.attention.route != Route::Bf16 && s.attention.head_dim == 128));
  s.attention.head_dim = 64;
  CHECK_THAT(problems(s), Catch::Contains("attention.tile.shape.block_n") && Catch::Contains("96"));
  s = w;
  s.attention.tile.pipeline.stages = 5;
  CHECK_THAT(problems(s), Catch::Contains("attention.tile.pipeline.stages: 5"));
  // Moving between schedules resets the tiles to that schedule's and keeps the numerics.
  const KernelSpec m = withAttentionSchedule(w, AttentionSchedule::MmaSync);
  CHECK(m.attention.tile.shape.block_m == 16 * m.attention.tile.shape.warps);
  CHECK(problems(m).empty());
  CHECK(m.attention.route == w.attention.route);
  // Every route defaults to wgmma-ws on sm_90a; the bf16 route keeps mma.sync elsewhere.
  CHECK(defaultAttentionSpec(Route::Bf16, 128, false, Target::Sm90a).attention.tile.schedule.kernel ==
        AttentionSchedule::WgmmaWarpSpecialized);
  CHECK(defaultAttentionSpec(Route::Bf16, 128, false, Target::Sm89).attention.tile.schedule.kernel ==
        AttentionSchedule::MmaSync);
  // BF16 at D = 256 runs the serial consumer loop (measured faster), its consumers taking turns
  // at each QK^T and PV (measured +4-7%), causal too; the FP8-fed routes' serial loop does not.
  const TileSpec b256 = defaultAttentionSpec(Route::Bf16, 256, false, Target::Sm90a).attention.tile;
  CHECK_FALSE(b256.pipeline.overlap);
  CHECK(b256.pipeline.pingpong);
  CHECK(defaultAttentionSpec(Route::Bf16, 256, true, Target::Sm90a).attention.tile.pipeline.pingpong);
  CHECK_FALSE(defaultAttentionSpec(Route::Nvfp8, 256, false, Target::Sm90a).attention.tile.pipeline.pingpong);
  CHECK(b256.pipeline.stages == 2);
}

TEST_CASE("widening must exist on the target", "[codegen][validate]") {
  KernelSpec s = directp(Target::Sm90a);
  s.attention.operands.qk_widening = Widening::Native;
  CHECK_THAT(problems(s), Catch::Contains("attention.operands.qk_widening") && Catch::Contains("sm_100a"));
  KernelSpec native = directp(Target::Sm100a);
  native.attention.operands.qk_widening = Widening::Native;
  CHECK(problems(native).empty());
  KernelSpec old = defaultAttentionSpec(Route::Nvfp8, 128, false, Target::Sm80);
  old.attention.operands.v_widening = Widening::E4m3;
  CHECK_THAT(problems(old), Catch::Contains("attention.operands.v_widening") && Catch::Contains("sm_89"));
  KernelSpec fp8v = defaultAttentionSpec(Route::Nvfp8, 128, false, Target::Sm100a);
  fp8v.attention.operands.v_widening = Widening::Native;
  CHECK_THAT(problems(fp8v), Catch::Contains("FP8 already"));
  s = directp();
  s.attention.operands.qk_widen_shift = 2;
  CHECK_THAT(problems(s), Catch::Contains("attention.operands.qk_widen_shift"));
}

TEST_CASE("P offset plus guard slack must keep FP8 P finite", "[codegen][validate]") {
  KernelSpec s = directp();
  s.attention.guard.slack_log2 = 0.5f;
  s.attention.operands.p_offset_log2 = 8;
  CHECK_THAT(problems(s), Catch::Contains("attention.operands.p_offset_log2") && Catch::Contains("448"));
  s.attention.operands.p_offset_log2 = 7;
  CHECK(problems(s).empty());
  s.attention.guard.slack_log2 = 1.0f;
  CHECK(problems(s).empty());
  s.attention.guard.slack_log2 = 1.01f;
  CHECK(!problems(s).empty());
  // Native Direct-P feeds P through UE8M0 scales: no FP8 offset, no such limit.
  KernelSpec n = directp(Target::Sm100a);
  n.attention.operands.qk_widening = n.attention.operands.v_widening = Widening::Native;
  n.attention.guard.slack_log2 = 4.0f;
  CHECK(problems(n).empty());
  // Online-exact guard has no slack.
  KernelSpec o = directp();
  o.attention.guard.kind = GuardKind::OnlineExact;
  o.attention.guard.slack_log2 = 5.0f;
  CHECK(problems(o).empty());
  KernelSpec st = directp();
  st.attention.guard.sample_stride = 3;
  CHECK_THAT(problems(st), Catch::Contains("attention.guard.sample_stride"));
}

TEST_CASE("classifier constants must describe a monotone classifier", "[codegen][validate]") {
  KernelSpec s = directp();
  s.attention.classifier.kind = ClassifierKind::Threshold;
  s.attention.classifier.thresholds[4] = s.attention.classifier.thresholds[3];
  CHECK_THAT(problems(s), Catch::Contains("attention.classifier.thresholds") && Catch::Contains("element 4"));
  // Piecewise: FP16 values (zero or normal), slopes > 0.
  s = directp();
  REQUIRE(s.attention.classifier.kind == ClassifierKind::Piecewise);
  CHECK(problems(s).empty());
  s.attention.classifier.pieces[1] = 0.1f; // not an FP16 value
  CHECK_THAT(problems(s), Catch::Contains("attention.classifier.pieces") && Catch::Contains("element 1") &&
                              Catch::Contains("lower offset"));
  s = directp();
  s.attention.classifier.pieces[2] = -0.25f;
  CHECK_THAT(problems(s), Catch::Contains("element 2 (upper slope)") && Catch::Contains("must be > 0"));
  s = directp();
  s.attention.classifier.pieces[0] = 0x1p-20f; // an FP16 subnormal: not baked exactly
  CHECK_THAT(problems(s), Catch::Contains("element 0 (lower slope)"));
  s = directp();
  s.attention.classifier.pieces[3] = std::numeric_limits<float>::infinity();
  CHECK_THAT(problems(s), Catch::Contains("element 3 (upper offset)"));
  s = directp();
  s.attention.classifier.pieces[3] = 0.0f; // zero offset is an FP16 value
  CHECK(problems(s).empty());
  s = directp();
  s.attention.classifier.kind = ClassifierKind::Affine;
  s.attention.classifier.alpha = -2.0f;
  CHECK_THAT(problems(s), Catch::Contains("attention.classifier.alpha"));
  s.attention.classifier.alpha = 2.0f;
  s.attention.classifier.beta = INFINITY;
  CHECK_THAT(problems(s), Catch::Contains("attention.classifier.beta"));
  // The classifier of another route is not looked at.
  KernelSpec n = defaultAttentionSpec(Route::Nvfp8, 128, false, Target::Sm90a);
  n.attention.classifier.alpha = -1.0f;
  CHECK(problems(n).empty());
}

TEST_CASE("TMEM plan columns must fit the allocation", "[codegen][validate]") {
  KernelSpec s = directp(Target::Sm100a);
  s.attention.tmem = {384, {0, 128}, {256, 384}, -1};
  CHECK_THAT(problems(s), Catch::Contains("attention.tmem.columns_allocated"));
  s.attention.tmem = {512, {0, 128}, {256, 512}, -1};
  CHECK_THAT(problems(s), Catch::Contains("column 512"));
  s.attention.tmem = {512, {0, 128}, {256, 384}, 500};
  CHECK(problems(s).empty());
}

TEST_CASE("quantizer rules", "[codegen][validate]") {
  KernelSpec q = defaultQuantizeSpec(QuantFormat::Nvfp4, 128, Target::Sm90a);
  q.quantize.layout = QuantLayout::Transposed;
  CHECK_THAT(problems(q), Catch::Contains("quantize.layout"));
  q = defaultQuantizeSpec(QuantFormat::Nvfp4, 128, Target::Sm90a);
  q.quantize.keys_permuted16 = true;
  CHECK_THAT(problems(q), Catch::Contains("quantize.keys_permuted16"));
  q = defaultQuantizeSpec(QuantFormat::Mxfp4, 128, Target::Sm90a);
  q.quantize.layout = QuantLayout::RowMajorK;
  CHECK_THAT(problems(q), Catch::Contains("quantize.layout") && Catch::Contains("transposed"));
  q = defaultQuantizeSpec(QuantFormat::Bf16, 128, Target::Sm90a);
  CHECK_THAT(problems(q), Catch::Contains("quantize.format"));
  q = defaultQuantizeSpec(QuantFormat::Fp8PerHead, 64, Target::Sm90a);
  q.quantize.threads = 512; // V^T tile of 128 rows x 129 floats would not fit static shared memory
  CHECK_THAT(problems(q), Catch::Contains("quantize.threads"));
  q.quantize.threads = 96;
  CHECK_THAT(problems(q), Catch::Contains("quantize.threads: 96"));
  q = defaultQuantizeSpec(QuantFormat::Nvfp4, 512, Target::Sm90a);
  CHECK_THAT(problems(q), Catch::Contains("quantize.head_dim"));
  q = defaultQuantizeSpec(QuantFormat::Nvfp4, 64, Target::Sm90a);
  q.quantize.threads = 512; // NVFP4 rows: 128 rows per CTA still tile the scale atoms
  CHECK(problems(q).empty());
  q = defaultQuantizeSpec(QuantFormat::Mxfp4, 64, Target::Sm90a, QuantInput::F16);
  CHECK(problems(q).empty());
  q.quantize.input_fp32 = true;
  CHECK_THAT(problems(q), Catch::Contains("quantize.input_fp16: the input is FP32 or FP16, not both"));
}

TEST_CASE("validateSpec lists every violation", "[codegen][validate]") {
  KernelSpec s = directp();
  s.attention.head_dim = 100;
  s.attention.tile.shape.block_n = 33;
  llvm::Error e = validateSpec(s);
  REQUIRE(static_cast<bool>(e));
  const std::string msg = llvm::toString(std::move(e));
  CHECK_THAT(msg, Catch::Contains("sm_90a") && Catch::Contains("attention.head_dim") &&
                      Catch::Contains("attention.tile.shape.block_n"));
}

TEST_CASE("wgmma consumer order, ping-pong, K/V staging and ablations", "[codegen][validate]") {
  const KernelSpec w = defaultAttentionSpec(Route::Nvfp8, 128, false, Target::Sm90a);
  REQUIRE(w.attention.tile.pipeline.overlap);
  REQUIRE(w.attention.tile.pipeline.pingpong);
  REQUIRE(w.attention.tile.staging.kv == KvStaging::Prewidened);
  CHECK(problems(w).empty());
  KernelSpec s = w;
  s.attention.tile.pipeline.stages = 1; // overlap holds two stages
  CHECK_THAT(problems(s), Catch::Contains("attention.tile.pipeline.stages") && Catch::Contains("overlap"));
  s = w;
  s.attention.causal = true; // causal consumers take turns where their tile counts agree
  CHECK(problems(s).empty());
  CHECK_FALSE(defaultAttentionSpec(Route::Nvfp8, 128, true, Target::Sm90a).attention.tile.pipeline.pingpong); // measured
  s = w;
  s.attention.tile.pipeline.overlap = false; // the serial loop takes turns too: at each QK^T and each PV
  CHECK(problems(s).empty());
  // The choices exist on wgmma-ws only.
  const KernelSpec mma = defaultAttentionSpec(Route::Bf16, 128, false, Target::Sm89);
  REQUIRE(mma.attention.tile.schedule.kernel == AttentionSchedule::MmaSync);
  KernelSpec m = mma;
  m.attention.tile.bench_ablation = StageAblation::SkipPv;
  CHECK_THAT(problems(m), Catch::Contains("attention.tile.bench_ablation"));
  m = mma;
  m.attention.tile.staging.kv = KvStaging::Prewidened;
  CHECK_THAT(problems(m), Catch::Contains("attention.tile.staging.kv"));
  m.attention.tile.staging.kv = KvStaging::TensorMap;
  CHECK_THAT(problems(m), Catch::Contains("attention.tile.staging.kv") && Catch::Contains("wgmma-ws only"));
  m = mma;
  m.attention.tile.pipeline.pingpong = true;
  CHECK_THAT(problems(m), Catch::Contains("attention.tile.pipeline.pingpong"));
  s = w;
  s.attention.tile.bench_ablation = StageAblation::SoftmaxTwice; // spills beside three consumers' 160 registers
  CHECK_THAT(problems(s), Catch::Contains("attention.tile.shape.block_m") && Catch::Contains("softmax-twice"));
  s.attention.tile.shape.block_m = 128;
  s.attention.tile.shape.warps = 12;
  CHECK(problems(s).empty());
  // Three consumers of 96-key tiles (FP32 scores) need the turns in the non-causal overlapped loop
  // (spilled without).
  s = withScoresFp16(w, false);
  REQUIRE(s.attention.tile.shape.block_m == 192);
  REQUIRE(s.attention.tile.shape.block_n == 128); // (FP16 scores' tile: refused with FP32 ones)
  CHECK_THAT(problems(s), Catch::Contains("block_n <= 96"));
  s.attention.tile.shape.block_n = 96;
  CHECK(problems(s).empty());
  s.attention.tile.pipeline.pingpong = false;
  CHECK_THAT(problems(s), Catch::Contains("attention.tile.shape.block_m") && Catch::Contains("pingpong"));
  s.attention.tile.shape.block_n = 64;
  CHECK(problems(s).empty());
  s = withScoresFp16(w, false);
  s.attention.tile.shape.block_n = 96;
  s.attention.causal = true; // the causal kernels run free by default, and fit
  s.attention.tile.pipeline.pingpong = false;
  CHECK(problems(s).empty());
  // bf16's three consumers of 128 keys at D64 spilled 8 bytes without the turns (with its guard slack).
  KernelSpec b = defaultAttentionSpec(Route::Bf16, 64, false, Target::Sm90a);
  REQUIRE(b.attention.tile.shape.block_m == 192);
  REQUIRE(b.attention.tile.shape.block_n == 128);
  CHECK(problems(b).empty());
  b.attention.tile.pipeline.pingpong = false;
  CHECK_THAT(problems(b), Catch::Contains("attention.tile.shape.block_m") && Catch::Contains("pingpong"));
  b.attention.tile.shape.block_n = 64;
  CHECK(problems(b).empty());
}

TEST_CASE("thread key blocks: directp's wgmma kernel on 128-key tiles with fa4jit-widened K/V", "[codegen][validate]") {
  const KernelSpec d64 = defaultAttentionSpec(Route::DirectP, 64, false, Target::Sm90a);
  REQUIRE(d64.attention.tile.softmax.thread_key_blocks);
  CHECK(problems(d64).empty());
  KernelSpec nv = defaultAttentionSpec(Route::Nvfp8, 64, false, Target::Sm90a);
  nv.attention.tile.softmax.thread_key_blocks = true;
  CHECK_THAT(problems(nv), Catch::Contains("attention.tile.softmax.thread_key_blocks") && Catch::Contains("directp route only"));
  KernelSpec keys64 = d64;
  keys64.attention.tile.shape.block_n = 64;
  CHECK_THAT(problems(keys64), Catch::Contains("attention.tile.softmax.thread_key_blocks") && Catch::Contains("128-key tiles"));
  KernelSpec permuted = d64;
  permuted.attention.operands.v_keys_permuted16 = true;
  CHECK_THAT(problems(permuted), Catch::Contains("v_keys_permuted16 false"));
  KernelSpec sync = directp();
  sync.attention.tile.softmax.thread_key_blocks = true;
  CHECK_THAT(problems(sync), Catch::Contains("attention.tile.softmax.thread_key_blocks") && Catch::Contains("wgmma-ws only"));
  // D128: three consumers take 128 keys with thread blocks on the serial loop only with FP32 scores
  // (the overlapped loop spills there), on either loop with FP16 ones (the default); two
  // consumers on either loop.
  KernelSpec three = defaultAttentionSpec(Route::DirectP, 128, false, Target::Sm90a);
  REQUIRE(three.attention.tile.shape.block_m == 192);
  REQUIRE(three.attention.tile.shape.block_n == 128);
  REQUIRE(three.attention.tile.softmax.thread_key_blocks);
  CHECK(problems(three).empty());
  three = withScoresFp16(three, false);
  CHECK_THAT(problems(three), Catch::Contains("attention.tile.shape.block_m"));
  three.attention.tile.pipeline.overlap = false;
  three.attention.tile.pipeline.pingpong = false;
  CHECK(problems(three).empty());
  three.attention.tile.softmax.thread_key_blocks = false; // quad blocks of 128 keys spill on three consumers
  CHECK_THAT(problems(three), Catch::Contains("attention.tile.shape.block_m"));
  KernelSpec two = defaultAttentionSpec(Route::DirectP, 128, false, Target::Sm90a);
  two.attention.tile.shape.block_m = 128;
  two.attention.tile.shape.warps = 12;
  two.attention.tile.shape.block_n = 128;
  two.attention.tile.softmax.thread_key_blocks = true;
  CHECK(problems(two).empty());
}

// FP16 scores (TileSpec::scores_fp16): directp's default on sm_90a, with the widening shift that
// keeps |S| below 65504 (7, 8 at D256); refused elsewhere and with a smaller shift.
TEST_CASE("FP16 scores: directp's wgmma kernel with Q/K widened by 2^-7 (2^-8 at D256)", "[codegen][validate]") {
  for (int d : {64, 128, 256})
    for (bool causal : {false, true}) {
      const KernelSpec s = defaultAttentionSpec(Route::DirectP, d, causal, Target::Sm90a);
      CHECK(s.attention.tile.softmax.scores_fp16);
      CHECK(s.attention.operands.qk_widen_shift == minScoresFp16WidenShift(d));
      CHECK(problems(s).empty());
      const KernelSpec fp32 = withScoresFp16(s, false);
      CHECK_FALSE(fp32.attention.tile.softmax.scores_fp16);
      CHECK(fp32.attention.operands.qk_widen_shift == 3);
      CHECK(problems(fp32).empty() == (d != 128)); // (D128's 128 keys on three consumers need FP16 S)
      const KernelSpec sync = withAttentionSchedule(s, AttentionSchedule::MmaSync);
      CHECK_FALSE(sync.attention.tile.softmax.scores_fp16);
      CHECK(sync.attention.operands.qk_widen_shift == 3);
    }
  KernelSpec low = defaultAttentionSpec(Route::DirectP, 128, false, Target::Sm90a);
  low.attention.operands.qk_widen_shift = 6;
  CHECK_THAT(problems(low), Catch::Contains("attention.tile.softmax.scores_fp16") && Catch::Contains("qk_widen_shift >= 7"));
  KernelSpec d256 = defaultAttentionSpec(Route::DirectP, 256, false, Target::Sm90a);
  d256.attention.operands.qk_widen_shift = 7;
  CHECK_THAT(problems(d256), Catch::Contains("qk_widen_shift >= 8"));
  d256.attention.operands.qk_widen_shift = 8;
  d256.attention.classifier.kind = ClassifierKind::Threshold;
  CHECK_THAT(problems(d256), Catch::Contains("attention.tile.softmax.scores_fp16") && Catch::Contains("threshold"));
  // nvfp8 takes FP16 scores too, and with them 128-key tiles on D128's three consumers; bf16 not.
  KernelSpec nv = withScoresFp16(defaultAttentionSpec(Route::Nvfp8, 128, false, Target::Sm90a), true);
  CHECK(problems(nv).empty());
  nv.attention.tile.shape.block_m = 192;
  nv.attention.tile.shape.warps = 16;
  nv.attention.tile.shape.block_n = 128;
  CHECK(problems(nv).empty());
  CHECK_THAT(problems(withScoresFp16(nv, false)), Catch::Contains("block_n <= 96"));
  KernelSpec bf = defaultAttentionSpec(Route::Bf16, 128, false, Target::Sm90a);
  bf.attention.tile.softmax.scores_fp16 = true;
  CHECK_THAT(problems(bf), Catch::Contains("attention.tile.softmax.scores_fp16") && Catch::Contains("FP8-fed routes only"));
  // The piecewise pieces folded onto S (the directp default): where there is nothing to fold
  // (FP32 scores, another classifier, another route) the spec stays valid and canonicalize()
  // clears the flag, so the kernel and its cache key are those of the unfolded spec.
  KernelSpec fold = defaultAttentionSpec(Route::DirectP, 128, false, Target::Sm90a);
  REQUIRE(fold.attention.tile.softmax.pieces_from_scores);
  CHECK(problems(fold).empty());
  CHECK(canonicalize(fold).attention.tile.softmax.pieces_from_scores);
  KernelSpec fold_threshold = fold;
  fold_threshold.attention.classifier.kind = ClassifierKind::Threshold;
  fold_threshold.attention.tile.shape.block_n = 128; // (the threshold classifier's tile: two consumers)
  fold_threshold.attention.tile.shape.block_m = 128;
  fold_threshold.attention.tile.shape.warps = 12;
  CHECK(problems(fold_threshold).empty());
  for (const KernelSpec &inert : {withScoresFp16(fold, false), fold_threshold}) {
    CHECK_FALSE(canonicalize(inert).attention.tile.softmax.pieces_from_scores);
    KernelSpec unfolded = inert;
    unfolded.attention.tile.softmax.pieces_from_scores = false;
    CHECK(specHash(inert) == specHash(unfolded));
  }
  KernelSpec fold_nv = defaultAttentionSpec(Route::Nvfp8, 128, false, Target::Sm90a);
  fold_nv.attention.tile.softmax.pieces_from_scores = true;
  CHECK(problems(fold_nv).empty());
  CHECK_FALSE(canonicalize(fold_nv).attention.tile.softmax.pieces_from_scores);
  // Fused widening (the FP8-fed defaults): only the persistent grid with prewidened images and no
  // clusters has passes to fuse; elsewhere the spec stays valid, canonicalize() clears the flag and
  // the kernel (and its cache key) is the one with passes.
  KernelSpec fused = defaultAttentionSpec(Route::DirectP, 256, false, Target::Sm90a);
  REQUIRE(fused.attention.tile.staging.fused_widening);
  CHECK(problems(fused).empty());
  CHECK(canonicalize(fused).attention.tile.staging.fused_widening);
  KernelSpec per_tile = fused, clusters = fused, bf16 = defaultAttentionSpec(Route::Bf16, 256, false, Target::Sm90a);
  per_tile.attention.tile.schedule.persistent = false;
  clusters.attention.tile.schedule.kv_multicast = true;
  bf16.attention.tile.staging.fused_widening = true;
  for (const KernelSpec &inert : {per_tile, clusters, bf16}) {
    CHECK(problems(inert).empty());
    CHECK_FALSE(canonicalize(inert).attention.tile.staging.fused_widening);
    KernelSpec passes = inert;
    passes.attention.tile.staging.fused_widening = false;
    CHECK(specHash(inert) == specHash(passes));
  }
  KernelSpec passes = fused;
  passes.attention.tile.staging.fused_widening = false;
  CHECK(specHash(passes) != specHash(fused));
  // nvfp8's exp2 polynomial: FP16 scores only, at most block_n / 8 tiles.
  KernelSpec poly = defaultAttentionSpec(Route::Nvfp8, 128, false, Target::Sm90a);
  REQUIRE(poly.attention.tile.softmax.scores_fp16);
  poly.attention.tile.softmax.exp2_poly_tiles = poly.attention.tile.shape.block_n / 8;
  CHECK(problems(poly).empty());
  KernelSpec poly_over = poly;
  poly_over.attention.tile.softmax.exp2_poly_tiles += 1;
  CHECK_THAT(problems(poly_over), Catch::Contains("attention.tile.softmax.exp2_poly_tiles") && Catch::Contains("block_n / 8"));
  poly_over.attention.tile.softmax.exp2_poly_tiles = -1;
  CHECK_THAT(problems(poly_over), Catch::Contains("attention.tile.softmax.exp2_poly_tiles"));
  KernelSpec poly_fp32 = poly;
  poly_fp32.attention.tile.softmax.scores_fp16 = false;
  poly_fp32.attention.operands.qk_widen_shift = 3;
  CHECK_THAT(problems(poly_fp32), Catch::Contains("attention.tile.softmax.exp2_poly_tiles") && Catch::Contains("FP16 scores"));
  CHECK(withScoresFp16(poly, false).attention.tile.softmax.exp2_poly_tiles == 0);
  KernelSpec poly_dp = fold;
  poly_dp.attention.tile.softmax.exp2_poly_tiles = 2;
  CHECK_THAT(problems(poly_dp), Catch::Contains("attention.tile.softmax.exp2_poly_tiles") && Catch::Contains("nvfp8"));
  KernelSpec sync = defaultAttentionSpec(Route::DirectP, 128, false, Target::Sm90a);
  sync.attention.tile.schedule.kernel = AttentionSchedule::MmaSync;
  sync.attention.tile.pipeline.overlap = sync.attention.tile.pipeline.pingpong = sync.attention.tile.softmax.mma_row_sum = false;
  sync.attention.tile.schedule.persistent = false;
  sync.attention.tile.staging.kv = KvStaging::InKernel;
  sync.attention.tile.shape.block_m = 64;
  sync.attention.tile.shape.warps = 4;
  sync.attention.tile.shape.block_n = 64;
  sync.attention.tile.softmax.thread_key_blocks = false;
  CHECK_THAT(problems(sync), Catch::Contains("attention.tile.softmax.scores_fp16") && Catch::Contains("wgmma-ws only"));
}
