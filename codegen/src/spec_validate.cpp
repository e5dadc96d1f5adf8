// Rules a KernelSpec must satisfy before code is generated (spec_validate.h).
#include "fa4jit/codegen/spec_validate.h"

#include <cassert>
#include <cmath>
#include <string>

#include "fa4jit/codegen/sm100_attention.h"
#include "fa4jit/codegen/spec_io.h"
#include "fa4jit/attention_backward/params.cuh"
#include "fa4jit/directp.cuh"
#include <sstream>

namespace fa4jit {
namespace {

// 6 * 448 * 2^-shift <= 448 needs shift >= log2(6); past 8 the smallest NVFP4 values
// (0.5 * 2^-9 scale) flush in E4M3 and the widening stops being useful.
constexpr int kMinQkWidenShift = 3;
constexpr int kMaxQkWidenShift = 8;
static_assert((6 * 448) >> kMinQkWidenShift <= 448, "shift too small for E4M3's range");
static_assert(1.75 * (1 << kMaxFp8POffsetPlusSlack) == 448.0, "E4M3 max is 1.75 * 2^8");

bool isHeadDim(int d) { return d == 64 || d == 128 || d == 256; }
bool isPowerOfTwo(int x) { return x > 0 && (x & (x - 1)) == 0; }

// Collects violations; fail() concatenates its arguments into one message after the field.
class Rules {
public:
  template <typename... Args>
  void fail(const char *field, Args &&...args) {
    std::ostringstream os;
    os << field << ": ";
    (os << ... << args);
    out.push_back(os.str());
  }
  std::vector<std::string> out;
};

void checkClassifier(const ClassifierSpec &c, Rules &r) {
  switch (c.kind) {
  case ClassifierKind::Threshold:
    for (int i = 0; i < 7; ++i) {
      if (!std::isfinite(c.thresholds[i]))
        r.fail("attention.classifier.thresholds", "element ", i, " is not finite");
      else if (!(std::fabs(c.thresholds[i]) <= 4.0f) || std::ldexp(c.thresholds[i], 7) != std::round(std::ldexp(c.thresholds[i], 7)))
        r.fail("attention.classifier.thresholds", "element ", i, " = ", formatFloat(c.thresholds[i]), " is not a multiple of 2^-7 in [-4, 4]: the classifier compares in FP16 and selects thresholds by exact FP16 arithmetic (NUMERICS.md §2.3)");
      else if (i > 0 && !(c.thresholds[i] > c.thresholds[i - 1]))
        r.fail("attention.classifier.thresholds", "must increase strictly (element ", i, " = ", formatFloat(c.thresholds[i]), " after ", formatFloat(c.thresholds[i - 1]), "): the code counts thresholds below y");
    }
    break;
  case ClassifierKind::Piecewise:
    for (int i = 0; i < 4; ++i) {
      const float v = c.pieces[i];
      const char *what = i % 2 == 0 ? "slope" : "offset";
      const char *piece = i < 2 ? "lower" : "upper";
      // The kernels bake each as FP16 bits (directpHalfBits): zero or a normal FP16 value.
      const bool half = std::isfinite(v) && std::fabs(v) <= 65504.0f && (v == 0.0f || std::fabs(v) >= 0x1p-14f) &&
                        static_cast<float>(device::roundToHalf(v)) == v;
      if (!half)
        r.fail("attention.classifier.pieces", "element ", i, " (", piece, " ", what, ") = ", formatFloat(v),
               " is not zero or a normal FP16 value: the classifier runs in FP16 arithmetic (NUMERICS.md §2.3)");
      else if (i % 2 == 0 && !(v > 0.0f))
        r.fail("attention.classifier.pieces", "element ", i, " (", piece, " slope) = ", formatFloat(v),
               " must be > 0 (codes must grow with y)");
    }
    break;
  case ClassifierKind::Mixed:
    if (!std::isfinite(c.y_split))
      r.fail("attention.classifier.y_split", "must be finite");
    [[fallthrough]];
  case ClassifierKind::Affine:
    if (!std::isfinite(c.alpha) || !(c.alpha > 0.0f))
      r.fail("attention.classifier.alpha", formatFloat(c.alpha), " must be finite and > 0 (codes must grow with y)");
    if (!std::isfinite(c.beta))
      r.fail("attention.classifier.beta", "must be finite");
    break;
  }
}

void checkWidening(const char *field, Widening w, const TargetLimits &lim, Target t, Rules &r) {
  if (w == Widening::Native && !lim.fp4_mma)
    r.fail(field, "native FP4 needs block-scaled FP4 tensor cores (sm_100a), target is ", toString(t));
  if (w == Widening::E4m3 && !lim.fp8_mma)
    r.fail(field, "E4M3 widening needs FP8 tensor cores (sm_89 or newer), target is ", toString(t));
}

// The wgmma kernel's register-tight tiles (three consumers of 160 registers, or S of 192 keys):
// the threshold and mixed classifiers' search constants and softmax-twice's second pending P
// spill there (CI's SASS check); the piecewise and affine classifiers fit. False when it failed.
bool checkTightRegisters(const AttentionSpec &a, const char *field, const char *tiles, Rules &r) {
  if (a.route == Route::DirectP && a.classifier.kind != ClassifierKind::Piecewise &&
      a.classifier.kind != ClassifierKind::Affine) {
    r.fail(field, tiles, " with the ", toString(a.classifier.kind), " classifier spills the consumers' registers (its "
           "search constants beside S; the piecewise and affine ones fit)");
    return false;
  }
  if (a.tile.bench_ablation == StageAblation::SoftmaxTwice) {
    r.fail(field, tiles, " with softmax-twice spills (two tiles' pending P)");
    return false;
  }
  return true;
}

// The warp-specialized wgmma kernel (templates/fa4jit/attention_sm90): FP8 wgmma (BF16 wgmma for
// the bf16 route) with Q, K and V^T in 128-byte-swizzled shared memory, one producer and two
// consumer warpgroups of 64 rows.
void checkWgmmaSchedule(const KernelSpec &s, Rules &r) {
  const AttentionSpec &a = s.attention;
  const TileSpec &t = a.tile;
  if (s.target != Target::Sm90a)
    r.fail("attention.tile.schedule.kernel", "wgmma-ws needs sm_90a (wgmma, setmaxnreg), target is ", toString(s.target));
  if (a.route == Route::Bf16) {
    if (t.staging.kv == KvStaging::InKernel)
      r.fail("attention.tile.staging.kv", toString(t.staging.kv), " on the bf16 route: its wgmma kernel reads K/V "
             "by tensor maps or repacked by the widening pass (the producer has no in-kernel V transpose); use "
             "tensor-map or prewidened");
  } else {
    if (a.operands.qk_widening != Widening::E4m3 || a.operands.v_widening != Widening::E4m3)
      r.fail("attention.tile.schedule.kernel", "wgmma-ws feeds FP8 wgmma: qk_widening and v_widening must be e4m3");
    if (t.staging.kv == KvStaging::TensorMap)
      r.fail("attention.tile.staging.kv", "tensor-map exists on the bf16 route only (the FP8-fed routes' FP4 tiles "
             "must be widened to E4M3 first)");
  }
  if (t.shape.block_m != 128 && t.shape.block_m != 192)
    r.fail("attention.tile.shape.block_m", t.shape.block_m, " must be 128 or 192 on wgmma-ws (two or three consumer warpgroups of "
                                                "64 rows)");
  else if (t.shape.warps != t.shape.block_m / 16 + 4)
    r.fail("attention.tile.shape.warps", t.shape.warps, " must be ", t.shape.block_m / 16 + 4, " on wgmma-ws with block_m ", t.shape.block_m,
           " (a producer warpgroup and one per 64 rows)");
  if (t.shape.block_m == 192 && t.staging.kv == KvStaging::InKernel)
    r.fail("attention.tile.shape.block_m", "192 needs prewidened or tensor-map K/V (three consumers leave the producer 32 "
                                     "registers: one thread moving tiles, not a warpgroup widening them)");
  // Three consumers have 160 registers each: S of block_n keys beside O fits up to 128 keys at D64
  // and 96 at D128 (CI's SASS check: 192 keys at D64 and 128 at D128 spill).
  if (t.shape.block_m == 192) {
    // (FP16 scores: S of 128 keys in 32 registers, which fit for nvfp8, and for directp with thread
    // key blocks)
    const bool s128_fits = a.head_dim <= 64 || (t.softmax.thread_key_blocks && (!t.pipeline.overlap || t.softmax.scores_fp16)) ||
                           (t.softmax.scores_fp16 && a.route == Route::Nvfp8);
    if (a.head_dim > 128 || t.shape.block_n > (s128_fits ? 128 : 96))
      r.fail("attention.tile.shape.block_m", "192 (three consumers of 160 registers) needs head_dim <= 128 and block_n <= ",
             s128_fits ? 128 : 96, " at head_dim ", a.head_dim, ", not ", t.shape.block_n);
    else if (checkTightRegisters(a, "attention.tile.shape.block_m", "192 (three consumers)", r) &&
             (t.shape.block_n == 96 || (a.route == Route::Bf16 && t.shape.block_n == 128)) && t.pipeline.overlap && !t.pipeline.pingpong &&
             !a.causal)
      r.fail("attention.tile.shape.block_m", "192 with ", t.shape.block_n, "-key tiles", a.route == Route::Bf16 ? " (bf16)" : "",
             " spills without the consumers' turns in the non-causal overlapped loop (CI's SASS check: 288 bytes at "
             "96 keys, 8 for bf16's 128 keys at D64 with its guard slack); take pingpong or 64-key tiles");
  }
  if (t.shape.block_n != 64 && t.shape.block_n != 80 && t.shape.block_n != 96 && t.shape.block_n != 128 && t.shape.block_n != 192)
    r.fail("attention.tile.shape.block_n", t.shape.block_n, " must be 64, 80, 96, 128 or 192 on wgmma-ws");
  else if (t.shape.block_n == 80 && (a.route != Route::Bf16 || a.head_dim != 256 || t.staging.kv != KvStaging::TensorMap))
    r.fail("attention.tile.shape.block_n", "80 exists for the bf16 route at head_dim 256 with tensor-map K/V only (two "
                                     "stages of 80 keys beside a 128-row Q fill 225 KiB; an FP8 PV's k-step is 32 "
                                     "keys; the repacked V^T's rows are whole 128-byte blocks)");
  else if (t.shape.block_n == 96 && (a.route == Route::Bf16 || a.head_dim != 128))
    r.fail("attention.tile.shape.block_n", "96 exists for the FP8-fed routes at head_dim 128 only (the bf16 QK^T wgmmas are "
                                     "N = 64, 128; the widening pass moves whole 128-thread rounds of a 96-key tile "
                                     "at D = 128)");
  else if (t.shape.block_n == 192 && (a.route == Route::Bf16 || a.head_dim > 128 || t.staging.kv != KvStaging::Prewidened))
    r.fail("attention.tile.shape.block_n", "192 needs an FP8-fed route, head_dim <= 128 (S of 192 keys beside O in the "
                                     "consumers' registers) and prewidened K/V (V^T of two column blocks)");
  else if (t.shape.block_n == 192)
    checkTightRegisters(a, "attention.tile.shape.block_n", "192", r);
  if (t.pipeline.stages < 1 || t.pipeline.stages > 4)
    r.fail("attention.tile.pipeline.stages", t.pipeline.stages, " must be in [1, 4] on wgmma-ws");
  else if (t.pipeline.overlap && t.pipeline.stages < 2)
    r.fail("attention.tile.pipeline.stages", t.pipeline.stages, " must be >= 2 with overlap (a consumer holds two stages)");
  if (t.softmax.mma_row_sum && (a.route == Route::Bf16 || a.head_dim > 128))
    r.fail("attention.tile.softmax.mma_row_sum", "needs an FP8-fed route and head_dim <= 128 (PV's N = head_dim + 8 <= 136; "
                                         "the wgmma's N stops at 256)");
  if (t.schedule.persistent && t.staging.kv == KvStaging::InKernel)
    r.fail("attention.tile.schedule.persistent", "needs prewidened or tensor-map K/V (one producer thread copies every Q and "
                                        "K/V tile; in-kernel widening keeps the producer warpgroup busy)");
  if (t.schedule.kv_multicast && (!t.schedule.persistent || t.staging.kv != KvStaging::Prewidened))
    r.fail("attention.tile.schedule.kv_multicast", "needs the persistent grid with prewidened K/V (its two-CTA clusters loop "
                                          "over pairs of m-blocks; one producer thread per CTA sends half of each "
                                          "stage); with tensor-map tiles the bf16 kernel gives wrong rows on the H200, "
                                          "so it is refused there");
  if (t.softmax.thread_key_blocks) {
    if (a.route != Route::DirectP)
      r.fail("attention.tile.softmax.thread_key_blocks", "exists for the directp route only (its 32-key blocks)");
    else if (t.shape.block_n != 128 && t.shape.block_n != 96)
      r.fail("attention.tile.softmax.thread_key_blocks", "needs 96- or 128-key tiles (a thread's S columns of a 128-key tile "
                                                 "are one Direct-P block of each row; of a 96-key tile, halves of "
                                                 "two blocks and a quarter of a third)");
    if (t.staging.kv == KvStaging::TensorMap)
      r.fail("attention.tile.softmax.thread_key_blocks", "needs K/V widened by fa4jit (the widening orders the keys)");
    if (a.operands.v_keys_permuted16)
      r.fail("attention.tile.softmax.thread_key_blocks", "needs V^T in key order (operands.v_keys_permuted16 false): the "
                                                 "widening applies the whole key order itself");
  }
  if (t.softmax.exp2_poly_tiles != 0) {
    if (a.route != Route::Nvfp8 || !t.softmax.scores_fp16)
      r.fail("attention.tile.softmax.exp2_poly_tiles", "needs the nvfp8 route on FP16 scores (the polynomial takes FP16 "
                                               "exponents)");
    else if (t.softmax.exp2_poly_tiles < 0 || t.softmax.exp2_poly_tiles > t.shape.block_n / 8)
      r.fail("attention.tile.softmax.exp2_poly_tiles", t.softmax.exp2_poly_tiles, " is not in [0, block_n / 8 = ", t.shape.block_n / 8,
             "] (n8 tiles of keys)");
  }
  if (t.softmax.scores_fp16) {
    const int least_shift = minScoresFp16WidenShift(a.head_dim);
    // (CI's SASS check: the threshold classifier spilled 28 bytes there, NVRTC 13.0)
    if (a.head_dim == 256)
      checkTightRegisters(a, "attention.tile.softmax.scores_fp16", "FP16 scores at head_dim 256 (S beside a 256-wide O)", r);
    if (a.route == Route::Bf16)
      r.fail("attention.tile.softmax.scores_fp16", "exists for the FP8-fed routes only (FP8 wgmma's FP16 accumulators; the "
                                           "bf16 route's P is exp2 of FP32 scores)");
    if (a.operands.qk_widening != Widening::E4m3 || a.operands.qk_widen_shift < least_shift)
      r.fail("attention.tile.softmax.scores_fp16", "needs Q/K widened to E4M3 with qk_widen_shift >= ", least_shift,
             " at head_dim ", a.head_dim, " (then |S| <= head_dim * 22^2 * 4^(7 - shift) < 65504, FP16's largest; "
             "the shift is ", a.operands.qk_widen_shift, ")");
  }
}

void checkAttention(const KernelSpec &s, Rules &r) {
  const AttentionSpec &a = s.attention;
  const TargetLimits lim = targetLimits(s.target);
  if (!isHeadDim(a.head_dim))
    r.fail("attention.head_dim", a.head_dim, " is not one of 64, 128, 256");
  if (!std::isfinite(a.softmax_scale) || a.softmax_scale < 0.0f)
    r.fail("attention.softmax_scale", formatFloat(a.softmax_scale), " must be finite and >= 0 (0 means 1/sqrt(head_dim))");

  // Tiles.
  const TileSpec &t = a.tile;
  // (the bf16 wgmma kernel's 80-key tiles are a multiple of its k-step of 16: checkWgmmaSchedule)
  const bool bf16_ws_80 = a.route == Route::Bf16 && t.schedule.kernel == AttentionSchedule::WgmmaWarpSpecialized &&
                          t.shape.block_n == 80;
  if (t.shape.block_n <= 0 || (t.shape.block_n % 32 != 0 && !bf16_ws_80))
    r.fail("attention.tile.shape.block_n", t.shape.block_n, " is not a positive multiple of 32 (the Direct-P block)");
  else if (t.shape.block_n > 256)
    r.fail("attention.tile.shape.block_n", t.shape.block_n, " exceeds 256 (the largest MMA N)");
  if (t.shape.block_m <= 0 || t.shape.block_m % 16 != 0 || t.shape.block_m > 256)
    r.fail("attention.tile.shape.block_m", t.shape.block_m, " is not a multiple of 16 (the MMA's M) in [16, 256]");
  if (t.shape.warps < 1 || t.shape.warps > 16)
    r.fail("attention.tile.shape.warps", t.shape.warps, " is not in [1, 16]");
  if (t.pipeline.stages < 1 || t.pipeline.stages > 8)
    r.fail("attention.tile.pipeline.stages", t.pipeline.stages, " is not in [1, 8]");
  if (t.schedule.kernel == AttentionSchedule::WgmmaWarpSpecialized)
    checkWgmmaSchedule(s, r);
  else if (t.bench_ablation != StageAblation::None)
    r.fail("attention.tile.bench_ablation", toString(t.bench_ablation), " exists on wgmma-ws only (the leave-one-out variants)");
  else if (t.staging.kv != KvStaging::InKernel)
    r.fail("attention.tile.staging.kv", toString(t.staging.kv), " exists on wgmma-ws only");
  else if (t.pipeline.pingpong)
    r.fail("attention.tile.pipeline.pingpong", "exists on wgmma-ws only");
  else if (t.softmax.mma_row_sum)
    r.fail("attention.tile.softmax.mma_row_sum", "exists on wgmma-ws only");
  else if (t.schedule.persistent)
    r.fail("attention.tile.schedule.persistent", "exists on wgmma-ws only");
  else if (t.schedule.kv_multicast)
    r.fail("attention.tile.schedule.kv_multicast", "exists on wgmma-ws only");
  else if (t.softmax.thread_key_blocks)
    r.fail("attention.tile.softmax.thread_key_blocks", "exists on wgmma-ws only");
  else if (t.softmax.scores_fp16)
    r.fail("attention.tile.softmax.scores_fp16", "exists on wgmma-ws only");
  else if (t.softmax.pieces_from_scores)
    r.fail("attention.tile.softmax.pieces_from_scores", "exists on wgmma-ws only");
  else if (t.softmax.exp2_poly_tiles != 0)
    r.fail("attention.tile.softmax.exp2_poly_tiles", "exists on wgmma-ws only");
  if (r.out.empty()) {
    const int bytes = attentionSharedBytes(a);
    if (bytes > lim.max_shared_bytes)
      r.fail("attention.tile", "the tiles need ", bytes, " bytes of shared memory, ", toString(s.target), " allows ", lim.max_shared_bytes);
  }

  // Range guard.
  const RangeGuardSpec &g = a.guard;
  if (g.kind == GuardKind::SampledAnchor) {
    if (!isPowerOfTwo(g.sample_stride) || g.sample_stride > t.shape.block_n)
      r.fail("attention.guard.sample_stride", g.sample_stride, " is not a power of two in [1, block_n = ", t.shape.block_n, "]");
    if (!std::isfinite(g.slack_log2) || g.slack_log2 < 0.0f || g.slack_log2 > 8.0f)
      r.fail("attention.guard.slack_log2", formatFloat(g.slack_log2), " is not in [0, 8]");
  }

  if (a.route == Route::Bf16)
    return; // operands and classifier are not used (canonicalize resets them)

  // Operands of the quantized routes.
  const OperandSpec &o = a.operands;
  checkWidening("attention.operands.qk_widening", o.qk_widening, lim, s.target, r);
  checkWidening("attention.operands.v_widening", o.v_widening, lim, s.target, r);
  if (a.route == Route::Nvfp8 && o.v_widening == Widening::Native)
    r.fail("attention.operands.v_widening", "nvfp8 stores V in FP8 already: use e4m3 (fed as is) or bf16");
  if (o.qk_widening == Widening::E4m3 &&
      (o.qk_widen_shift < kMinQkWidenShift || o.qk_widen_shift > kMaxQkWidenShift))
    r.fail("attention.operands.qk_widen_shift", o.qk_widen_shift, " is not in [", kMinQkWidenShift, ", ", kMaxQkWidenShift, "] (6 * 448 * 2^-shift must fit E4M3)");
  const bool p_is_fp8 = !(a.route == Route::DirectP && o.v_widening == Widening::Native);
  if (p_is_fp8) {
    if (o.p_offset_log2 < 0)
      r.fail("attention.operands.p_offset_log2", o.p_offset_log2, " is negative");
    const float slack = g.kind == GuardKind::SampledAnchor ? g.slack_log2 : 0.0f;
    if (std::isfinite(slack) && o.p_offset_log2 + static_cast<int>(std::ceil(slack)) > kMaxFp8POffsetPlusSlack)
      r.fail("attention.operands.p_offset_log2", "p_offset_log2 (", o.p_offset_log2, ") + ceil(guard.slack_log2) (", static_cast<int>(std::ceil(slack)), ") exceeds ", kMaxFp8POffsetPlusSlack, ": fed P would overflow E4M3 (448)");
  }
  if (o.qk_format == QkFormat::E4m3) {
    // The E4M3 codes are the image the E4M3 widening of NVFP4 would write: only the wgmma kernel's
    // producers copy them (the mma.sync and tcgen05 kernels read NVFP4).
    if (s.target != Target::Sm90a || t.schedule.kernel != AttentionSchedule::WgmmaWarpSpecialized)
      r.fail("attention.operands.qk_format", "e4m3 Q/K run on the sm_90a wgmma kernel only (the other kernels read NVFP4)");
    if (o.qk_widening != Widening::E4m3)
      r.fail("attention.operands.qk_format", "e4m3 Q/K are fed as stored: qk_widening must be e4m3");
  }
  if (a.route == Route::DirectP)
    checkClassifier(a.classifier, r);

  // TMEM plan (sm_100a): only checked when the planner filled it.
  const TmemPlanRef &m = a.tmem;
  if (s.target == Target::Sm100a && m.columns_allocated != 0) {
    if (!isPowerOfTwo(m.columns_allocated) || m.columns_allocated < 32 || m.columns_allocated > 512)
      r.fail("attention.tmem.columns_allocated", m.columns_allocated, " is not a power of two in [32, 512] (tcgen05.alloc)");
    const int cols[] = {m.s_col[0], m.s_col[1], m.o_col[0], m.o_col[1], m.sf_col};
    for (int c : cols)
      if (c < -1 || c >= m.columns_allocated)
        r.fail("attention.tmem", "column ", c, " is outside the ", m.columns_allocated, " allocated columns");
  }
}

void checkQuantize(const KernelSpec &s, Rules &r) {
  const QuantizeSpec &q = s.quantize;
  if (!isHeadDim(q.head_dim))
    r.fail("quantize.head_dim", q.head_dim, " is not one of 64, 128, 256");
  if (q.input_fp32 && q.input_fp16)
    r.fail("quantize.input_fp16", "the input is FP32 or FP16, not both");
  switch (q.format) {
  case QuantFormat::Nvfp4:
    if (q.layout != QuantLayout::RowMajorK)
      r.fail("quantize.layout", "NVFP4 (Q, K) is blocked along the head dim: use row-major-k");
    if (q.keys_permuted16)
      r.fail("quantize.keys_permuted16", "only the transposed V layouts permute keys");
    break;
  case QuantFormat::E4m3Rows:
    if (q.layout != QuantLayout::RowMajorK)
      r.fail("quantize.layout", "E4M3 Q/K rows are stored as the attention reads them: use row-major-k");
    if (q.keys_permuted16)
      r.fail("quantize.keys_permuted16", "only the transposed V layouts permute keys");
    if (q.code_shift < kMinQkWidenShift || q.code_shift > kMaxQkWidenShift)
      r.fail("quantize.code_shift", q.code_shift, " is not in [", kMinQkWidenShift, ", ", kMaxQkWidenShift,
             "] (the attention's qk_widen_shift: 6 * 448 * 2^-shift must fit E4M3)");
    break;
  case QuantFormat::Mxfp4:
  case QuantFormat::Fp8PerHead:
    if (q.layout != QuantLayout::Transposed)
      r.fail("quantize.layout", toString(q.format), " V is stored key-contiguous for the PV product: use transposed");
    break;
  case QuantFormat::Bf16:
    r.fail("quantize.format", "bf16 operands are consumed as given: there is nothing to quantize");
    break;
  }
  // One thread per 16-element NVFP4 block, or per (head-dim row, 32 keys) for V^T; the V^T tile of
  // threads / 4 rows x 129 FP32 lives in static shared memory (48 KiB): at most 256 threads.
  if (!isPowerOfTwo(q.threads) || q.threads < 64 || q.threads > 512)
    r.fail("quantize.threads", q.threads, " is not a power of two in [64, 512]");
  else if (q.layout == QuantLayout::Transposed && q.threads > 256)
    r.fail("quantize.threads", q.threads, " exceeds 256 for V^T (its FP32 tile of threads / 4 rows x 129 keys "
           "must fit 48 KiB of static shared memory)");
}

// The merge-states kernel (templates/fa4jit/merge): head_dim / 8 threads per row, 8 values each.
void checkMerge(const KernelSpec &s, Rules &r) {
  const MergeSpec &m = s.merge;
  if (!isHeadDim(m.head_dim))
    r.fail("merge.head_dim", m.head_dim, " is not one of 64, 128, 256");
  if (!isPowerOfTwo(m.threads) || m.threads < 64 || m.threads > 512)
    r.fail("merge.threads", m.threads, " is not a power of two in [64, 512]");
}

// The paged KV cache's kernels (templates/fa4jit/paged): decode keeps one 16-row tile's O
// (head_dim / 8 n-tiles of 4 FP32 per lane) and Q in registers, which holds up to head dim 128; the
// 16-key steps never cross a page.
void checkPaged(const KernelSpec &s, Rules &r) {
  const PagedKvSpec &p = s.paged;
  if (p.head_dim != 64 && p.head_dim != 128)
    r.fail("paged.head_dim", p.head_dim, " is not one of 64, 128");
  if (!isPowerOfTwo(p.page_size) || p.page_size < 16 || p.page_size > 256)
    r.fail("paged.page_size", p.page_size, " is not a power of two in [16, 256]");
  if (p.warps != 4 && p.warps != 8)
    r.fail("paged.warps", p.warps, " is not one of 4, 8");
  if (p.kv_stages != 0 && p.kv_stages != 2 && p.kv_stages != 3)
    r.fail("paged.kv_stages", p.kv_stages, " is not one of 0 (registers), 2, 3 (a shared-memory ring)");
}

// The attention backward's kernel (templates/fa4jit/attention_backward): mma.sync or wgmma on
// sm_90a. Each warp keeps dK and dV of its 16 keys in registers (2 x 16 x head_dim FP32 over 32
// lanes), which bounds the tiles: the register-limited ones are the rules below, and the SASS test
// compiles every variant without spills.
void checkBackward(const KernelSpec &s, Rules &r) {
  const BackwardSpec &b = s.backward;
  const AttentionSpec &f = b.forward;
  const int D = f.head_dim, bm = b.tile.block_m, warps = b.tile.warps;
  if (s.target != Target::Sm90a)
    r.fail("target", toString(s.target), ": the backward kernels are written for sm_90a (FP8 mma.sync); "
           "there is no backward for other targets");
  if (D != 64 && D != 128)
    r.fail("backward.head_dim", D, " is not 64 or 128 (dK and dV of 16 keys x 256 would take all 255 registers)");
  if (f.operands.qk_widening != Widening::E4m3)
    r.fail("backward.qk_widening", toString(f.operands.qk_widening),
           ": the backward rebuilds S as the nvfp8 forward does, from NVFP4 Q/K widened to e4m3");
  else if (f.operands.qk_widen_shift < kMinQkWidenShift || f.operands.qk_widen_shift > kMaxQkWidenShift)
    r.fail("backward.qk_widen_shift", f.operands.qk_widen_shift, " is outside [", kMinQkWidenShift, ", ",
           kMaxQkWidenShift, "]");
  if (!std::isfinite(f.softmax_scale) || f.softmax_scale < 0.0f)
    r.fail("backward.softmax_scale", formatFloat(f.softmax_scale), " must be finite and >= 0 (0: 1/sqrt(head_dim))");
  if (b.p_offset_log2 < 0 || b.p_offset_log2 > kMaxFp8POffsetPlusSlack)
    r.fail("backward.p_offset_log2", b.p_offset_log2, " is outside [0, 8]: P (up to ~1.07) times 2^offset must stay "
           "below E4M3's 448");
  if (b.tile.block_n != 16 * warps)
    r.fail("backward.block_n", b.tile.block_n, " must be 16 * warps (", 16 * warps, "): each warp owns 16 keys");
  if (b.mma == BackwardMma::Wgmma) {
    if (warps != 4 && warps != 8)
      r.fail("backward.warps", warps, " is not 4 or 8: the wgmma main pass runs whole warpgroups");
    else if (D == 64 && warps == 8 && bm != 64)
      r.fail("backward.warps", warps, ": at head_dim 64, two warpgroups split dQ = dS K by 32-column halves, which "
             "64-query steps have (block_m ", bm, " takes dQ^T, whose m64 is the whole head dim)");
    if (bm != 32 && bm != 64)
      r.fail("backward.block_m", bm, " is not 32 or 64 (the N of the wgmma S^T = K Q^T)");
    else if (b.pv == BackwardPvFormat::Mxfp4 && bm % 32 != 0)
      r.fail("backward.pv", "mxfp4 P blocks 32 queries: block_m ", bm, " is not a multiple of 32");
  } else {
    if (warps != 2 && warps != 4 && warps != 8)
      r.fail("backward.warps", warps, " is not 2, 4 or 8");
    if (bm != 16 && bm != 32 && bm != 64) {
      r.fail("backward.block_m", bm, " is not 16, 32 or 64");
      return;
    }
    if (warps % (bm / 16) != 0)
      r.fail("backward.block_m", bm, ": dQ = dS K gives each of the ", bm / 16, " 16-query row groups the same "
             "number of warps, and ", warps, " warps do not divide");
    else if ((D / (warps / (bm / 16))) % 16 != 0)
      r.fail("backward.warps", warps, ": dQ's ", D / (warps / (bm / 16)), " columns per warp are not a multiple of 16");
    if (D == 128 && (bm == 64 || (bm == 32 && warps < 4)))
      r.fail("backward.block_m", bm, ": head_dim 128 holds 128 accumulator registers per thread: block_m 16, or 32 "
             "with 4 or 8 warps (others spill)");
    if (D == 64 && bm == 16)
      r.fail("backward.block_m", "head_dim 64 steps 32 or 64 queries (16 spills)");
    if (b.pv == BackwardPvFormat::Mxfp4 && bm % 32 != 0)
      r.fail("backward.pv", "mxfp4 P blocks 32 queries: block_m ", bm, " is not a multiple of 32");
  }
  const int shared = backwardSharedBytes(b);
  if (shared > targetLimits(s.target).max_shared_bytes)
    r.fail("backward.block_m", "shared memory ", shared, " bytes exceeds the target's ",
           targetLimits(s.target).max_shared_bytes);
}

} // namespace

int backwardSharedBytes(const BackwardSpec &b) {
  namespace db = device::attention_backward;
  const int D = b.forward.head_dim, bm = b.tile.block_m, bn = b.tile.block_n;
  return b.mma == BackwardMma::Wgmma ? db::backwardWgmmaSharedBytes(D, bm, bn) : db::backwardSharedBytes(D, bm, bn);
}

TargetLimits targetLimits(Target t) {
  switch (t) {
  case Target::Sm80: return {163 * 1024, false, false};
  case Target::Sm89: return {99 * 1024, true, false};
  case Target::Sm90a: return {227 * 1024, true, false};
  case Target::Sm100a: return {227 * 1024, true, true};
  }
  assert(false && "unknown target");
  return {0, false, false};
}

namespace {
// Bytes per element of the wgmma kernel's shared-memory operands: E4M3, or BF16 on the bf16 route.
int wgmmaElementBytes(const AttentionSpec &a) { return a.route == Route::Bf16 ? 2 : 1; }
int swizzledTileBytes(int rows, int k_bytes) { return (k_bytes + 127) / 128 * rows * 128; }
} // namespace

int wgmmaStageBytes(const AttentionSpec &a) {
  const int e = wgmmaElementBytes(a);
  const int k = swizzledTileBytes(a.tile.shape.block_n, a.head_dim * e);
  // Tensor maps load V as it lies in the tensor, [block_n][D] (K's shape); otherwise V^T [D][block_n].
  return k + (a.tile.staging.kv == KvStaging::TensorMap ? k : swizzledTileBytes(a.head_dim, a.tile.shape.block_n * e));
}

int wgmmaQTileBytes(const AttentionSpec &a) {
  return swizzledTileBytes(a.tile.shape.block_m, a.head_dim * wgmmaElementBytes(a));
}

bool handsOutWorkTiles(const AttentionSpec &a) {
  return a.tile.schedule.kernel == AttentionSchedule::WgmmaWarpSpecialized && a.tile.schedule.persistent && a.causal &&
         !a.tile.schedule.kv_multicast;
}

bool fusesWidening(const AttentionSpec &a) {
  return a.tile.staging.fused_widening && a.tile.schedule.kernel == AttentionSchedule::WgmmaWarpSpecialized &&
         a.route != Route::Bf16 && a.tile.schedule.persistent && a.tile.staging.kv == KvStaging::Prewidened &&
         !a.tile.schedule.kv_multicast;
}

int attentionSharedBytes(const AttentionSpec &a) {
  if (a.route != Route::Bf16 && a.operands.qk_widening == Widening::Native)
    return tcgen05AttentionSharedBytes(a); // the sm_100a tcgen05 kernel
  if (a.tile.schedule.kernel == AttentionSchedule::WgmmaWarpSpecialized) {
    // E4M3 (or BF16) tiles in 128-byte column blocks (attention_sm90/smem_desc.cuh): Q [block_m][D],
    // per stage K [block_n][D] and V^T [D][block_n]; 8-byte mbarriers full/empty per stage and two
    // for Q (full, empty); 1024 bytes of slack to align the dynamic shared-memory base for the swizzle;
    // the persistent causal grid's 32-byte slots (two, by Q's phase) for the handed-out work tile (work_tiles.cuh);
    // with fused widening the spare producer warps' slots, shape and staging (widen_ahead.cuh).
    const int q_tile = wgmmaQTileBytes(a);
    // mma_row_sum: each of V^T's 128-byte column blocks continues with 8 rows (ones, then zeros).
    const int v_blocks = (a.tile.shape.block_n * wgmmaElementBytes(a) + 127) / 128;
    const int row_sum_rows = a.tile.softmax.mma_row_sum ? v_blocks * 8 * 128 : 0;
    const int work_slot = handsOutWorkTiles(a) ? 32 : 0;
    // (attention_sm90/layout.cuh's kWidenerSharedBytes: mbarriers, slots, shape; three staging areas)
    const int widener_slots = fusesWidening(a) ? 128 + 3 * 6144 : 0;
    return 1024 + q_tile + a.tile.pipeline.stages * (wgmmaStageBytes(a) + row_sum_rows) + 8 * (2 * a.tile.pipeline.stages + 2) +
           work_slot + widener_slots;
  }
  const bool bf16_route = a.route == Route::Bf16;
  const int qk_bytes = bf16_route || a.operands.qk_widening == Widening::Bf16 ? 2 : 1;
  const int qk_pitch = a.head_dim * qk_bytes + 16;
  const int v_rows = bf16_route ? a.tile.shape.block_n : a.head_dim;
  const int v_pitch = bf16_route ? a.head_dim * 2 + 16 : a.tile.shape.block_n + 16;
  return (a.tile.shape.block_m + a.tile.shape.block_n) * qk_pitch + v_rows * v_pitch;
}

std::vector<std::string> specViolations(const KernelSpec &spec) {
  Rules r;
  if (spec.family == KernelFamily::Quantize)
    checkQuantize(spec, r);
  else if (spec.family == KernelFamily::AttentionBackward)
    checkBackward(spec, r);
  else if (spec.family == KernelFamily::MergeStates)
    checkMerge(spec, r);
  else if (spec.family == KernelFamily::PagedKv)
    checkPaged(spec, r);
  else
    checkAttention(spec, r);
  return r.out;
}

llvm::Error validateSpec(const KernelSpec &spec) {
  const std::vector<std::string> v = specViolations(spec);
  if (v.empty())
    return llvm::Error::success();
  std::string msg = "invalid " + std::string(toString(spec.family)) + " spec for " + toString(spec.target) + ":";
  for (const std::string &line : v)
    msg += "\n  " + line;
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

} // namespace fa4jit
