#pragma once
// Default specs and the list of every variant the generator can emit.
//
// Defaults are the starting point the autotuner searches around; they are chosen per target
// for what its tensor cores accept (E4M3 from sm_89 on, BF16 on sm_80) and per head dim for
// register and shared-memory budgets. enumerateVariants() is the CI's list: each entry must
// generate and compile for its target (`fa4jit compile --all`, tests/codegen).
#include <vector>

#include "fa4jit/codegen/spec.h"

namespace fa4jit {

// Attention forward for (route, head dim, causal, target), valid for that target.
// sm_90a, FP8-fed routes: the wgmma schedule (prewidened K/V, overlapped consumers, ping-pong
// when non-causal at D <= 128); sm_100a FP8-fed routes: tcgen05; otherwise mma.sync.
KernelSpec defaultAttentionSpec(Route route, int head_dim, bool causal, Target target);

// The default for a call with seqlen_k keys (the engine's choice where the tuning database has no
// winner): defaultAttentionSpec, with the causal wgmma grid chosen by length. Causal work tiles
// are as long as their rows' keys: up to kPersistentCausalMaxKeys (4096 for bf16) the persistent
// grid that hands them out at run time saves each tile a CTA launch (+5-22% at 4k, ninth
// session); beyond, one CTA per work tile, whose main loop ran up to 9% faster at 32k keys.
constexpr int kPersistentCausalMaxKeys = 8192;
// nvfp8 widens in the kernel (TileSpec::fused_widening) up to kNvfp8FusedWideningMaxKeys only: the
// passes' fixed cost is what the fused form saves, and beyond 4k keys it measured 1-3% slower.
constexpr int kNvfp8FusedWideningMaxKeys = 4096;
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

// `spec` moved to another schedule, with that schedule's default tiles for its head dim (the
// numerics fields are untouched). Tests and the tuner use it to run both kernels on one problem.
KernelSpec withAttentionSchedule(KernelSpec spec, AttentionSchedule schedule);

// Whether `spec` may take Direct-P's thread key blocks (TileSpec::thread_key_blocks: the directp
// route's wgmma kernel on 96- or 128-key tiles with K/V widened by fa4jit in key order): turning
// them on adds no violation of spec_validate's rules, which are the one statement of them.
bool threadKeyBlocksFit(const KernelSpec &spec);
// `spec` with thread_key_blocks cleared where it no longer fits (a variant that moved the key
// tile, the staging or V's key order keeps the quad blocks instead of turning invalid; D128's
// three consumers of 128 keys then take 96-key tiles, where quad blocks fit).
KernelSpec keepingFitKeyBlocks(KernelSpec spec);
// The spec with S accumulated in FP16 (TileSpec::scores_fp16, with the widening shift that keeps
// |S| finite) or in FP32 (the default shift).
KernelSpec withScoresFp16(KernelSpec spec, bool fp16);

// The wgmma kernel's alternatives to its default consumer and staging choices, at the same tile:
// the serial consumer loop, consumers not taking turns (when the base does), and in-kernel K/V
// widening (when the base prewidens). Empty for other schedules.
std::vector<KernelSpec> wgmmaScheduleAlternatives(const KernelSpec &base);

// The quantizer that produces one attention operand in the layout `attention` consumes.
enum class AttentionOperand : uint8_t { Q, K, V };
// Precondition: attention.family == AttentionForward and its route is nvfp8 or directp (the bf16
// route consumes its inputs as given).
KernelSpec quantizerFor(const KernelSpec &attention, AttentionOperand operand, bool input_fp32 = false);

// A quantizer spec with the default CTA size. Layout follows the format (NVFP4 rows, V^T
// otherwise); keys_permuted16 applies to V^T only.
KernelSpec defaultQuantizeSpec(QuantFormat format, int head_dim, Target target, bool input_fp32 = false,
                               bool keys_permuted16 = false);

// Every variant of one family for one target. Attention variants are empty until the family's
// templates are available to the emitter (attentionTemplatesAvailable()).
std::vector<KernelSpec> enumerateQuantizeVariants(Target target);
std::vector<KernelSpec> enumerateAttentionVariants(Target target);

// All families for the given targets (all four targets when empty).
std::vector<KernelSpec> enumerateVariants(const std::vector<Target> &targets = {});

} // namespace fa4jit
