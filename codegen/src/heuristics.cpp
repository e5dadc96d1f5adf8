// Default specs per (route, head dim, causal, target) and the enumeration of every variant.
#include "fa4jit/codegen/heuristics.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <string>

#include "fa4jit/codegen/emitter.h"
#include "fa4jit/codegen/resource_model.h"
#include "fa4jit/codegen/sm100_attention.h"
#include "fa4jit/codegen/spec_io.h"
#include "fa4jit/codegen/spec_validate.h"

namespace fa4jit {
namespace {

constexpr Target kAllTargets[] = {Target::Sm80, Target::Sm89, Target::Sm90a, Target::Sm100a};
constexpr int kHeadDims[] = {64, 128, 256};
constexpr Route kAllRoutes[] = {Route::Bf16, Route::Nvfp8, Route::DirectP};

bool hasFp8TensorCores(Target t) { return t != Target::Sm80; }

} // namespace

namespace {

// The mma.sync attention template: 16 query rows per warp, 4 warps, one stage. Key tiles as wide
// as the registers allow without spilling: wider tiles amortize the per-tile barriers, but S
// (block_n / 4 FP32 registers per thread) sits beside O (head_dim / 2). Measured with NVRTC 13.0
// for sm_90a (fa4jit compile --json): nvfp8 at D64 with 128 keys spills 8-20 bytes under its
// 168-register cap, and D256 with 64 keys reaches 255 registers and spills 64 bytes (bf16, and
// nvfp8 causal), so those take half the keys.
TileSpec mmaSyncTiles(Route route, int head_dim) {
  TileSpec t;
  t.shape.warps = 4;
  t.shape.block_m = 16 * t.shape.warps;
  t.pipeline.stages = 1;
  t.schedule.kernel = AttentionSchedule::MmaSync;
  if (head_dim <= 64)
    t.shape.block_n = route == Route::Nvfp8 ? 64 : 128;
  else if (head_dim <= 128)
    t.shape.block_n = 64;
  else
    t.shape.block_n = 32;
  return t;
}

} // namespace

void applyRouteNumericsDefaults(AttentionSpec &a) {
  a.guard = RangeGuardSpec{};
  a.operands.p_offset_log2 = OperandSpec{}.p_offset_log2;
  // nvfp8: O and l are rescaled only when a tile's max passes the row max by more than 3 (log2
  // units): rows then rescale a few times instead of at every new maximum (FlashAttention-4's
  // conditional rescaling), and P <= 2^3 is fed with offset 5 to stay within E4M3 (448). Measured
  // on the H200 (seventh session, call 1, wgmma kernels at D128, 4k / 16k / 32k): +4% / +3% / +9%
  // non-causal and +5% / +8% / +4% causal over slack 0; slack 1 and 2 gained less. Direct-P
  // keeps slack 0: it measured -2% to +4% there, and its lower offset would move the fast path's
  // floor (blocks within 2^-11 of the row max, p_directp.cuh) to 2^-8.
  if (a.route == Route::Nvfp8)
    setGuardSlack(a, kNvfp8GuardSlackLog2);
  // bf16: P = exp2(x) rounded to BF16 has the same relative precision at any x <= 8, and l and O
  // are FP32, so a slack of 8 log2 units costs nothing numerically and leaves only the rare row
  // whose tile max passes its anchor by 2^8 to rescale (at slack 0 a row rescaled at most new
  // maxima: at D256 128 FMULs per thread on the serial loop's path to PV). Measured on the H200
  // (twelfth session, call 2, wgmma kernels, 4k / 16k, means of two passes in reversed order):
  // D64 +2% / +3%, D128 +7% / -3%, D256 +11% / +3% over slack 0 (the call's spread was +-5%).
  if (a.route == Route::Bf16)
    setGuardSlack(a, kBf16GuardSlackLog2);
}

void setGuardSlack(AttentionSpec &a, float slack_log2) {
  a.guard.kind = GuardKind::SampledAnchor;
  a.guard.slack_log2 = slack_log2;
  if (a.route != Route::Bf16)
    a.operands.p_offset_log2 = kMaxFp8POffsetPlusSlack - static_cast<int>(std::ceil(slack_log2));
}

KernelSpec defaultAttentionSpec(Route route, int head_dim, bool causal, Target target) {
  KernelSpec s;
  s.family = KernelFamily::AttentionForward;
  s.target = target;
  AttentionSpec &a = s.attention;
  a.route = route;
  a.head_dim = head_dim;
  a.causal = causal;
  a.tile = mmaSyncTiles(route, head_dim);
  // FP8 tensor cores from sm_89 on: NVFP4 Q/K widen to E4M3 (one rounding, NUMERICS §2.1) and
  // V/P are fed as E4M3. Without them (sm_80) only the bf16 route exists; its operand fields are
  // unused and keep their defaults.
  a.operands.qk_widening = hasFp8TensorCores(target) ? Widening::E4m3 : Widening::Bf16;
  a.operands.v_widening = hasFp8TensorCores(target) ? Widening::E4m3 : Widening::Bf16;
  // Piecewise classifier: every code boundary within 1% of P of exp2 + round-to-nearest's (the
  // threshold classifier's accuracy, cosine 0.972, NUMERICS.md §2.3) at a third of the threshold
  // search's instructions (FP16 pairs: two HFMA2.SAT, an HMNMX2 and an HFMA2 per two keys).
  // (Other routes keep ClassifierSpec's defaults, which canonicalize() restores for them.)
  a.classifier = ClassifierSpec{};
  if (route == Route::DirectP)
    a.classifier.kind = ClassifierKind::Piecewise;
  applyRouteNumericsDefaults(a);
  // Blackwell feeds NVFP4 Q/K (and MXFP4 P/V) to block-scaled tcgen05 MMAs, TMEM from the planner.
  if (target == Target::Sm100a && route != Route::Bf16)
    return withTcgen05Kernel(s);
  // sm_90a: the warp-specialized wgmma kernel, 2-4x the mma.sync kernel on the H200 for every
  // route (docs/PERF.md). FP8 wgmma accumulates S and O with ~14 significant bits, so its LSE
  // follows the model to a few 1e-3 rather than 1e-5 (test_gpu_forward's per-schedule bounds);
  // BF16 wgmma accumulates in FP32.
  if (target == Target::Sm90a)
    return withAttentionSchedule(s, AttentionSchedule::WgmmaWarpSpecialized);
  return s;
}

KernelSpec withAttentionSchedule(KernelSpec s, AttentionSchedule schedule) {
  TileSpec &t = s.attention.tile;
  const int d = s.attention.head_dim;
  t.schedule.kernel = schedule;
  if (schedule == AttentionSchedule::MmaSync) {
    t = mmaSyncTiles(s.attention.route, d);
    return withScoresFp16(s, false); // (FP32 scores: the default widening shift)
  }
  // wgmma: 2 consumer warpgroups x 64 rows + a producer warpgroup (3 at D = 64, below). S (block_n / 2 FP32 registers
  // per thread) next to O (D / 2). At D = 256 the FP8-fed routes take 128 keys too (S of 64
  // registers beside O's 128 in the serial loop, no spills under NVRTC 13.0): each QK^T wgmma of
  // N = 64 reads as many shared-memory bytes per FLOP as the SM can deliver, N = 128 half of that.
  // Measured on the H200 (eighth session, calls 1-2; 4k / 16k / 32k, non-causal): nvfp8 +20% /
  // +14% / +15%, directp +12% / +11% / +11% over 64 keys, causal alike. bf16's 128-key stages
  // (64 KiB each for K and V) do not fit twice beside Q: 80 keys there (FlashAttention-3's tile at
  // D = 256: two stages of 80 KiB beside 64 KiB of Q).
  t.shape.warps = 12;
  t.shape.block_m = 128;
  t.shape.block_n = d <= 128 || s.attention.route != Route::Bf16 ? 128 : 80;
  // directp at D <= 128: 192 keys (QK^T's wgmma N = 192, V^T in two column blocks). Measured on the
  // H200 (docs/PERF.md, fifth session call 5): directp +3-10% over 128 keys at D64/D128, 4k-32k;
  // nvfp8 -2% (D128) to -14% (D64), so it keeps 128.
  if (s.attention.route == Route::DirectP && d <= 128)
    t.shape.block_n = 192;
  // D = 64: three consumer warpgroups (192 query rows, 512 threads, 160 registers each) of 128-key
  // tiles, FlashAttention-3's choice there: at D = 64 a score costs half the MMA time of D = 128 for
  // the same softmax, and a third warp per scheduler issues while the other two wait on their
  // softmax's dependency chains. Measured on the H200 (sixth session, call 3, 4k / 16k): nvfp8
  // +23% / +31%, bf16 +23% / +21%, directp +10% / +9% (its 192-key tiles do not fit 160 registers).
  if (d == 64) {
    t.shape.block_m = 192;
    t.shape.warps = 16;
    t.shape.block_n = 128;
  }
  // The FP8-fed routes at D = 128: three consumers of 96-key tiles (S of 48 registers beside a
  // 128-wide O in 160). Measured on the H200 (sixth session, call 5; 4k / 16k / 32k, non-causal
  // and causal) against two consumers of 128 (nvfp8) or 192 (directp) keys: nvfp8 +12% / +11% /
  // +12% and +14% / +18% / +11%, directp +2% / +2% / +1% and +8% / +2% / +2%. 64-key tiles gained
  // less (nvfp8 0 to +5%) or lost (directp -5 to -7%: its per-32-key-block terms weigh more).
  if (d == 128 && s.attention.route != Route::Bf16) {
    t.shape.block_m = 192;
    t.shape.warps = 16;
    t.shape.block_n = 96;
  }
  // bf16 at D = 128, non-causal: three consumers of 64-key tiles (S of 32 registers and P of 16
  // beside O's 64). Measured on the H200 (twelfth session, call 7; 4k / 16k / 32k, two passes in
  // reversed order) against two consumers of 128 keys: +2.0% / +3.3% / +2.6%, now that O's rescale
  // is off the overlapped loop's path and the guard has slack (the sixth session measured -2%
  // without either). Causal calls keep two consumers (not measured with three).
  if (d == 128 && s.attention.route == Route::Bf16 && !s.attention.causal) {
    t.shape.block_m = 192;
    t.shape.warps = 16;
    t.shape.block_n = 64;
  }
  // Ring depth: BF16 tiles take twice the bytes; at D = 128 three stages of 64 KiB beside 32 KiB
  // of Q still fit (225 KiB): +13-16% over two on the H200 (docs/PERF.md). D = 256: two.
  t.pipeline.stages = d <= 128 ? 3 : 2;
  // Softmax of tile j under PV of tile j-1 (consumer.cuh); needs stages >= 2. At D = 256 the
  // serial loop measured faster on the H200 for every route (nvfp8 +13%, directp +15%, bf16 0-25%:
  // the overlap keeps P of two tiles beside a 256-wide O; docs/PERF.md).
  t.pipeline.overlap = d <= 128;
  // K/V widened once per forward and copied in bulk: measured on the H200, the in-kernel widening
  // by every CTA's producer capped the kernel at 0.3-0.5x cuDNN (docs/PERF.md, skip-loads row).
  // The bf16 route has nothing to widen: its tiles come by tensor maps straight from the BF16
  // tensors. Its repacking pass took 21% of the D128 4k forward on the H200 (Nsight Compute,
  // sixth session: 464 of 2180 us), 4 bytes per element of extra traffic.
  t.staging.kv = s.attention.route == Route::Bf16 ? KvStaging::TensorMap : KvStaging::Prewidened;
  // Consumers taking turns: +3-8% at D 64/128 on the H200, -2-3% at D 256 (docs/PERF.md). Causal
  // consumers can take turns in the work tiles where their tile counts agree (consumer_role.cuh),
  // but measured on the H200 that was -7% for nvfp8 (D64, D128 16k), within noise for directp and
  // +8% / -3% for bf16 in two runs (fifth session): the tuner's alternative there, not the default.
  // The serial loop takes turns too (at each QK^T and PV): at D = 256 +4-7% for bf16 (4k / 16k,
  // causal +3-4%), -1% to -9% for the FP8-fed routes (eighth session, call 11), so bf16 only.
  t.pipeline.pingpong = (t.pipeline.overlap && !s.attention.causal && d <= 128) || (s.attention.route == Route::Bf16 && d == 256);
  // The normalizer from the PV wgmma (a ones row in V^T): decoding each fed P byte for l cost 2.5
  // of the FP8-fed softmax's ~10 instructions per score; +5-9% for nvfp8 on the H200
  // (docs/PERF.md). N = D + 8 must stay <= 256.
  t.softmax.mma_row_sum = s.attention.route != Route::Bf16 && d <= 128;
  // A persistent grid of one CTA per SM looping over the work tiles: each CTA's Q load and first
  // K/V tiles overlap the previous tile's last softmax, PV and epilogue (work_tiles.cuh). Measured
  // on the H200 (docs/PERF.md, fifth session): non-causal +5-8% at 4k keys, +-3% beyond. Causal
  // grids that hand their work tiles out at run time (work_tiles.cuh) win at short keys and lose
  // up to 9% at 32k (ninth session): the choice by length is defaultAttentionSpecForKeys's.
  t.schedule.persistent = !s.attention.causal;
  // The persistent grid widens its own K/V and Q images (fused_widening: the producer's spare
  // warps, ahead of the consumers; attention_sm90/widen_ahead.cuh) instead of two passes before
  // it, which cost a fixed ~94 us per D128 forward (sixth session's split: 8% of the 4096-key
  // forward). The widening then takes issue slots beside the consumers. Measured on the H200
  // (sixteenth session, same binary, two passes each, medians) against the passes, non-causal 4k /
  // 16k keys (call 2): D256 nvfp8 +13% / -2%, directp +11% / +3%; D128 nvfp8 +4% / +6%, directp
  // +2% / -1%; D64 +1% / -1%; causal 4k / 8k (call 3): D256 directp +10% / +3%, nvfp8 0% / -2%;
  // D128 directp -6% / -5%, nvfp8 -3% / -1%; D64 -1% / -2%. The two-consumer D256 kernel has
  // slots to spare (its tensor core is the longer phase), nvfp8 at D128 waits on its MUFU; the
  // three-consumer directp and D64 kernels are issue-bound and keep the passes (and so does the
  // causal D128 nvfp8 kernel). Inert where the grid is not persistent (canonicalize clears it), so
  // the causal choice by length below needs no other edit.
  t.staging.fused_widening = s.attention.route != Route::Bf16 &&
                     (d == 256 || (s.attention.route == Route::Nvfp8 && d == 128 && !s.attention.causal));
  // directp on 128-key tiles (D64, D256): each 32-key block in one thread's S columns, so its max
  // needs no quad shuffles and its exponent, bias and table come once per 32 scores of a thread
  // (main loop -25% SASS instructions). Measured on the H200 (tenth session, call 2; 4k / 16k):
  // D64 +12% / +14%, causal +7% / +6%; D256 +4% / +4%, causal +3% / +4%. At D128 the default's three
  // consumers of 96 keys have no 128-key form that fits their registers with the overlap (the
  // tuner's alternatives: two consumers, or three on the serial loop: -2% to +3%, noise), and the
  // 96-key order (two blocks in thread pairs) measured -4% to +4% (call 11): alternatives too.
  // directp: S accumulated in FP16 by the QK^T wgmma, the classifier input one HFMA2 per pair of
  // keys from it and the block maxima on FP16 pairs (main loop -15% SASS instructions at D128),
  // with Q/K widened by 2^-7 (2^-8 at D256) so that |S| < 65504. Measured on the H200 (thirteenth
  // session, call 2; 4k / 16k / 32k, non-causal, two passes in reversed order): D64 +17% / +22% /
  // +18% (causal +10% / +28% / +31%), D128 +12% / +11% / +11%, D256 +7% / +5% / +6% over FP32
  // S; CPU models' cosine to FP64 within +-3e-4 (docs/ACCURACY.md).
  // The piecewise classifier's pieces then read S directly (pieces_from_scores: one HFMA2 fewer
  // per pair of keys). Measured on the H200 (fifteenth session, call 1; 4k / 16k / 32k,
  // non-causal, two passes, medians): D64 +2% / +5% / +3%, D128 +1% / +1% / +2%, D256 +3% / +3% /
  // +2% over forming y_h first (docs/PERF.md).
  if (s.attention.route == Route::DirectP) {
    s = withScoresFp16(std::move(s), true);
    t.softmax.pieces_from_scores = true;
  }
  // directp at D128: FP16 scores leave room for 128-key tiles on three consumers (S of 32
  // registers), each 32-key block in one thread's columns. Measured on the H200 (thirteenth
  // session, call 5; 4k / 16k / 32k, two passes): +16% / +16% / +16% non-causal, +9% / +12% /
  // +9% causal over 96-key tiles (1.49x / 1.89x / 1.93x cuDNN non-causal); two consumers of 128
  // keys +2-6% (causal -2 to +1%), of 192 keys -1 to -5%.
  if (s.attention.route == Route::DirectP && d == 128 && t.shape.block_m == 192)
    t.shape.block_n = 128;
  // nvfp8: S in FP16 too, with x_h = FP16(fma(acc_h, FP16(mul), off - m)) in one HFMA2 per pair
  // and 2^x_h on the MUFU's FP16 form (two MUFU.EX2.F16 and a PRMT per pair: no fewer issue
  // slots than FP32's two FFMA), the tile max on FP16 pairs, and at D128 three consumers of
  // 128-key tiles (S of 32 registers). Measured on the H200 (fourteenth session, call 1; 4k /
  // 16k / 32k, two passes in reversed order) over FP32 S on 96-key tiles: D128 +6% / +8% / +5%,
  // causal +6% / +4% / +4% (on 96-key tiles FP16 S alone -2%); D256 +7% / +5% / +10%, causal
  // +3% / -3% / -3% (so non-causal only); D64 -11% to -14%, causal -3%: FP32 there. CPU models'
  // cosine to FP64 within -1e-5 .. +1.6e-3 of FP32 S (docs/ACCURACY.md).
  // At D256 (non-causal, 64-key tiles) half of each tile's exp2 then runs as the FP16 polynomial
  // on the FMA pipe (exp2_poly_tiles, NUMERICS.md §2.3). Measured on the H200 (fifteenth session,
  // call 2; 4k / 16k / 32k, two passes in reversed order) over the MUFU for every key: D256 +4% /
  // +2% / +8% (+2% against the better pass); D128 0 to -7% (a quarter to three quarters of the
  // keys), D64 0 to -8%: the MUFU is not what bounds those (PERF.md fifteenth session), so they
  // keep it.
  if (s.attention.route == Route::Nvfp8 && (d == 128 || (d == 256 && !s.attention.causal))) {
    s = withScoresFp16(std::move(s), true);
    if (d == 128)
      t.shape.block_n = 128;
    if (d == 256)
      t.softmax.exp2_poly_tiles = t.shape.block_n / 16;
  }
  t.softmax.thread_key_blocks = t.shape.block_n == 128 && threadKeyBlocksFit(s);
  return s;
}

bool threadKeyBlocksFit(const KernelSpec &spec) {
  const AttentionSpec &a = spec.attention;
  if (a.route != Route::DirectP || a.tile.schedule.kernel != AttentionSchedule::WgmmaWarpSpecialized)
    return false;
  KernelSpec with = spec, without = spec;
  with.attention.tile.softmax.thread_key_blocks = true;
  without.attention.tile.softmax.thread_key_blocks = false;
  const std::vector<std::string> before = specViolations(without);
  for (const std::string &v : specViolations(with)) // (a violation both share is not theirs)
    if (std::find(before.begin(), before.end(), v) == before.end())
      return false;
  return true;
}

namespace {
// D128's three consumers fit 128-key tiles only with FP16 scores (and directp's only with thread key
// blocks): a variant without them takes 96-key tiles there.
KernelSpec fittingThreeConsumerKeys(KernelSpec s) {
  TileSpec &t = s.attention.tile;
  if (t.shape.block_m == 192 && t.shape.block_n == 128 && s.attention.head_dim == 128 && !specViolations(s).empty())
    t.shape.block_n = 96;
  return s;
}
} // namespace

KernelSpec keepingFitKeyBlocks(KernelSpec s) {
  if (!threadKeyBlocksFit(s)) {
    s.attention.tile.softmax.thread_key_blocks = false;
    s = fittingThreeConsumerKeys(std::move(s));
  }
  return s;
}

KernelSpec defaultAttentionSpecForKeys(Route route, int head_dim, bool causal, Target target, int seqlen_k) {
  KernelSpec s = defaultAttentionSpec(route, head_dim, causal, target);
  TileSpec &t = s.attention.tile;
  if (causal && t.schedule.kernel == AttentionSchedule::WgmmaWarpSpecialized && t.staging.kv != KvStaging::InKernel) {
    // Measured causal, persistent / one CTA per work tile (ninth session, call 5): FP8-fed 4k
    // +9-22%, 8k +0-14%, 16k -5 to +4%, 32k -9 to 0%; bf16 4k +2-5%, 8k -2 to -6%.
    const int most = route == Route::Bf16 ? 4096 : kPersistentCausalMaxKeys;
    t.schedule.persistent = seqlen_k <= most;
  }
  // nvfp8's fused widening by length. Measured on the H200 (sixteenth session, calls 2 and 6, same
  // binary, two passes each) against the passes: D128 +4% at 4k, -2% at 8k, -1% at 32k; D256 +13%
  // at 4k, -3% at 8k, -1% at 32k (directp at D256: +11%, +3%, +4%, so it widens in the kernel at
  // every length).
  if (route == Route::Nvfp8 && seqlen_k > kNvfp8FusedWideningMaxKeys)
    t.staging.fused_widening = false;
  return s;
}

std::vector<KernelSpec> wgmmaScheduleAlternatives(const KernelSpec &base) {
  std::vector<KernelSpec> out;
  const TileSpec &t = base.attention.tile;
  if (t.schedule.kernel != AttentionSchedule::WgmmaWarpSpecialized)
    return out;
  if (t.pipeline.overlap) { // the consumer loop without the softmax/PV overlap (and so without turns)
    KernelSpec serial = base;
    serial.attention.tile.pipeline.overlap = false;
    serial.attention.tile.pipeline.pingpong = false;
    out.push_back(serial);
  }
  if (!t.pipeline.overlap && t.pipeline.stages >= 2) { // the overlapped loop where the default is serial
    KernelSpec overlapped = base;
    overlapped.attention.tile.pipeline.overlap = true;
    if (!estimateResources(overlapped).fits()) // (P of the previous tile beside S: 64 keys at D = 256)
      overlapped.attention.tile.shape.block_n = 64;
    out.push_back(overlapped);
  }
  if (t.softmax.mma_row_sum) { // l summed on the ALUs from the decoded P bytes
    KernelSpec alu_sum = base;
    alu_sum.attention.tile.softmax.mma_row_sum = false;
    out.push_back(alu_sum);
  }
  KernelSpec fused = base; // the persistent grid's images by its own spare warps, or by the passes
  fused.attention.tile.staging.fused_widening = true;
  if (fusesWidening(fused.attention)) {
    KernelSpec widening = base;
    widening.attention.tile.staging.fused_widening = !fusesWidening(base.attention);
    out.push_back(widening);
  }
  if (t.schedule.persistent) { // one CTA per work tile, Q widened by its producer
    KernelSpec per_tile = base;
    per_tile.attention.tile.schedule.persistent = false;
    per_tile.attention.tile.schedule.kv_multicast = false;
    out.push_back(per_tile);
  } else if (t.staging.kv != KvStaging::InKernel) { // the persistent grid where it is not the default
    KernelSpec persistent = base;
    persistent.attention.tile.schedule.persistent = true;
    out.push_back(persistent);
  }
  if (t.pipeline.pingpong) { // consumers issuing their wgmmas without taking turns
    KernelSpec free_running = base;
    free_running.attention.tile.pipeline.pingpong = false;
    // (where the validator says the tile spills without the turns: 64-key tiles there)
    if (!specViolations(free_running).empty())
      free_running.attention.tile.shape.block_n = 64;
    out.push_back(free_running);
  } else { // taking turns where the default does not (causal: where counts agree; the serial loop too)
    KernelSpec turns = base;
    turns.attention.tile.pipeline.pingpong = true;
    out.push_back(turns);
  }
  // bf16: the tiles repacked by a pass (and bulk-copied) instead of loaded by tensor maps, or back.
  if (base.attention.route == Route::Bf16 && t.staging.kv != KvStaging::InKernel) {
    KernelSpec other = base;
    other.attention.tile.staging.kv =
        t.staging.kv == KvStaging::TensorMap ? KvStaging::Prewidened : KvStaging::TensorMap;
    if (t.shape.block_n == 80) // (the repacked V^T's rows are whole 128-byte blocks: 64 keys)
      other.attention.tile.shape.block_n = 64;
    out.push_back(other);
  }
  // Every CTA's producer widens K/V itself (FP8-fed routes; bf16 tiles are never widened).
  if (t.staging.kv == KvStaging::Prewidened && base.attention.route != Route::Bf16) {
    KernelSpec in_kernel = base;
    in_kernel.attention.tile.staging.kv = KvStaging::InKernel;
    in_kernel.attention.tile.schedule.persistent = false; // (the persistent producer is one thread)
    in_kernel.attention.tile.schedule.kv_multicast = false;
    in_kernel.attention.tile.shape.block_n = std::min(t.shape.block_n, 128); // (its V^T: one column block)
    in_kernel.attention.tile.shape.block_m = 128; // (three consumers leave the producer one thread)
    in_kernel.attention.tile.shape.warps = 12;
    if (!estimateResources(in_kernel).fits()) // (its consumers have 216 registers: 64 keys at D = 256)
      in_kernel.attention.tile.shape.block_n = 64;
    out.push_back(in_kernel);
  }
  // The other consumer count: two where the default has three, three (192 rows, the key tile that
  // fits 160 registers: 128 keys at D = 64, 64 at D = 128) where it has two.
  const bool fp8_d128 = base.attention.route != Route::Bf16 && base.attention.head_dim == 128;
  if (t.shape.block_m == 192) {
    KernelSpec two = base;
    two.attention.tile.shape.block_m = 128;
    two.attention.tile.shape.warps = 12;
    two.attention.tile.shape.block_n = base.attention.route == Route::DirectP ? 192 : 128;
    out.push_back(two);
  } else if (base.attention.head_dim <= 128 && t.staging.kv != KvStaging::InKernel) {
    KernelSpec three = base;
    three.attention.tile.shape.block_m = 192;
    three.attention.tile.shape.warps = 16;
    three.attention.tile.shape.block_n = base.attention.head_dim <= 64 ? 128 : 64;
    out.push_back(three);
  }
  if (t.shape.block_m == 192 && fp8_d128 && t.shape.block_n != 96) { // three consumers of 96-key tiles (fits at D128)
    KernelSpec keys96 = base;
    keys96.attention.tile.shape.block_n = 96;
    out.push_back(keys96);
  } else if (t.shape.block_m == 128 && fp8_d128 && t.staging.kv != KvStaging::InKernel) {
    KernelSpec keys96 = base;
    keys96.attention.tile.shape.block_m = 192;
    keys96.attention.tile.shape.warps = 16;
    keys96.attention.tile.shape.block_n = 96;
    out.push_back(keys96);
  }
  for (KernelSpec &alt : out) // (alternatives that moved the key tile keep the quad blocks)
    alt = keepingFitKeyBlocks(std::move(alt));
  // directp: its 32-key blocks in as few threads as the tile allows (key_order.cuh), or back in
  // quads; at D128 also the 128-key tiles, where a block lies in one thread.
  if (base.attention.route == Route::DirectP) {
    KernelSpec other = base;
    other.attention.tile.softmax.thread_key_blocks = !t.softmax.thread_key_blocks;
    other = fittingThreeConsumerKeys(std::move(other));
    if (!other.attention.tile.softmax.thread_key_blocks || threadKeyBlocksFit(other))
      out.push_back(other);
    if (base.attention.head_dim == 128 && t.shape.block_n == 96 && t.staging.kv != KvStaging::InKernel) {
      KernelSpec two = base; // two consumers, the overlapped loop (three of 128 keys spill there)
      two.attention.tile.softmax.thread_key_blocks = true;
      two.attention.tile.shape.block_n = 128;
      two.attention.tile.shape.block_m = 128;
      two.attention.tile.shape.warps = 12;
      out.push_back(two);
      KernelSpec three = base; // three consumers on the serial loop (taking turns measured -2% to -5%)
      three.attention.tile.softmax.thread_key_blocks = true;
      three.attention.tile.shape.block_n = 128;
      three.attention.tile.shape.block_m = 192;
      three.attention.tile.shape.warps = 16;
      three.attention.tile.pipeline.overlap = false;
      three.attention.tile.pipeline.pingpong = false;
      out.push_back(three);
    }
  }
  // nvfp8 on FP16 scores: half of each tile's exp2 as the FP16 polynomial, or none.
  if (base.attention.route == Route::Nvfp8 && t.softmax.scores_fp16) {
    KernelSpec poly = base;
    poly.attention.tile.softmax.exp2_poly_tiles = t.softmax.exp2_poly_tiles == 0 ? t.shape.block_n / 16 : 0;
    if (specViolations(poly).empty())
      out.push_back(poly);
  }
  // directp's piecewise classifier: its pieces from S, or from y_h formed first.
  if (canonicalize(base).attention.tile.softmax.pieces_from_scores) {
    KernelSpec unfolded = base;
    unfolded.attention.tile.softmax.pieces_from_scores = false;
    out.push_back(unfolded);
  }
  // S accumulated in FP16 (Q/K widened by 2^-7 or 2^-8), or back in FP32 (D128's three consumers
  // then on 96-key tiles, quad blocks).
  if (base.attention.route != Route::Bf16) {
    const KernelSpec scores = fittingThreeConsumerKeys(withScoresFp16(base, !t.softmax.scores_fp16));
    if (specViolations(scores).empty())
      out.push_back(scores);
  }
  return out;
}

KernelSpec withScoresFp16(KernelSpec s, bool fp16) {
  AttentionSpec &a = s.attention;
  a.tile.softmax.scores_fp16 = fp16;
  if (!fp16)
    a.tile.softmax.exp2_poly_tiles = 0; // (the polynomial takes FP16 exponents)
  a.operands.qk_widen_shift =
      fp16 ? std::max(a.operands.qk_widen_shift, minScoresFp16WidenShift(a.head_dim)) : OperandSpec{}.qk_widen_shift;
  return s;
}

KernelSpec defaultQuantizeSpec(QuantFormat format, int head_dim, Target target, bool input_fp32,
                               bool keys_permuted16) {
  KernelSpec s;
  s.family = KernelFamily::Quantize;
  s.target = target;
  QuantizeSpec &q = s.quantize;
  q.format = format;
  q.layout = format == QuantFormat::Nvfp4 ? QuantLayout::RowMajorK : QuantLayout::Transposed;
  q.input_fp32 = input_fp32;
  q.keys_permuted16 = q.layout == QuantLayout::Transposed && keys_permuted16;
  q.head_dim = head_dim;
  q.threads = 256; // 8 warps: enough loads in flight per SM for a memory-bound pass
  return s;
}

KernelSpec quantizerFor(const KernelSpec &attention, AttentionOperand operand, bool input_fp32) {
  assert(attention.family == KernelFamily::AttentionForward && attention.attention.route != Route::Bf16 &&
         "only the nvfp8 and directp routes consume quantized operands");
  const AttentionSpec &a = attention.attention;
  if (operand != AttentionOperand::V)
    return defaultQuantizeSpec(QuantFormat::Nvfp4, a.head_dim, attention.target, input_fp32);
  const QuantFormat v = a.route == Route::DirectP ? QuantFormat::Mxfp4 : QuantFormat::Fp8PerHead;
  return defaultQuantizeSpec(v, a.head_dim, attention.target, input_fp32, a.operands.v_keys_permuted16);
}

std::vector<KernelSpec> enumerateQuantizeVariants(Target target) {
  std::vector<KernelSpec> out;
  for (QuantFormat f : {QuantFormat::Nvfp4, QuantFormat::Mxfp4, QuantFormat::Fp8PerHead})
    for (int d : kHeadDims)
      for (bool fp32 : {false, true})
        for (bool permuted : {false, true}) {
          if (permuted && f == QuantFormat::Nvfp4)
            continue; // rows of Q/K have no key order to permute
          out.push_back(defaultQuantizeSpec(f, d, target, fp32, permuted));
        }
  return out;
}

std::vector<KernelSpec> enumerateAttentionVariants(Target target) {
  std::vector<KernelSpec> out;
  if (!attentionTemplatesAvailable())
    return out;
  for (Route r : kAllRoutes) {
    if (r != Route::Bf16 && !hasFp8TensorCores(target))
      continue; // FP8-fed routes need FP8 tensor cores
    for (int d : kHeadDims)
      for (bool causal : {false, true}) {
        // On sm_90a the FP8-fed routes default to wgmma; their mma.sync kernel stays a variant
        // (the tuner's alternative); `s` below is that mma.sync kernel (tcgen05 on sm_100a).
        const KernelSpec chosen = defaultAttentionSpec(r, d, causal, target);
        const bool wgmma = chosen.attention.tile.schedule.kernel == AttentionSchedule::WgmmaWarpSpecialized;
        const KernelSpec s = wgmma ? withAttentionSchedule(chosen, AttentionSchedule::MmaSync) : chosen;
        out.push_back(s);
        if (wgmma)
          out.push_back(chosen);
        if (causal) {
          // The causal grid of the other kind (the persistent one hands work tiles out at run time,
          // its own code path): the engine picks it by length (defaultAttentionSpecForKeys).
          if (wgmma && chosen.attention.tile.staging.kv != KvStaging::InKernel) {
            KernelSpec grid = chosen;
            grid.attention.tile.schedule.persistent = !grid.attention.tile.schedule.persistent;
            out.push_back(grid);
            // the persistent causal grid's images by the passes too, or by its spare warps
            KernelSpec persistent = chosen.attention.tile.schedule.persistent ? chosen : grid;
            if (r != Route::Bf16) {
              persistent.attention.tile.staging.fused_widening = !fusesWidening(persistent.attention);
              out.push_back(persistent);
            }
          }
          continue; // the options below do not interact with the mask: one head-dim sweep each
        }
        if (r == Route::DirectP) {
          // The other classifiers change the generated code (and the cheap affine one is the
          // Hopper speed candidate): they must compile too.
          for (ClassifierKind k : {ClassifierKind::Threshold, ClassifierKind::Affine, ClassifierKind::Mixed,
                                   ClassifierKind::Piecewise}) {
            if (k == s.attention.classifier.kind)
              continue;
            KernelSpec c = s;
            c.attention.classifier.kind = k;
            out.push_back(c);
          }
        }
        if (r != Route::Bf16 && !isTcgen05Attention(s)) { // register-P key order: mma.sync/wgmma only
          KernelSpec p = s;
          p.attention.operands.v_keys_permuted16 = true;
          out.push_back(p);
        }
        if (target == Target::Sm90a) {
          // The warp-specialized wgmma kernel: default tiles, other ring depths, 64-key tiles.
          const KernelSpec ws = withAttentionSchedule(s, AttentionSchedule::WgmmaWarpSpecialized);
          if (r != Route::Bf16) { // (the default wgmma kernel itself is pushed above)
            KernelSpec wp = ws;
            wp.attention.operands.v_keys_permuted16 = true;
            out.push_back(wp);
          }
          for (int stages : {1, 2}) {
            if (stages == ws.attention.tile.pipeline.stages)
              continue;
            KernelSpec w = ws;
            w.attention.tile.pipeline.stages = stages;
            w.attention.tile.pipeline.overlap = stages >= 2;
            w.attention.tile.pipeline.pingpong = w.attention.tile.pipeline.pingpong && stages >= 2;
            out.push_back(w);
          }
          for (KernelSpec &alt : wgmmaScheduleAlternatives(ws))
            out.push_back(std::move(alt));
          // the other key tile: 192 (V^T of two column blocks) or 128; three consumers have no room for
          // more keys (their two-consumer alternative is in wgmmaScheduleAlternatives)
          if (r != Route::Bf16 && d <= 128 && ws.attention.tile.shape.block_m == 128) {
            KernelSpec other = ws;
            other.attention.tile.shape.block_n = ws.attention.tile.shape.block_n == 192 ? 128 : 192;
            out.push_back(other);
          }
          if (r == Route::DirectP) { // each classifier is its own code path there
            // (the piecewise classifier forming y_h first: one of wgmmaScheduleAlternatives)
            for (ClassifierKind k : {ClassifierKind::Threshold, ClassifierKind::Affine}) {
              KernelSpec other = ws;
              other.attention.classifier.kind = k;
              if (llvm::errorToBool(validateSpec(other))) { // (the threshold classifier: 128 keys, two consumers)
                other.attention.tile.shape.block_n = 128;
                other.attention.tile.shape.block_m = 128;
                other.attention.tile.shape.warps = 12;
              }
              if (llvm::errorToBool(validateSpec(other))) // (and FP32 scores at D256)
                other = withScoresFp16(std::move(other), false);
              out.push_back(other);
            }
          }
          if (d == 128) { // the leave-one-out variants of `fa4jit bench --ablation`
            for (StageAblation ab : {StageAblation::SkipLoads, StageAblation::SkipQk, StageAblation::SkipSoftmax,
                                     StageAblation::SkipPv, StageAblation::SoftmaxTwice}) {
              KernelSpec v = ws;
              v.attention.tile.bench_ablation = ab;
              if (llvm::errorToBool(validateSpec(v))) { // (softmax-twice: two consumers, 128-key tiles)
                v.attention.tile.shape.block_n = 128;
                v.attention.tile.shape.block_m = 128;
                v.attention.tile.shape.warps = 12;
              }
              out.push_back(v);
            }
          }
          if (ws.attention.tile.shape.block_n == 128 || ws.attention.tile.shape.block_n == 80) { // 64-key tiles
            KernelSpec n64 = ws;
            n64.attention.tile.shape.block_n = 64;
            out.push_back(n64);
          }
        }
      }
  }
  for (KernelSpec &s : out) // (variants that moved the key tile or V's key order keep the quad blocks)
    s = keepingFitKeyBlocks(std::move(s));
  return out;
}

std::vector<KernelSpec> enumerateVariants(const std::vector<Target> &targets) {
  std::vector<Target> ts = targets;
  if (ts.empty())
    ts.assign(std::begin(kAllTargets), std::end(kAllTargets));
  std::vector<KernelSpec> out;
  for (Target t : ts) {
    for (KernelSpec &s : enumerateQuantizeVariants(t))
      out.push_back(std::move(s));
    for (KernelSpec &s : enumerateAttentionVariants(t))
      out.push_back(std::move(s));
  }
  return out;
}

} // namespace fa4jit
