#pragma once
// A consumer warpgroup's softmax of one tile in its two phases (consumer.cuh runs phase A under
// the previous PV and phase B after it): the route's P builders of attention/, applied to the
// warpgroup's per-warp fragments, and the leave-one-out variants of `ablation`.
#include "fa4jit/attention/config.cuh"
#include "fa4jit/attention/p_bf16.cuh"
#include "fa4jit/attention/p_directp.cuh"
#include "fa4jit/attention/p_nvfp8.cuh"
#include "fa4jit/attention/scores.cuh"
#include "fa4jit/attention/scores_fp16.cuh"
#include "fa4jit/attention/softmax.cuh"
#include "fa4jit/attention_sm90/consumer_mma.cuh"
#include "fa4jit/attention_sm90/wgmma.cuh"

namespace fa4jit::device::attention_sm90 {

using attention::AttentionTraits;
using attention::PendingP;
using attention::StageAblation;

// What a consumer thread knows about its rows for the whole loop.
struct ConsumerRows {
  float score_mul;   // t = acc * score_mul (NUMERICS.md §2.1), > 0 (scoreMultiplier)
  int vis[2];        // visible keys of rows g and g + 8 of this warp
  int wg_unmasked;   // keys visible to every row of the warpgroup (tiles below need no mask)
  int lane;
};

// Phase A after the masking: the row max, then Direct-P's classification or the exponentiation (in
// place in S, the multiplier folded into one FFMA per key) with l. kAllVisible: the unmasked arm
// (every key of the tile, hence of tile 0, visible to every row of the warpgroup).
template <class C, class CV, bool kAllVisible>
FA4JIT_DEVICE void softmaxRest(attention::ScoreRegs<CV> &s, PendingP<CV> &pp,
                               attention::SoftmaxRows &st, float (&o_scale)[2], const ConsumerRows &rows,
                               bool first_tile) {
  using T = AttentionTraits<CV>;
  constexpr bool kDirectP = C::route == attention::Route::DirectP;
  float block_max[T::kBlockN / 32][2], tile_max[2];
  attention::rowTileMax<CV, kDirectP>(s, block_max, tile_max);
  attention::advanceRowMax<CV, kAllVisible>(st, s, tile_max, rows.score_mul, first_tile, rows.lane, o_scale);
  if constexpr (kDirectP)
    attention::classifyDirectP<CV, !C::mma_row_sum, kAllVisible>(pp, s, block_max, st, rows.score_mul);
  else if constexpr (POperand<C>::kBf16)
    attention::exponentiateBf16<CV>(s, st, rows.score_mul);
  else
    attention::exponentiateNvfp8<CV, C::mma_row_sum>(s, st, rows.score_mul);
}

// Phase A of a tile's softmax: mask S (acc), advance the row max (o_scale: O's pending
// factor), classify (directp) or exponentiate in place (nvfp8, bf16), advance l except nvfp8's.
template <class C, class CV>
FA4JIT_DEVICE void softmaxTile(attention::ScoreRegs<CV> &s, PendingP<CV> &pp,
                               attention::SoftmaxRows &st, float (&o_scale)[2], const ConsumerRows &rows, int key0,
                               bool first_tile) {
  using T = AttentionTraits<CV>;
  if constexpr (C::ablation == StageAblation::SkipSoftmax) {
    o_scale[0] = o_scale[1] = 1.0f;
    st.l[0] += 1.0f; // keeps l > 0, so the epilogue reads O and the compiler keeps every wgmma
    st.l[1] += 1.0f;
    return;
  }
  // Both arms run the whole phase, so that the exponentiation ends a basic block of its own. In
  // one block with the caller's wait for the previous PV (overlapStep), ptxas scheduled the wait
  // first and every exp2 of the tile after it: measured in the SASS of the nvfp8, directp and bf16
  // kernels (all 64 MUFU.EX2 per thread behind WARPGROUP.DEPBAR.LE gsb0, 0x0), so the softmax
  // never overlapped the PV. Split, they run before it.
  if (key0 + T::kBlockN > rows.wg_unmasked) {
    attention::maskScores<CV>(s, rows.vis, key0, rows.lane);
    softmaxRest<C, CV, false>(s, pp, st, o_scale, rows, first_tile);
  } else {
    softmaxRest<C, CV, true>(s, pp, st, o_scale, rows, first_tile);
  }
}

// Marks Direct-P's pending selectors and tables as used (empty asm: no instruction).
template <class CV> FA4JIT_DEVICE void fencePendingP(PendingP<CV> &pp) {
  if constexpr (CV::route == attention::Route::DirectP) {
#pragma unroll
    for (int b = 0; b < PendingP<CV>::kBlocks; ++b)
#pragma unroll
      for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          if (b < PendingP<CV>::kTables) // (a table per block: fewer than k-steps with thread key blocks)
            asm volatile("" : "+r"(pp.sel[b][i][j]), "+r"(pp.fed[b][i][j])::"memory");
          else
            asm volatile("" : "+r"(pp.sel[b][i][j])::"memory");
        }
  }
}

