#pragma once
// The instantiation contract of the attention backward (kernel.cuh). The generated file defines
//   struct GeneratedConfig {
//     static constexpr int head_dim;         // 64 or 128
//     static constexpr bool causal;          // bottom-right aligned, as the forward
//     static constexpr bool pv_mxfp4;        // P and V as MXFP4 widened to E4M3 (else E4M3 P, FP8 V)
//     static constexpr bool qk_saved_nvfp4;  // dQ = dS K, dK = dS^T Q read the saved NVFP4 Q/K
//                                            // decoded (else the BF16 inputs)
//     static constexpr int qk_widen_shift;   // the forward's E4M3 widening of NVFP4 Q/K
//     static constexpr float score_scale;    // softmax_scale * log2(e) * 4^qk_widen_shift
//     static constexpr float softmax_scale;  // dQ, dK factor
//     static constexpr int p_offset_log2;    // P fed as E4M3(P * 2^off)
//     static constexpr int block_m, block_n, warps; // queries per step, keys per CTA, warps per CTA
//     static constexpr bool deterministic;   // dQ added in key-block order
//     static constexpr bool wgmma;           // the main pass on warpgroup MMAs (main_wgmma.cuh)
//   };
// and the three entry points of emit_backward.cpp.
#include "fa4jit/attention_backward/params.cuh"

namespace fa4jit::device::attention_backward {

template <class C> struct BackwardTraits {
  static constexpr int kHeadDim = C::head_dim;
  static constexpr int kBlockM = C::block_m;
  static constexpr int kBlockN = C::block_n;
  static constexpr int kWarps = C::warps;
  static constexpr int kThreads = kWarps * 32;
  static constexpr int kQueryTiles = kBlockM / 8; // n8 tiles of queries in S^T, dP^T
  static constexpr int kDimTiles = kHeadDim / 8;  // n8 tiles of the head dim in dK, dV
  // dQ = dS K of one query block: the warps split it into 16-query row groups times column slices.
  static constexpr int kRowGroups = kBlockM / 16;
  static constexpr int kDqColumnSlices = kWarps / kRowGroups;
  static constexpr int kDqCols = kHeadDim / kDqColumnSlices;

  static constexpr int kFp8Pitch = backwardFp8Pitch(kHeadDim);
  static constexpr int kBf16Pitch = backwardBf16Pitch(kHeadDim);
  static constexpr int kDoTPitch = backwardDoTPitch(kBlockM);
  static constexpr int kDsPitch = backwardDsPitch(kBlockM);
  // Shared-memory regions, in bytes from the base: the key block's, then two query stages (the
  // block in use and the next one in flight), each laid out by the kStage* offsets.
  static constexpr int kK8 = 0;
  static constexpr int kKb = kK8 + kBlockN * kFp8Pitch;
  static constexpr int kV8 = kKb + kBlockN * kBf16Pitch;
  static constexpr int kDsT = kV8 + kBlockN * kFp8Pitch;
  static constexpr int kStages = kDsT + kBlockN * kDsPitch;
  static constexpr int kStageQ8 = 0;
  static constexpr int kStageQb = kStageQ8 + kBlockM * kFp8Pitch;
  static constexpr int kStageDo8 = kStageQb + kBlockM * kBf16Pitch;
  static constexpr int kStageDoT = kStageDo8 + kBlockM * kFp8Pitch;
  static constexpr int kStageLse2 = kStageDoT + kHeadDim * kDoTPitch;
  static constexpr int kStageDelta = kStageLse2 + 4 * kBlockM;
  static constexpr int kStageBytes = kStageDelta + 4 * kBlockM;
  static_assert(kStageBytes == backwardQueryStageBytes(kHeadDim, kBlockM), "query stage layout");
  static constexpr int kSharedBytes = kStages + 2 * kStageBytes;
  static_assert(kSharedBytes == backwardSharedBytes(kHeadDim, kBlockM, kBlockN), "shared layout");
  static_assert(kBlockM % 16 == 0 && kStageRows % kBlockM == 0, "query blocks tile the staged rows");

  static_assert(kHeadDim == 64 || kHeadDim == 128, "head_dim 64 or 128");
  static_assert(kBlockN == 16 * kWarps, "each warp owns 16 keys");
  static_assert(kBlockM % 16 == 0 && kBlockM <= 64, "block_m 16, 32 or 64");
  static_assert(kWarps % kRowGroups == 0, "dQ: whole row groups per warp set");
  static_assert(kDqCols % 16 == 0, "dQ: each warp's columns are whole n16 pairs (ldmatrix x4)");
  static_assert(!C::pv_mxfp4 || kBlockM % 32 == 0, "MXFP4 P blocks 32 queries");
  static_assert(C::qk_widen_shift >= 0 && C::qk_widen_shift <= 16, "qk_widen_shift out of range");
  static_assert(C::p_offset_log2 >= 0 && C::p_offset_log2 <= 8, "p_offset_log2 out of range");
};

} // namespace fa4jit::device::attention_backward
