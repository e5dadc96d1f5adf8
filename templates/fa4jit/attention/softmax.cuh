#pragma once
// Online softmax in the log2 domain with the range guard (NUMERICS.md §2.2). Each thread holds two
// rows of its warp's 16 (g and g + 8, index r = 0, 1); the four threads of a quad (same g) hold a
// row's keys between them, so row reductions are two xor-shuffles.
#include "fa4jit/attention/config.cuh"
#include "fa4jit/attention/mma.cuh"
#include "fa4jit/attention/score_tile.cuh"
#include "fa4jit/attention/scores.cuh"

namespace fa4jit::device::attention {

struct SoftmaxRows {
  float m[2];     // running max of t = acc * mul (FP32), -inf until a visible key has been seen
  float l[2];     // this thread's share of the normalizer (summed over the quad in the epilogue)
  float m_use[2]; // m, or 0 while m = -inf (so that x = fma(acc, mul, -m_use) is -inf, never NaN)
};

FA4JIT_DEVICE void softmaxInit(SoftmaxRows &st) {
  st.m[0] = st.m[1] = negInf();
  st.l[0] = st.l[1] = 0.0f;
  st.m_use[0] = st.m_use[1] = 0.0f;
}

// Row maxima of the (masked) accumulators over the tile (quad-reduced) and, when kBlocks, over each
// 32-key block; times the multiplier they are the maxima of t (score_terms.cuh).
// A tile of 80 keys (the bf16 wgmma kernel's, never Direct-P's) ends in a half block: its last
// two n8 tiles enter the tile max on their own.
// With thread key blocks (key_order.cuh) a block spans one thread (128-key groups) or two and
// four (96-key tiles): its max takes 0, 1 or 2 shuffles, the tile max what the quad still lacks;
// block_max then holds each block's max at each of its k-steps (kb), which classifyDirectP reads
// once per block.
template <class CV, bool kBlocks>
FA4JIT_DEVICE void rowTileMax(const float (&s)[AttentionTraits<CV>::kSTiles][4],
                              float (&block_max)[AttentionTraits<CV>::kBlockN / 32][2], float (&tile_max)[2]) {
  constexpr int kBlocksPerTile = AttentionTraits<CV>::kBlockN / 32;
  constexpr int kTailTiles = AttentionTraits<CV>::kSTiles - 4 * kBlocksPerTile;
  static_assert(!kBlocks || kTailTiles == 0, "Direct-P's blocks are whole 32-key blocks");
  if constexpr (AttentionTraits<CV>::kThreadKeyBlocks) {
    using B = typename AttentionTraits<CV>::Blocks;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float bmax[B::kBlocks];
      if constexpr (kBlocksPerTile % 4 == 0) { // 128-key groups: a block is 16 n8 tiles of the thread
#pragma unroll
        for (int b = 0; b < B::kBlocks; ++b) {
          float m[16]; // a tree, not a chain: 5 dependent FMNMX instead of 31
#pragma unroll
          for (int i = 0; i < 16; ++i)
            m[i] = fmaxf(s[16 * b + i][2 * r], s[16 * b + i][2 * r + 1]);
#pragma unroll
          for (int i = 0; i < 8; ++i) // (levels written out: nested loops of varying trip counts
            m[i] = fmaxf(m[i], m[i + 8]); // did not unroll, and m went to local memory)
#pragma unroll
          for (int i = 0; i < 4; ++i)
            m[i] = fmaxf(m[i], m[i + 4]);
          bmax[b] = fmaxf(fmaxf(m[0], m[2]), fmaxf(m[1], m[3]));
        }
      } else { // 96-key tiles: each k-step's 8 columns by a tree, then the block's steps
        float step_max[kBlocksPerTile];
#pragma unroll
        for (int kb = 0; kb < kBlocksPerTile; ++kb) {
          float m[4];
#pragma unroll
          for (int i = 0; i < 4; ++i)
            m[i] = fmaxf(s[4 * kb + i][2 * r], s[4 * kb + i][2 * r + 1]);
          step_max[kb] = fmaxf(fmaxf(m[0], m[1]), fmaxf(m[2], m[3]));
        }
#pragma unroll
        for (int kb = 0; kb < kBlocksPerTile; ++kb) // (a block's steps are contiguous)
          bmax[B::blockOfStep(kb)] =
              B::startsBlock(kb) ? step_max[kb] : fmaxf(bmax[B::blockOfStep(kb)], step_max[kb]);
      }
      float tmax = negInf();
#pragma unroll
      for (int b = 0; b < B::kBlocks; ++b) {
        if (B::lanesOf(b) >= 2)
          bmax[b] = fmaxf(bmax[b], __shfl_xor_sync(0xffffffffu, bmax[b], 1));
        if (B::lanesOf(b) == 4)
          bmax[b] = fmaxf(bmax[b], __shfl_xor_sync(0xffffffffu, bmax[b], 2));
        tmax = fmaxf(tmax, bmax[b]);
      }
#pragma unroll
      for (int kb = 0; kb < kBlocksPerTile; ++kb)
        block_max[kb][r] = bmax[B::blockOfStep(kb)];
      // tmax is the max over the threads that share the row's narrowest block
      if constexpr (B::fewestLanes() == 1)
        tmax = warpQuadMax(tmax);
      else if constexpr (B::fewestLanes() == 2)
        tmax = fmaxf(tmax, __shfl_xor_sync(0xffffffffu, tmax, 2));
      tile_max[r] = tmax;
    }
  } else {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float tmax = negInf();
#pragma unroll
      for (int kb = 0; kb < kBlocksPerTile; ++kb) {
        float bmax = fmaxf(s[4 * kb][2 * r], s[4 * kb][2 * r + 1]);
#pragma unroll
        for (int i = 1; i < 4; ++i)
          bmax = fmaxf(bmax, fmaxf(s[4 * kb + i][2 * r], s[4 * kb + i][2 * r + 1]));
        if constexpr (kBlocks)
          bmax = warpQuadMax(bmax);
        block_max[kb][r] = bmax;
        tmax = fmaxf(tmax, bmax);
      }
#pragma unroll
      for (int nt = 4 * kBlocksPerTile; nt < AttentionTraits<CV>::kSTiles; ++nt)
        tmax = fmaxf(tmax, fmaxf(s[nt][2 * r], s[nt][2 * r + 1]));
      tile_max[r] = kBlocks ? tmax : warpQuadMax(tmax);
    }
  }
}

