#pragma once
// The constants baked into one attention kernel. The code generator emits a struct with exactly
// these static constexpr members (named fields, no positional lists) and instantiates the kernel
// with it; AttentionTraits checks every field and derives the layout. The enums carry the numeric
// values of fa4jit::Route / Widening / GuardKind in codegen/spec.h, so the generator casts.
//
//   struct MyConfig {
//     static constexpr Route route;            // Bf16, Nvfp8, DirectP
//     static constexpr int head_dim;           // 64, 128, 256
//     static constexpr bool causal;            // bottom-right aligned
//     static constexpr int block_m, block_n;   // rows per CTA (16 per warp), keys per tile (% 32)
//     static constexpr int warps;              // block_m / 16
//     static constexpr Widening qk_widening;   // Bf16 or E4m3 (NVFP4 Q/K); Bf16 for the bf16 route
//     static constexpr int qk_widen_shift;     // sigma of NUMERICS.md §2.1 (E4m3 widening)
//     static constexpr int p_offset_log2;      // off of NUMERICS.md §2.3 (FP8-fed routes)
//     static constexpr bool v_keys_permuted16; // V^T in global already in the register-P order
//     static constexpr float score_scale;      // softmax_scale*log2(e) [*4^sigma for E4m3], FP32
//     static constexpr DirectPCoefficients classifier; // directp only (any value otherwise)
//     static constexpr GuardKind guard;
//     static constexpr int guard_sample_stride;
//     static constexpr float guard_slack_log2;
//     static constexpr bool qk_e4m3;            // optional (wgmma kernel): Q/K stored as E4M3
//   };
#include "fa4jit/common.cuh"
#include "fa4jit/directp.cuh"
#include "fa4jit/attention/key_order.cuh"
#include "fa4jit/attention/params.cuh"

