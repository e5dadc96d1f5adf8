// The default spec of a call: route numerics, the target's operand formats and kernel, the
// decision tables' tiles (heuristics.h).
#include "decisions.h"
#include "fa4jit/codegen/spec_io.h"

#include <algorithm>
#include <cassert>
#include <cmath>

#include "fa4jit/codegen/heuristics.h"
#include "fa4jit/codegen/sm100_attention.h"
#include "fa4jit/codegen/spec_validate.h"
#include "fa4jit/paged/params.cuh"

namespace fa4jit {

bool hasFp8TensorCores(Target t) { return t != Target::Sm80; }

void applyRouteNumericsDefaults(AttentionSpec &a) {
  a.guard = RangeGuardSpec{};
  a.operands.p_offset_log2 = OperandSpec{}.p_offset_log2;
  // nvfp8 rescales O and l only when a tile's max passes the row max by more than 3 log2 units
  // (FlashAttention-4's conditional rescaling) and feeds P <= 2^3 with offset 5 to stay within
  // E4M3: +3-9% over slack 0 at D128 (`fa4jit bench --route nvfp8 --variants default,slack0`).
  // directp keeps slack 0: its lower offset would move the fast path's floor (p_directp.cuh).
  if (a.route == Route::Nvfp8)
    setGuardSlack(a, kNvfp8GuardSlackLog2);
  // bf16's P = exp2(x) in BF16 has the same relative precision at any x <= 8 and l, O are FP32: a
  // slack of 8 costs nothing numerically and spares the rescales (+2-11%, `--variants slack0`).
  if (a.route == Route::Bf16)
    setGuardSlack(a, kBf16GuardSlackLog2);
}

KernelSpec defaultBackwardSpec(const AttentionSpec &forward, Target target) {
  KernelSpec s;
  s.family = KernelFamily::AttentionBackward;
  s.target = target;
  s.backward.forward = forward;
  const decisions::BackwardChoice choice = decisions::backwardChoice(forward.head_dim);
  s.backward.mma = choice.mma;
  s.backward.tile = choice.tile;
  return canonicalize(s);
}

KernelSpec defaultBackwardSpec(int head_dim, bool causal, float softmax_scale, Target target) {
  AttentionSpec forward = defaultAttentionSpec(Route::Nvfp8, head_dim, causal, target).attention;
  forward.softmax_scale = softmax_scale;
  return defaultBackwardSpec(forward, target);
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
  a.tile = decisions::mmaSyncTiles(route, head_dim);
  // FP8 tensor cores from sm_89 on: NVFP4 Q/K widen to E4M3 (one rounding, NUMERICS.md §2.1) and
  // V/P are fed as E4M3. On sm_80 only the bf16 route exists; its operand fields are unused.
  a.operands.qk_widening = hasFp8TensorCores(target) ? Widening::E4m3 : Widening::Bf16;
  a.operands.v_widening = hasFp8TensorCores(target) ? Widening::E4m3 : Widening::Bf16;
  // The piecewise classifier: every code boundary within 1% of P of exp2 + round-to-nearest's (the
  // threshold classifier's accuracy, NUMERICS.md §2.3) at a third of its instructions.
  a.classifier = ClassifierSpec{};
  if (route == Route::DirectP)
    a.classifier.kind = ClassifierKind::Piecewise;
  applyRouteNumericsDefaults(a);
  // Blackwell feeds NVFP4 Q/K (and MXFP4 P/V) to block-scaled tcgen05 MMAs, TMEM from the planner.
  if (target == Target::Sm100a && route != Route::Bf16)
    return withTcgen05Kernel(s);
  // sm_90a: the warp-specialized wgmma kernel, 2-4x the mma.sync kernel for every route
  // (`fa4jit bench --schedule mma-sync` against the default).
  if (target == Target::Sm90a)
    return withAttentionSchedule(s, AttentionSchedule::WgmmaWarpSpecialized);
  return s;
}

KernelSpec defaultAttentionSpecForKeys(Route route, int head_dim, bool causal, Target target, int seqlen_k) {
  KernelSpec s = defaultAttentionSpec(route, head_dim, causal, target);
  TileSpec &t = s.attention.tile;
  if (t.schedule.kernel == AttentionSchedule::WgmmaWarpSpecialized && t.staging.kv != KvStaging::InKernel)
    decisions::applyLengthRules(route, causal, seqlen_k, t);
  return s;
}

KernelSpec defaultQuantizeSpec(QuantFormat format, int head_dim, Target target, bool input_fp32,
                               bool keys_permuted16) {
  return defaultQuantizeSpec(format, head_dim, target, input_fp32 ? QuantInput::F32 : QuantInput::Bf16,
                             keys_permuted16);
}

KernelSpec defaultQuantizeSpec(QuantFormat format, int head_dim, Target target, QuantInput input,
                               bool keys_permuted16) {
  KernelSpec s;
  s.family = KernelFamily::Quantize;
  s.target = target;
  QuantizeSpec &q = s.quantize;
  q.format = format;
  q.layout = format == QuantFormat::Nvfp4 || format == QuantFormat::E4m3Rows ? QuantLayout::RowMajorK
                                                                            : QuantLayout::Transposed;
  // E4M3 Q/K: the shift of the FP16-score kernels (the defaults); the engine sets its kernel's.
  q.code_shift = format == QuantFormat::E4m3Rows ? minScoresFp16WidenShift(head_dim) : 0;
  q.input_fp32 = input == QuantInput::F32;
  q.input_fp16 = input == QuantInput::F16;
  q.keys_permuted16 = q.layout == QuantLayout::Transposed && keys_permuted16;
  q.head_dim = head_dim;
  q.threads = 256; // 8 warps: enough loads in flight per SM for a memory-bound pass
  return s;
}

KernelSpec defaultMergeSpec(StateType value, int head_dim, Target target) {
  KernelSpec s;
  s.family = KernelFamily::MergeStates;
  s.target = target;
  s.merge.value = value;
  s.merge.head_dim = head_dim;
  s.merge.threads = 128; // 8 to 32 rows per CTA: a memory-bound pass with enough CTAs per SM
  return s;
}

KernelSpec defaultPagedKvSpec(int head_dim, int page_size, int warps, Target target, KvValueFormat value_format) {
  KernelSpec s;
  s.family = KernelFamily::PagedKv;
  s.target = target;
  s.paged.head_dim = head_dim;
  s.paged.page_size = page_size;
  s.paged.warps = warps;
  s.paged.value_format = value_format;
  // MXFP4 V decodes from a ring of 3 steps per warp: fa4jit tune --decode measured it 3-9% faster
  // than the register path on every MXFP4 shape, and 2-5% slower on FP8 (BENCHMARKS.md, decode).
  s.paged.kv_stages = value_format == KvValueFormat::Mxfp4 ? 3 : 0;
  return s;
}

DecodeGridChoice chooseDecodeGrid(long long base_ctas, int max_seq_len, int sm_count) {
  DecodeGridChoice c;
  // Decode streams the cache once: it is bound by loads in flight, so a small grid takes 8 warps
  // per CTA (about one CTA per SM at its register count) and a full one 4 (two per SM).
  c.warps = base_ctas >= sm_count ? 4 : 8;
  const long long slots = static_cast<long long>(sm_count) * (c.warps == 4 ? 2 : 1);
  // Splits fill the SMs' CTA slots without a partial extra wave (128 CTAs on 132 slots stay
  // unsplit: fa4jit tune --decode measured one split faster there, BENCHMARKS.md), each keeping at
  // least 256 keys (16 steps of 16 keys over its warps) so that the combine's extra pass stays
  // small; at most the combine's 16.
  long long splits = base_ctas > 0 ? std::max<long long>(1, slots / base_ctas) : 1;
  splits = std::min<long long>(splits, std::max(1, (max_seq_len + 255) / 256));
  c.splits = static_cast<int>(std::clamp<long long>(splits, 1, device::paged::kMaxDecodeSplits));
  return c;
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

} // namespace fa4jit
