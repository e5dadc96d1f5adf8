#pragma once
// KernelSpec: every choice baked into one generated kernel, as named fields (docs/ARCHITECTURE.md §3).
// The CPU models take the same struct, so a kernel and its model are driven by one description.
// Serialization (canonical JSON), hashing and validation live in spec_io.h / spec_validate.h.
#include <array>
#include <cstdint>
#include <string>

namespace fa4jit {

enum class Target : uint8_t { Sm80, Sm89, Sm90a, Sm100a };
enum class Route : uint8_t { Bf16, Nvfp8, DirectP };
enum class KernelFamily : uint8_t { AttentionForward, Quantize, AttentionBackward, MergeStates, PagedKv };

// How an FP4 operand (NVFP4 or MXFP4) is widened for a tensor core that has no FP4 input.
//  Bf16: exact (E2M1 x UE4M3 needs at most 6 significant bits).
//  E4m3: one rounding for NVFP4 (E4M3 keeps 4 significant bits), exact for MXFP4 in range;
//        values are pre-multiplied by 2^-shift so that 6 x 448 fits E4M3 (see docs/NUMERICS.md).
//  Native: the target's tensor core consumes FP4 directly (sm_100a block-scaled MMA).
enum class Widening : uint8_t { Bf16, E4m3, Native };

// How Q and K are stored for the FP8-fed routes (docs/NUMERICS.md §1.4).
//  Nvfp4: E2M1 codes with a UE4M3 scale per 16 and a per-head FP32 scale g (4.5 bits).
//  E4m3:  one E4M3 code per element, E4M3(x / g * 2^-qk_widen_shift) with NVFP4's per-head g: the
//         image NVFP4's widening would write, rounded once from x instead of from the FP4 code
//         (8 bits). Logits keep 4 significant bits per operand, which holds up at large logits
//         where NVFP4's 2 bits do not (docs/ACCURACY.md, operand formats). sm_90a wgmma kernels.
enum class QkFormat : uint8_t { Nvfp4, E4m3 };

enum class ClassifierKind : uint8_t {
  Threshold, // compare FP16(y) with log2 of E2M1's round-to-nearest boundaries (~ exp2 + RTN)
  Affine,    // c = clamp(floor(alpha * y + beta), 0, 7)
  Mixed,     // affine below y_split, exp2 + round-to-nearest at and above it
  Piecewise, // rn(7 max(sat(a_lo y + b_lo), sat(a_hi y + b_hi))) in FP16 (~ exp2 + RTN within 1%)
};

// Direct-P classifier (NUMERICS.md §2.3). y = x - e_b, x = s*log2(e) - m <= 0 (up to the guard's
// slack), e_b = floor(block max of x) - 2.
struct ClassifierSpec {
  ClassifierKind kind = ClassifierKind::Threshold;
  float alpha = 2.0f;
  float beta = 0.0f;
  // log2 of the round-to-nearest boundaries {0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5}, each rounded to
  // the nearest multiple of 2^-7 (the grid the FP16 classifier requires, NUMERICS.md §2.3):
  // -2, -53/128, 41/128, 103/128, 169/128, 231/128, 297/128.
  std::array<float, 7> thresholds = {-2.0f, -0.4140625f, 0.3203125f, 0.8046875f,
                                     1.3203125f, 1.8046875f, 2.3203125f};
  float y_split = 1.0f; // Mixed only: y >= y_split uses exp2 + round-to-nearest
  // Piecewise only: {a_lo, b_lo, a_hi, b_hi}, FP16 values, code c = rn(7 max(z_lo, z_hi)) with
  // z = sat(a y + b) (NUMERICS.md §2.3). The defaults put the boundaries of codes 1 and 2 at the
  // default thresholds -2 and -53/128 (a_lo = 1 / (7 * 1.5859375), b_lo = 0.5/7 + 2 a_lo) and
  // codes 3..7 on a line of 2 codes per unit of y (a_hi = 2/7) that balances the alternating
  // 0.485 / 0.515 log2 spacing of E2M1's midpoints: every boundary within 0.01 of log2 of its
  // round-to-nearest midpoint (codegen test_directp_piecewise).
  std::array<float, 4> pieces = {0.090087890625f, 0.25146484375f, 0.28564453125f, 0.266845703125f};
};

// Range guard (NUMERICS.md §2.2): how the running row max is seeded and when O is rescaled.
enum class GuardKind : uint8_t {
  OnlineExact,   // classic online softmax: rescale whenever the tile max raises the row max
  SampledAnchor, // seed m from a max over sampled keys; rescale only when a tile max exceeds
                 // m + slack_log2 (slack keeps P within the fed format's range)
};
struct RangeGuardSpec {
  GuardKind kind = GuardKind::SampledAnchor;
  int sample_stride = 8;    // keys sampled for the anchor: every sample_stride-th key of tile 0
  float slack_log2 = 0.0f;  // allowed x above 0 before a rescale (0 => rescale on any increase)
};

// Which kernel family variant runs the attention forward.
enum class AttentionSchedule : uint8_t {
  MmaSync,              // templates/fa4jit/attention: mma.sync, 16 rows per warp (sm_80 and up)
  WgmmaWarpSpecialized, // templates/fa4jit/attention_sm90: wgmma (FP8 for the FP8-fed routes,
                        // BF16 for bf16), a producer warpgroup filling a shared-memory ring and
                        // two or three consumer warpgroups (sm_90a; block_m 128 or 192)
};

// Bench-only leave-one-out variants of the wgmma kernel: it leaves one stage out or runs it twice,
// so that timing it shows where the time goes (`fa4jit bench --ablation`). Their results are wrong
// by design: no default and no tuner candidate is one; only an explicit spec runs them.
enum class StageAblation : uint8_t {
  None,
  SkipLoads,    // the producer signals each stage without loading or widening K/V
  SkipQk,       // no QK^T wgmma: S is an opaque register value
  SkipSoftmax,  // no mask, max, rescale or P build: P is S's bits
  SkipPv,       // no PV wgmma
  SoftmaxTwice, // the softmax and P build run twice per tile
};

// Where the wgmma kernel's K/V tiles are widened from FP4 to E4M3 (Hopper has no FP4 tensor
// cores: docs/ARCHITECTURE.md §6).
enum class KvStaging : uint8_t {
  InKernel,   // the producer warpgroup of every CTA loads and widens each tile into shared memory
  Prewidened, // each tile's shared-memory image (E4M3, swizzled) is written once per forward; the
              // producer copies it with one bulk copy (TMA engine) per stage
  TensorMap,  // bf16 route: no widening; the producer loads Q, K and V tiles from the BF16 tensors
              // as they are, by TMA tensor maps (128-byte swizzle); V stays [keys][D] and PV reads
              // it N-major (attention_sm90/tensor_maps.cuh)
};

// How much of the problem one CTA and one main-loop iteration take.
struct TileShape {
  int block_m = 64; // query rows per CTA
  int block_n = 64; // keys per main-loop iteration; multiple of 32 (Direct-P block)
  int warps = 4;    // warps per CTA (wgmma schedule: the producer warpgroup + consumer warpgroups)
};

// How the main loop overlaps its stages (the wgmma schedule; mma.sync runs one stage serially).
struct PipelineSpec {
  int stages = 2; // K/V shared-memory ring depth (mma.sync ignores it)
  // Issue QK^T of tile j with PV of tile j-1 and run tile j's softmax while PV runs
  // (FlashAttention-3's intra-warpgroup overlap; P is double-buffered in registers).
  bool overlap = false;
  // The consumer warpgroups take turns issuing their wgmmas (named barriers), so that one's
  // softmax runs while the other's MMAs do (FlashAttention-3's ping-pong).
  bool pingpong = false;
};

// Which kernel runs and how its grid walks the work tiles.
struct ScheduleSpec {
  AttentionSchedule kernel = AttentionSchedule::MmaSync;
  // wgmma, staged K/V: a persistent grid (at most one CTA per SM) whose CTAs loop over the work
  // tiles (block_m query rows of one head), loading the next tile's Q while finishing the current
  // one (FlashAttention-3's persistent tile scheduler; attention_sm90/work_tiles.cuh).
  bool persistent = false;
  // wgmma, persistent, prewidened: two-CTA clusters running adjacent m-blocks of one head; each
  // CTA's producer loads half of every K/V stage and multicasts it into both CTAs, which halves
  // the ring's L2 reads (attention_sm90/cluster.cuh).
  bool kv_multicast = false;
};

// How the wgmma kernel's operand tiles reach shared memory.
struct StagingSpec {
  KvStaging kv = KvStaging::InKernel;
  // wgmma, persistent, prewidened (the FP8-fed routes): no widening passes; the spare warps of
  // the producer warpgroup write the K/V tile images and Q block images themselves while the
  // consumers compute, each K/V piece once per forward by whichever CTA claims it first
  // (attention_sm90/widen_ahead.cuh). Elsewhere it has no effect and canonicalize() clears it.
  bool fused_widening = false;
};

// The wgmma kernel's softmax: where S and l are accumulated and how P is formed.
struct SoftmaxOptions {
  // The FP8-fed routes: QK^T accumulates S in FP16 (the FP8 wgmma's .f16 form), two keys per
  // register, and the softmax works on FP16 pairs: directp's classifier input of a pair is one
  // HFMA2 from S, nvfp8's exponent one HFMA2 and the MUFU's FP16 exp2 (NUMERICS.md §2.1, §2.3).
  // Needs qk_widen_shift >= 7 (8 at head_dim 256), which keeps |S| below FP16's 65504.
  bool scores_fp16 = false;
  // The FP8-fed routes, head_dim <= 128: the normalizer l is summed by the PV wgmma itself,
  // through a row of ones appended to V^T in shared memory (an O column that is l), instead of
  // decoding every fed P byte on the ALUs. NUMERICS.md §2.3.
  bool mma_row_sum = false;
  // directp, 96- or 128-key tiles: the widening writes K's rows and V^T's columns in the order of
  // attention/key_order.cuh, in which every 32-key Direct-P block lies in one thread's S columns
  // (128-key tiles) or in thread pairs and a quad (96-key tiles). A block's max then needs fewer
  // quad shuffles, and its exponent, bias and fed table come once per 32 (or 16) of a thread's
  // scores instead of per 8. The numerics are unchanged: the same keys form the same blocks.
  bool thread_key_blocks = false;
  // directp with FP16 scores and the piecewise classifier: each piece evaluated from S directly,
  // sat(fma(acc_h, FP16(a mul), FP16(a bias + b))), one HFMA2.SAT per piece and pair of keys
  // (NUMERICS.md §2.3). Elsewhere it has no effect and canonicalize() clears it.
  bool pieces_from_scores = false;
  // nvfp8 with FP16 scores: of each tile's block_n / 8 n8 tiles of keys, the first
  // exp2_poly_tiles take 2^x_h as an FP16 polynomial on the FMA pipe (score_terms.cuh,
  // NUMERICS.md §2.3) instead of the MUFU, which takes 16 exp2 per clock per SM.
  int exp2_poly_tiles = 0;
};

// Tiles and schedule of one attention kernel. Every field is listed once in the field table of
// spec_fields.h, which drives its JSON form, equality, canonicalization and bench variant names.
struct TileSpec {
  TileShape shape;
  PipelineSpec pipeline;
  ScheduleSpec schedule;
  StagingSpec staging;
  SoftmaxOptions softmax;
  StageAblation bench_ablation = StageAblation::None; // bench only (StageAblation): wrong results
};

// Formats of the operands of one attention kernel. Derived from the route by
// defaultOperandFormats(route, target) but overridable for experiments.
struct OperandSpec {
  QkFormat qk_format = QkFormat::Nvfp4;  // how Q/K are stored (the route presets choose it)
  Widening qk_widening = Widening::E4m3; // how NVFP4 Q/K reach the tensor core
  Widening v_widening = Widening::E4m3;  // how V (MXFP4 for directp, FP8 for nvfp8) is fed
  int qk_widen_shift = 3;                // E4m3 widening: values times 2^-shift before rounding
  int p_offset_log2 = 8;                 // P is fed as E4M3(P * 2^offset): P in [0, 2^offset * 6]
  bool v_keys_permuted16 = false;        // Hopper register-P layout (docs/ARCHITECTURE.md §6)
};

struct TmemPlanRef {
  // For sm_100a: the TMEM planner's column assignment, recorded in the spec so it is part of
  // the generated source (and of the cache key). Filled by codegen/tmem_planner.
  int columns_allocated = 0;
  int s_col[2] = {-1, -1};
  int o_col[2] = {-1, -1};
  int sf_col = -1;
  // Added by the TMEM planner (codegen/tmem_planner.h): P aliasing S, the spare S destination of
  // a claimed overlap window, and each block-scaled operand's scale-factor columns per Q tile
  // (-1 = absent). sf_col above is the lowest of them.
  int p_col[2] = {-1, -1};
  int s_spare_col = -1;
  int sfq_col[2] = {-1, -1};
  int sfk_col[2] = {-1, -1};
  int sfp_col[2] = {-1, -1};
  int sfv_col[2] = {-1, -1};
};

struct AttentionSpec {
  Route route = Route::DirectP;
  int head_dim = 128;        // 64, 128 or 256 (baked)
  bool causal = false;       // bottom-right aligned when seqlen_q != seqlen_k (baked)
  float softmax_scale = 0.0f; // 0 => 1/sqrt(head_dim)
  ClassifierSpec classifier;  // directp only
  RangeGuardSpec guard;
  TileSpec tile;
  OperandSpec operands;
  TmemPlanRef tmem;
};

// The backward of the training route (docs/NUMERICS.md §3). It reads what the training forward
// saved (NVFP4 Q/K, V, O, LSE) and the incoming gradient dO, and writes dQ, dK, dV in BF16.
// How P and V feed dV = P^T dO and dP = dO V^T (dO is E4M3 with a per-head scale in both):
enum class BackwardPvFormat : uint8_t {
  E4m3,  // P = E4M3(P * 2^p_offset_log2), V the forward's E4M3 payload (the stable training route)
  Mxfp4, // P in MXFP4 blocked along queries, V as directp's forward saves it (MXFP4 V^T blocked
         // along keys), both widened exactly to E4M3 (the configuration found unstable in training,
         // kept to compare)
};

// Which Q and K the dS products dQ = dS K and dK = dS^T Q read (dS is BF16 in both):
enum class BackwardQkOperands : uint8_t {
  Bf16,        // the BF16 inputs, kept by the training forward (dQ/dK cosine 0.992 at σ = 1)
  SavedNvfp4,  // the saved NVFP4 payload decoded exactly (no extra memory; cosine 0.987)
};

// Which tensor-core instructions the main pass issues (templates/fa4jit/attention_backward):
enum class BackwardMma : uint8_t {
  MmaSync, // warp-level mma.sync (E4M3 m16n8k32, BF16 m16n8k16), operands through registers
  Wgmma,   // sm_90a warpgroup MMAs from swizzled shared tiles (main_wgmma.cuh): 64 keys per
           // warpgroup, block_m 32 or 64
};

struct BackwardSpec {
  // The training forward whose saved operands and LSE the backward reads: its route (nvfp8), head
  // dim, causal mask, softmax scale and Q/K widening.
  AttentionSpec forward;
  BackwardPvFormat pv = BackwardPvFormat::E4m3;
  // The BF16 inputs by default: NVFP4's own error in Q and K would otherwise reach dK and dQ
  // directly (the predicted cosines above: docs/NUMERICS.md §3).
  BackwardQkOperands qk = BackwardQkOperands::Bf16;
  // Fed P = E4M3(P * 2^p_offset_log2). P = exp2(t - LSE) stays below ~1.07 (the forward's l sums
  // E4M3-rounded values), so 2^8 keeps it under 448 and its small values above E4M3's subnormals.
  int p_offset_log2 = 8;
  // The kernel's tiles (templates/fa4jit/attention_backward): block_n keys per CTA, 16 per warp
  // (block_n = 16 * warps), and block_m queries per step. The heuristic (defaultBackwardSpec)
  // picks them per head dim; the CPU model ignores them.
  TileShape tile{32, 64, 4};
  // dQ's FP32 accumulator takes the key blocks in order, so that every run gives the same bits
  // (FlashAttention-3's deterministic mode); otherwise they add in arrival order.
  bool deterministic = false;
  BackwardMma mma = BackwardMma::MmaSync;
};

// E4m3Rows: Q/K for QkFormat::E4m3, [rows, D] E4M3 codes and NVFP4's per-head scale g, scaled by
// 2^-QuantizeSpec::code_shift (the attention kernel's qk_widen_shift).
enum class QuantFormat : uint8_t { Nvfp4, Mxfp4, Fp8PerHead, Bf16, E4m3Rows };
enum class QuantLayout : uint8_t {
  RowMajorK,       // payload [rows, K] K-contiguous (Q, K: K = head dim)
  Transposed,      // payload [cols, rows] with rows contiguous (V^T: keys contiguous)
};
// What a quantizer reads (QuantizeSpec::input_fp32 / input_fp16).
enum class QuantInput : uint8_t { Bf16, F32, F16 };

struct QuantizeSpec {
  QuantFormat format = QuantFormat::Nvfp4;
  QuantLayout layout = QuantLayout::RowMajorK;
  bool input_fp32 = false; // FP32 input
  bool input_fp16 = false; // FP16 input; neither: BF16
  bool keys_permuted16 = false;
  int head_dim = 128;
  int threads = 256;
  int code_shift = 0; // E4m3Rows only: codes are E4M3(x / g * 2^-code_shift)
};

// The element type of the outputs O that merge-states reads and writes (its LSEs are FP32).
enum class StateType : uint8_t { Bf16, F16, F32 };

// Merging attention states: the (O, LSE) of attention over disjoint key sets into the (O, LSE)
// over their union (split-KV, context parallelism; docs/NUMERICS.md §4).
struct MergeSpec {
  StateType value = StateType::Bf16;
  int head_dim = 128;
  int threads = 128;
};

// The paged, quantized KV cache (docs/NUMERICS.md §5): one module per spec with three kernels,
// the append that quantizes new tokens into their pages, decode over the pages (split-KV), and the
// combine of decode's splits.
// The paged cache's V codes: E4M3 with an FP32 scale per row (132 bytes per row at D 128), or
// MXFP4 with a UE8M0 scale per 32 values (68 bytes; docs/NUMERICS.md §5.1).
enum class KvValueFormat : uint8_t { Fp8, Mxfp4 };

// The append kernel's CTA: 8 to 32 token rows, a memory-bound pass with several CTAs per SM.
inline constexpr int kPagedAppendThreads = 128;
struct PagedKvSpec {
  int head_dim = 128;
  int page_size = 16; // tokens per page: a power of two in [16, 256]
  int warps = 4;      // decode: warps per CTA, each streaming its own 16-key steps
  KvValueFormat value_format = KvValueFormat::Fp8;
  // decode: how a warp's next steps reach it. 0: straight into registers, one step ahead; 2 or 3:
  // a ring of that many steps per warp in shared memory, filled by cp.async (stages - 1 steps in
  // flight, and no registers held for them).
  int kv_stages = 0;
};

struct KernelSpec {
  KernelFamily family = KernelFamily::AttentionForward;
  Target target = Target::Sm90a;
  AttentionSpec attention; // family == AttentionForward
  QuantizeSpec quantize;   // family == Quantize
  BackwardSpec backward;   // family == AttentionBackward
  MergeSpec merge;         // family == MergeStates
  PagedKvSpec paged;       // family == PagedKv
};

const char *toString(Target t);
const char *toString(Route r);
const char *toString(Widening w);
const char *toString(QkFormat f);
const char *toString(ClassifierKind k);
const char *toString(GuardKind k);
const char *toString(AttentionSchedule s);
const char *toString(StageAblation a);
const char *toString(KvStaging k);
const char *toString(QuantFormat f);
const char *toString(QuantLayout l);
const char *toString(KernelFamily f);
const char *toString(BackwardPvFormat f);
const char *toString(BackwardQkOperands q);
const char *toString(BackwardMma m);
const char *toString(StateType t);
const char *toString(KvValueFormat f);

} // namespace fa4jit