namespace fa4jit::device::attention {

enum class Route : int { Bf16 = 0, Nvfp8 = 1, DirectP = 2 };
enum class Widening : int { Bf16 = 0, E4m3 = 1, Native = 2 };
enum class GuardKind : int { OnlineExact = 0, SampledAnchor = 1 };
// wgmma schedule only (attention_sm90/kernel.cuh): the leave-one-out evidence variants.
enum class StageAblation : int { None = 0, SkipLoads, SkipQk, SkipSoftmax, SkipPv, SoftmaxTwice };

FA4JIT_HD constexpr int ceilToInt(float v) {
  return static_cast<int>(v) + (static_cast<float>(static_cast<int>(v)) < v ? 1 : 0);
}

// C::thread_key_blocks where the config has it (the wgmma kernels' configs bake it), else false.
template <class C> struct ThreadKeyBlocksOf {
  template <class X> FA4JIT_HD static constexpr bool get(decltype(&X::thread_key_blocks)) { return X::thread_key_blocks; }
  template <class X> FA4JIT_HD static constexpr bool get(...) { return false; }
  static constexpr bool value = get<C>(nullptr);
};

// C::qk_e4m3 where the config has it (Q/K stored as E4M3 codes, NUMERICS.md §1.4), else false.
template <class C> struct QkE4m3Of {
  template <class X> FA4JIT_HD static constexpr bool get(decltype(&X::qk_e4m3)) { return X::qk_e4m3; }
  template <class X> FA4JIT_HD static constexpr bool get(...) { return false; }
  static constexpr bool value = get<C>(nullptr);
};

template <class C> struct AttentionTraits {
  static constexpr Route kRoute = C::route;
  static constexpr int kHeadDim = C::head_dim;
  static constexpr int kBlockM = C::block_m;
  static constexpr int kBlockN = C::block_n;
  static constexpr int kWarps = C::warps;
  static constexpr int kThreads = C::warps * 32;

  static_assert(kHeadDim == 64 || kHeadDim == 128 || kHeadDim == 256, "head_dim must be 64, 128 or 256");
  // mma.sync path: one warp owns 16 query rows (the M of m16n8k*).
  static_assert(kBlockM == 16 * kWarps, "block_m must be 16 * warps on the mma.sync path");
  static_assert(kWarps >= 1 && kWarps <= 16, "warps must be in [1, 16]");
  // (the bf16 route's wgmma kernel also runs 80-key tiles: a multiple of its k-step of 16)
  static_assert((kBlockN % 32 == 0 || (kRoute == Route::Bf16 && kBlockN % 16 == 0)) && kBlockN >= 32 &&
                    kBlockN <= 256,
                "block_n must be a multiple of 32 (the Direct-P block) in [32, 256]");
  static_assert(C::guard == GuardKind::OnlineExact || C::guard == GuardKind::SampledAnchor, "guard kind");
  static_assert(C::guard_sample_stride >= 1, "guard_sample_stride must be >= 1");
  static_assert(C::guard_slack_log2 >= 0.0f, "guard_slack_log2 must be >= 0");
  static_assert(C::score_scale > 0.0f, "score_scale must be positive");

  // FP4 Q/K reach the tensor core as BF16 (m16n8k16) or E4M3 (m16n8k32); Native needs sm_100a.
  static constexpr bool kQkBf16 = kRoute == Route::Bf16 || C::qk_widening == Widening::Bf16;
  static_assert(kRoute == Route::Bf16 || C::qk_widening == Widening::Bf16 || C::qk_widening == Widening::E4m3,
                "qk_widening must be Bf16 or E4m3 on the mma.sync path");
  static_assert(kRoute == Route::Bf16 || C::qk_widening != Widening::E4m3 ||
                    (C::qk_widen_shift >= 0 && C::qk_widen_shift <= 8),
                "qk_widen_shift out of range");
  static_assert(kRoute == Route::Bf16 || (C::p_offset_log2 >= 0 && C::p_offset_log2 <= 8),
                "p_offset_log2 must be in [0, 8]");
  // P_fed <= 6 * 2^(off + slack - 2) <= 448 (NUMERICS.md §2.2).
  static_assert(kRoute == Route::Bf16 || C::p_offset_log2 + ceilToInt(C::guard_slack_log2) <= 8,
                "p_offset_log2 + ceil(guard_slack_log2) must be <= 8");

  // Offset subtracted in the LSE (NUMERICS.md §2.4).
  static constexpr int kLseOffset = kRoute == Route::Bf16 ? 0 : C::p_offset_log2;

  // Shared memory (params.cuh): Q [block_m][pitch], K [block_n][pitch], then V.
  static constexpr int kQkBytes = kQkBf16 ? 2 : 1;
  static constexpr bool kVKeyMajor = kRoute == Route::Bf16;
  static constexpr int kQkPitch = attentionQkPitch(kHeadDim, kQkBytes);
  static constexpr int kVPitch = attentionVPitch(kHeadDim, kBlockN, kVKeyMajor);
  static constexpr int kQOffset = 0;
  static constexpr int kKOffset = kBlockM * kQkPitch;
  static constexpr int kVOffset = kKOffset + kBlockN * kQkPitch;
  static constexpr int kSharedBytes = attentionSharedBytes(kHeadDim, kBlockM, kBlockN, kQkBytes, kVKeyMajor);

  // Register fragments per thread (see mma.cuh for the layouts).
  static constexpr int kSTiles = kBlockN / 8;   // n8 tiles of S
  static constexpr int kOTiles = kHeadDim / 8;  // n8 tiles of O
  // Every Direct-P block in one thread's S columns (TileSpec::thread_key_blocks, scores.cuh).
  static constexpr bool kThreadKeyBlocks = ThreadKeyBlocksOf<C>::value;
  static_assert(!kThreadKeyBlocks || (kRoute == Route::DirectP && threadKeyBlocksTile(kBlockN)),
                "thread_key_blocks: the directp route with 96-key tiles or whole 128-key groups");
  // The Direct-P blocks a thread's row meets, per k-step of 32 S columns (key_order.cuh).
  using Blocks = ThreadBlocks<kBlockN, kThreadKeyBlocks>;
};

} // namespace fa4jit::device::attention
