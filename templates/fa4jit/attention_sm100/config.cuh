#pragma once
// Constants of one sm_100a attention kernel (tcgen05 path) and the layout they imply.
// The config struct the generator emits has every member of fa4jit/attention/config.cuh (same
// meaning, with qk_widening = Native) plus the pipeline depth and the TMEM columns of the planner's
// plan (codegen/tmem_planner.h, recorded in the spec's TmemPlanRef):
//     static constexpr int stages;           // K/V shared-memory buffers (2: load j+1 during j)
//     static constexpr int tmem_columns;     // tcgen05.alloc argument
//     static constexpr int tmem_s_col, tmem_o_col, tmem_p_col;        // S, O, P (P aliases S)
//     static constexpr int tmem_sfq_col, tmem_sfk_col;                // UE4M3 scales of Q, K
//     static constexpr int tmem_sfp_col, tmem_sfv_col;                // UE8M0 scales of P, V (-1 for nvfp8)
// One CTA = one 128-row Q tile (the planner's q_tiles = 1), 4 warps, thread i owns query row i and
// TMEM lane i (an M = 128 MMA writes row i of D to lane i).
#include "fa4jit/attention/config.cuh"

namespace fa4jit::device::attention {

template <class C> struct Sm100AttentionTraits {
  static constexpr Route kRoute = C::route;
  static constexpr int kHeadDim = C::head_dim;
  static constexpr int kBlockM = C::block_m;
  static constexpr int kBlockN = C::block_n;
  static constexpr int kWarps = C::warps;
  static constexpr int kThreads = kWarps * 32;
  static constexpr int kStages = C::stages;
  static constexpr bool kDirectP = kRoute == Route::DirectP;

  static_assert(kRoute == Route::Nvfp8 || kRoute == Route::DirectP, "the tcgen05 kernel serves nvfp8 and directp");
  static_assert(kHeadDim == 64 || kHeadDim == 128 || kHeadDim == 256, "head_dim must be 64, 128 or 256");
  static_assert(kBlockM == 128 && kWarps == 4, "one 128-row Q tile (M = 128, 128 TMEM lanes) per 4-warp CTA");
  static_assert(kBlockN == 128, "block_n 128: one 512-byte SF atom of P per tile, N = 128 for QK^T");
  static_assert(kStages == 1 || kStages == 2, "stages must be 1 or 2");
  static_assert(C::qk_widening == Widening::Native, "NVFP4 Q/K are fed natively (kind::mxf4nvf4)");
  static_assert(C::guard == GuardKind::OnlineExact || C::guard == GuardKind::SampledAnchor, "guard kind");
  static_assert(C::guard_sample_stride >= 1, "guard_sample_stride must be >= 1");
  static_assert(C::guard_slack_log2 >= 0.0f, "guard_slack_log2 must be >= 0");
  static_assert(C::score_scale > 0.0f, "score_scale must be positive");
  static_assert(kDirectP || C::p_offset_log2 + ceilToInt(C::guard_slack_log2) <= 8,
                "p_offset_log2 + ceil(guard_slack_log2) must be <= 8 (E4M3 P)");

  // ---- TMEM plan (columns) -------------------------------------------------------------------
  static constexpr int kTmemColumns = C::tmem_columns;
  static constexpr int kSCol = C::tmem_s_col, kOCol = C::tmem_o_col, kPCol = C::tmem_p_col;
  static constexpr int kSfqCol = C::tmem_sfq_col, kSfkCol = C::tmem_sfk_col;
  static constexpr int kSfpCol = C::tmem_sfp_col, kSfvCol = C::tmem_sfv_col;
  static constexpr int kPBits = kDirectP ? 4 : 8;
  static constexpr int kPColumns = kBlockN * kPBits / 32;
  static constexpr int kQkSfColumns = 4 * (kHeadDim / 64); // one 4-column atom per K = 64 step
  static constexpr int kVRowBlocks = (kHeadDim + 127) / 128;
  static_assert(kTmemColumns >= 32 && kTmemColumns <= 512 && (kTmemColumns & (kTmemColumns - 1)) == 0,
                "tcgen05.alloc takes a power of two in [32, 512]");
  static_assert(kSCol >= 0 && kSCol + kBlockN <= kTmemColumns, "S outside the allocation");
  static_assert(kOCol >= 0 && kOCol + kHeadDim <= kTmemColumns, "O outside the allocation");
  static_assert(kOCol >= kSCol + kBlockN || kOCol + kHeadDim <= kSCol, "O overlaps S");
  static_assert(kPCol >= kSCol && kPCol + kPColumns <= kSCol + kBlockN, "P must alias S (written after S is read)");
  // QK's scales are written (tcgen05.cp) before QK reads them and while S may hold the previous P:
  // they must have columns of their own.
  static_assert(kSfqCol >= 0 && kSfkCol >= 0, "Q and K scale-factor columns missing");
  static_assert(kSfqCol >= kSCol + kBlockN || kSfqCol + kQkSfColumns <= kSCol, "SFQ inside S");
  static_assert(kSfkCol >= kSCol + kBlockN || kSfkCol + kQkSfColumns <= kSCol, "SFK inside S");
  static_assert(kSfqCol + kQkSfColumns <= kTmemColumns && kSfkCol + kQkSfColumns <= kTmemColumns,
                "QK scale factors outside the allocation");
  // PV's scales may sit in S's dead columns (below P): they are copied after softmax read S.
  static_assert(!kDirectP || (kSfpCol >= 0 && kSfvCol >= 0), "P and V scale-factor columns missing");
  static_assert(!kDirectP || (kSfpCol + 4 <= kTmemColumns && kSfvCol + 4 * kVRowBlocks <= kTmemColumns),
                "PV scale factors outside the allocation");
  static_assert(!kDirectP || kSfpCol + 4 <= kPCol || kSfpCol >= kPCol + kPColumns, "SFP overlaps P");
  static_assert(!kDirectP || kSfvCol + 4 * kVRowBlocks <= kPCol || kSfvCol >= kPCol + kPColumns, "SFV overlaps P");

  // ---- shared memory (bytes; every buffer a multiple of 1024, so all stay 1024-aligned) ----------
  // Payloads in the no-swizzle UMMA layout (descriptors.cuh): 8-row x 16-byte core matrices of 128
  // contiguous bytes; core matrix (row / 8, chunk) at ((row / 8) * chunks_per_row + chunk) * 128.
  static constexpr int kQkRowBytes = kHeadDim / 2;                 // NVFP4 row of Q or K
  static constexpr int kVRowBytes = kDirectP ? kBlockN / 2 : kBlockN; // V^T row: MXFP4 or E4M3 keys
  static constexpr int kQBytes = kBlockM * kQkRowBytes;
  static constexpr int kKBytes = kBlockN * kQkRowBytes;
  static constexpr int kVBytes = kHeadDim * kVRowBytes;
  static constexpr int kSfAtomBytes = 512;
  static constexpr int kSfqBytes = (kHeadDim / 64) * kSfAtomBytes;   // 128 rows x D/16 UE4M3
  static constexpr int kSfkBytes = kSfqBytes;
  static constexpr int kSfvBytes = kDirectP ? kVRowBlocks * kSfAtomBytes : 0;
  static constexpr int kSfvAlloc = 1024; // one or two atoms, padded to keep 1024-byte alignment
  static constexpr int kSfpBytes = kSfAtomBytes;

  static constexpr int kQOffset = 0;
  static constexpr int kSfkAlloc = ((kSfkBytes + 1023) / 1024) * 1024;
  static constexpr int kStageBytes = kKBytes + kVBytes + kSfkAlloc + kSfvAlloc;
  static constexpr int kKOffsetInStage = 0;
  static constexpr int kVOffsetInStage = kKBytes;
  static constexpr int kSfkOffsetInStage = kKBytes + kVBytes;
  static constexpr int kSfvOffsetInStage = kSfkOffsetInStage + kSfkAlloc;
  static constexpr int kStage0Offset = kQOffset + kQBytes;
  static constexpr int kSfqOffset = kStage0Offset + kStages * kStageBytes;
  static constexpr int kSfpOffset = kSfqOffset + ((kSfqBytes + 1023) / 1024) * 1024;
  static constexpr int kBarrierOffset = kSfpOffset + 1024;
  // mbarriers: Q loaded, K/V stage loaded (per stage), QK^T done, PV done; then the TMEM address.
  static constexpr int kNumBarriers = 3 + kStages;
  static constexpr int kTmemSlotOffset = kBarrierOffset + 8 * kNumBarriers;
  static constexpr int kSharedBytes = kTmemSlotOffset + 16;
  static_assert(kSharedBytes <= 227 * 1024, "shared memory over the sm_100a per-CTA limit");
  static_assert(kQkRowBytes % 16 == 0 && kVRowBytes % 16 == 0, "rows move in 16-byte chunks");

  // ---- MMA shapes --------------------------------------------------------------------------------
  static constexpr int kQkSteps = kHeadDim / 64;               // kind::mxf4nvf4, K = 64
  static constexpr int kPvSteps = kDirectP ? kBlockN / 64 : kBlockN / 32; // mxf4 K = 64, f8f6f4 K = 32
  static constexpr int kStepBytes = 32;                        // every K step reads 32 bytes per row
  static constexpr int kLseOffset = kDirectP ? 0 : C::p_offset_log2; // NUMERICS.md §2.4
};

} // namespace fa4jit::device::attention