// Advance the row max over one key tile (its row maxima of acc in tile_max, s the tile's acc, mul
// the score multiplier) without touching O: m, m_use and l move, o_scale gets the factor O must
// take (1 when m did not move). The wgmma consumers apply it only once the PV that accumulates into
// O has completed.
// first_tile: the tile of key 0, where SampledAnchor seeds m (key 0 is visible in every row that
// has a visible key at all, so the first tile with a visible key is always tile 0).
// kAllVisible: every key of this tile and of tile 0 is visible to both rows (the wgmma consumers'
// unmasked arm), so after tile 0 m is finite (no kernel consumes non-finite operands, NUMERICS.md
// §1): the -inf cases fall away.
// s: the tile's S registers in either form of score_tile.cuh (read only for the sampled anchor).
template <class C, bool kAllVisible = false, class Scores>
FA4JIT_DEVICE void advanceRowMax(SoftmaxRows &st, const Scores &s, const float (&tile_max)[2], float mul,
                                 bool first_tile, int lane, float (&o_scale)[2]) {
  using T = AttentionTraits<C>;
  const int q = lane % 4;
  // m may be -inf only before a visible key has been seen
  const bool may_be_inf = !(kAllVisible && !first_tile);
  // nvfp8 on FP16 scores: every m on the FP16 exponents' grid (score_terms.cuh)
  constexpr bool kHalfGrid = C::route == Route::Nvfp8 && ScoreTile<C>::kFp16;
  const auto onGrid = [](float t) {
    return kHalfGrid ? halfExponentRowMax(t, static_cast<float>(C::p_offset_log2)) : t;
  };
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float m_new;
    if constexpr (C::guard == GuardKind::SampledAnchor) {
      if (first_tile) {
        float anchor = negInf();
#pragma unroll
        for (int nt = 0; nt < T::kSTiles; ++nt)
#pragma unroll
          for (int e = 0; e < 2; ++e)
            if (tileKey<C>(nt, q, e) % C::guard_sample_stride == 0)
              anchor = fmaxf(anchor, scoreValue(s, nt, r, e));
        st.m[r] = onGrid(warpQuadMax(anchor) * mul);
      }
      const float tile_max_t = tile_max[r] * mul;
      m_new = tile_max_t <= st.m[r] + C::guard_slack_log2 ? st.m[r] : onGrid(tile_max_t);
    } else {
      m_new = fmaxf(st.m[r], onGrid(tile_max[r] * mul)); // (onGrid is monotone: m stays on the grid)
    }
    o_scale[r] = 1.0f;
    if (m_new != st.m[r]) {
      const float scale = may_be_inf && st.m[r] == negInf() ? 0.0f : exp2Hw(st.m[r] - m_new);
      st.l[r] *= scale;
      o_scale[r] = scale;
      st.m[r] = m_new;
    }
    st.m_use[r] = may_be_inf && st.m[r] == negInf() ? 0.0f : st.m[r];
  }
}

// O's rows g and g + 8 times their factor, over every n8 tile of the accumulator (the wgmma
// kernel's may hold one more: the row-sum column).
template <int kTiles> FA4JIT_DEVICE void rescaleRows(float (&o)[kTiles][4], const float (&o_scale)[2]) {
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    if (o_scale[r] != 1.0f) {
#pragma unroll
      for (int dt = 0; dt < kTiles; ++dt) {
        o[dt][2 * r] *= o_scale[r];
        o[dt][2 * r + 1] *= o_scale[r];
      }
    }
  }
}

template <class C>
FA4JIT_DEVICE void rescaleO(float (&o)[AttentionTraits<C>::kOTiles][4], const float (&o_scale)[2]) {
  rescaleRows(o, o_scale);
}

// Advance the row max over one key tile and rescale O and l when it moves.
template <class C>
FA4JIT_DEVICE void softmaxUpdate(SoftmaxRows &st, const float (&s)[AttentionTraits<C>::kSTiles][4],
                                 float (&o)[AttentionTraits<C>::kOTiles][4], float mul, bool first_tile, int lane) {
  float block_max[AttentionTraits<C>::kBlockN / 32][2], tile_max[2], o_scale[2];
  rowTileMax<C, false>(s, block_max, tile_max);
  advanceRowMax<C>(st, s, tile_max, mul, first_tile, lane, o_scale);
  rescaleO<C>(o, o_scale);
}

} // namespace fa4jit::device::attention
