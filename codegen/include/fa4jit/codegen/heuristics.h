#pragma once
// The default spec of a call, and the spec edits that keep a spec valid.
//
// Each default is decided once, in a decision table per kernel family (codegen/src/heuristics/:
// sm90_decisions.cpp for the sm_90a wgmma kernel, mma_sync_decisions.cpp, and the route numerics
// in defaults.cpp), with the reason and the `fa4jit bench` call that shows it. Defaults are what
// the engine runs without a tuning record and what the tuner searches around (alternatives.h);
// variants.h lists every kernel the generator can emit.
#include "fa4jit/codegen/spec.h"

namespace fa4jit {

// Whether the target's tensor cores take FP8 (sm_89 and up): the FP8-fed routes need them.
bool hasFp8TensorCores(Target t);

// Attention forward for (route, head dim, causal, target), valid for that target, for a call of
// unknown length. sm_90a: the wgmma kernel; sm_100a FP8-fed routes: tcgen05; otherwise mma.sync.
KernelSpec defaultAttentionSpec(Route route, int head_dim, bool causal, Target target);
// The default for a call with seqlen_k keys (the engine's choice where the tuning database has no
// winner): defaultAttentionSpec with the decisions that depend on length (the causal wgmma grid,
// nvfp8's widening site).
KernelSpec defaultAttentionSpecForKeys(Route route, int head_dim, bool causal, Target target, int seqlen_k);

// The route's default range guard and P offset, the same on every target and schedule (the CPU
// models and `fa4jit accuracy` take them from here too): nvfp8 lets a tile max pass the row max
// by kNvfp8GuardSlackLog2 before O is rescaled, and feeds P as E4M3(P * 2^(8 - slack)); bf16 by
// kBf16GuardSlackLog2 (its P is BF16, whose range makes P <= 2^8 as exact as P <= 1); directp
// rescales on any increase (RangeGuardSpec's defaults).
constexpr float kNvfp8GuardSlackLog2 = 3.0f;
constexpr float kBf16GuardSlackLog2 = 8.0f;
void applyRouteNumericsDefaults(AttentionSpec &a);
// The sampled-anchor guard with `slack_log2` of slack; the FP8-fed routes then feed P with the
// largest offset E4M3 allows beside it, kMaxFp8POffsetPlusSlack - ceil(slack).
void setGuardSlack(AttentionSpec &a, float slack_log2);

// `spec` moved to another schedule, with that schedule's default tiles for its route, head dim and
// causal mask (the guard and classifier are untouched; the widening shift follows the score
// accumulator). Tests and the tuner use it to run both kernels on one problem.
KernelSpec withAttentionSchedule(KernelSpec spec, AttentionSchedule schedule);

// `spec` reading Q and K stored in `format` (the route presets' Q/K choice, docs/NUMERICS.md
// §1.4), with the same tiles: the kernels differ only in how their producers fill the Q/K images.
// E4M3 Q/K exist on the sm_90a wgmma kernel only; there, a spec whose Q/K are widened to BF16
// moves to the E4M3 widening (with its shift); elsewhere the result does not validate.
KernelSpec withQkFormat(KernelSpec spec, QkFormat format);

// Whether `spec` may take Direct-P's thread key blocks (TileSpec::softmax.thread_key_blocks: the
// directp route's wgmma kernel on 96- or 128-key tiles with K/V widened by fa4jit in key order):
// turning them on adds no violation of spec_validate's rules, which are the one statement of them.
bool threadKeyBlocksFit(const KernelSpec &spec);
// `spec` with thread_key_blocks cleared where it no longer fits (a variant that moved the key
// tile, the staging or V's key order keeps the quad blocks instead of turning invalid; D128's
// three consumers of 128 keys then take 96-key tiles, where quad blocks fit).
KernelSpec keepingFitKeyBlocks(KernelSpec spec);
// The spec with S accumulated in FP16 (TileSpec::softmax.scores_fp16, with the widening shift that
// keeps |S| finite) or in FP32 (the default shift).
KernelSpec withScoresFp16(KernelSpec spec, bool fp16);

// The backward of the training forward `forward` (an nvfp8 attention spec of this target): its
// head dim, mask, softmax scale and Q/K widening, E4M3 P/V, BF16 Q/K in the dS products, and the
// tiles of the head dim (backward_decisions.cpp). Non-deterministic dQ.
KernelSpec defaultBackwardSpec(const AttentionSpec &forward, Target target);
// The same for the default nvfp8 forward of (head dim, causal, softmax scale) on `target`.
KernelSpec defaultBackwardSpec(int head_dim, bool causal, float softmax_scale, Target target);

// `spec` (a backward spec) with its main pass on `mma`, at that pass's default tiles for the
// head dim (backward_decisions.cpp): the other pass's tiles need not fit this one.
KernelSpec withBackwardMma(KernelSpec spec, BackwardMma mma);

// The quantizer that produces one attention operand in the layout `attention` consumes.
enum class AttentionOperand : uint8_t { Q, K, V };
// Precondition: attention.family == AttentionForward and its route is nvfp8 or directp (the bf16
// route consumes its inputs as given).
KernelSpec quantizerFor(const KernelSpec &attention, AttentionOperand operand, bool input_fp32 = false);

// A quantizer spec with the default CTA size. Layout follows the format (NVFP4 rows, V^T
// otherwise); keys_permuted16 applies to V^T only.
KernelSpec defaultQuantizeSpec(QuantFormat format, int head_dim, Target target, bool input_fp32 = false,
                               bool keys_permuted16 = false);
KernelSpec defaultQuantizeSpec(QuantFormat format, int head_dim, Target target, QuantInput input,
                               bool keys_permuted16 = false);

// The merge-states kernel for O of `value` and `head_dim`, with the default CTA size.
KernelSpec defaultMergeSpec(StateType value, int head_dim, Target target);

// The paged KV cache's module (append, decode, combine) for `head_dim` and `page_size`, with
// `warps` decode warps per CTA (the engine's decode heuristic chooses them per shape) and the
// cache's V format; decode's staging (kv_stages) follows the V format.
KernelSpec defaultPagedKvSpec(int head_dim, int page_size, int warps, Target target,
                              KvValueFormat value_format = KvValueFormat::Fp8);

// Decode's warps per CTA and key splits per sequence for `base_ctas` CTAs without splits
// (sequences x kv heads x row blocks), sequences of up to max_seq_len tokens, on `sm_count` SMs.
struct DecodeGridChoice {
  int warps = 4;
  int splits = 1;
};
DecodeGridChoice chooseDecodeGrid(long long base_ctas, int max_seq_len, int sm_count);

} // namespace fa4jit