template <class C, class CV>
FA4JIT_DEVICE void softmaxStage(attention::ScoreRegs<CV> &s, PendingP<CV> &pp,
                                attention::SoftmaxRows &st, float (&o_scale)[2], const ConsumerRows &rows, int key0,
                                bool first_tile) {
  softmaxTile<C, CV>(s, pp, st, o_scale, rows, key0, first_tile);
  if constexpr (C::ablation == StageAblation::SoftmaxTwice) {
    // The second pass must cost a whole pass. The empty-asm fences emit no PTX, so ptxas saw
    // Direct-P's second classification overwrite the first one's selectors and dropped the first
    // as dead (the variant then cost directp 5-7% where it cost nvfp8, whose exp2 runs in place
    // in s, 29%). So the second pass runs with another multiplier (its work differs from the
    // first's) and the two passes' selectors and tables are combined (XOR keeps codes <= 7).
    const PendingP<CV> first = pp;
    sm90_fence_regs(s);
    ConsumerRows again = rows;
    again.score_mul = rows.score_mul * 1.00000012f; // one ulp up
    softmaxTile<C, CV>(s, pp, st, o_scale, again, key0, first_tile);
    if constexpr (CV::route == attention::Route::DirectP) {
#pragma unroll
      for (int b = 0; b < PendingP<CV>::kBlocks; ++b)
#pragma unroll
        for (int i = 0; i < 2; ++i)
#pragma unroll
          for (int j = 0; j < 2; ++j) {
            pp.sel[b][i][j] ^= first.sel[b][i][j];
            if (b < PendingP<CV>::kTables)
              pp.fed[b][i][j] ^= first.fed[b][i][j];
          }
    }
  }
}

// Phase B: the A fragments of P (after the PV that read the previous ones has completed).
template <class C, class CV>
FA4JIT_DEVICE void packP(uint32_t (&pa)[POperand<C>::kSteps][4], const PendingP<CV> &pp,
                         const attention::ScoreRegs<CV> &s, attention::SoftmaxRows &st) {
  if constexpr (C::ablation == StageAblation::SkipSoftmax) {
#pragma unroll
    for (int kb = 0; kb < POperand<C>::kSteps; ++kb)
#pragma unroll
      for (int i = 0; i < 4; ++i) // not a plain copy: ptxas would coalesce P with S and serialize
        pa[kb][i] = attention::scoreBits(s, 4 * kb + i) + 1u;
  } else if constexpr (C::route == attention::Route::DirectP) {
    attention::packDirectP<CV>(pa, pp);
  } else if constexpr (POperand<C>::kBf16) {
    attention::packBf16<CV>(pa, s);
  } else {
    attention::packNvfp8<CV, !C::mma_row_sum>(pa, s, st);
  }
}

} // namespace fa4jit::device::attention_sm90
