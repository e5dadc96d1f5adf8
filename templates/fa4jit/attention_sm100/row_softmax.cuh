#pragma once
// Online softmax of one query row per thread (the tcgen05 path: thread i holds TMEM lane i, all
// block_n scores of its row), NUMERICS.md §2.2 exactly as the mma.sync path (softmax.cuh) does it
// for its two rows per thread: same guard, same rescale factor exp2(m - m').
#include "fa4jit/attention/scores.cuh"
#include "fa4jit/attention_sm100/config.cuh"

namespace fa4jit::device::attention {

struct Sm100Row {
  float m;     // running max of t = acc * mul, -inf until a visible key has been seen
  float l;     // normalizer: the sum of the P values fed to PV
  float m_use; // m, or 0 while m = -inf (x = fma(acc, mul, -m_use) is then -inf, never NaN)
};

FA4JIT_DEVICE void sm100RowInit(Sm100Row &r) {
  r.m = negInf();
  r.l = 0.0f;
  r.m_use = 0.0f;
}

// The accumulators of visible keys, -inf for keys at or past `visible` (causal limit or
// seqlen_k); `bits` are the FP32 words tcgen05.ld returned. The multiplier is applied later, in
// the maxima and in each route's FFMA (score_terms.cuh).
template <class C>
FA4JIT_DEVICE void sm100MaskScores(float (&acc)[Sm100AttentionTraits<C>::kBlockN],
                                   const uint32_t (&bits)[Sm100AttentionTraits<C>::kBlockN], int key0, int visible) {
#pragma unroll
  for (int j = 0; j < Sm100AttentionTraits<C>::kBlockN; ++j)
    acc[j] = key0 + j < visible ? __uint_as_float(bits[j]) : negInf();
}

// Advances the row max over one tile (acc: its masked accumulators, mul > 0 the score multiplier:
// max t = mul * max acc); returns the factor O and l must be multiplied by (1 when the max did not
// move). first_tile: tile 0, where SampledAnchor seeds m from keys j = 0 mod stride.
template <class C>
FA4JIT_DEVICE float sm100RowUpdate(Sm100Row &r, const float (&acc)[Sm100AttentionTraits<C>::kBlockN], float mul,
                                   bool first_tile) {
  constexpr int kN = Sm100AttentionTraits<C>::kBlockN;
  float tile_max = negInf();
#pragma unroll
  for (int j = 0; j < kN; ++j)
    tile_max = fmaxf(tile_max, acc[j]);
  tile_max *= mul;
  float m_new;
  if constexpr (C::guard == GuardKind::SampledAnchor) {
    if (first_tile) {
      float anchor = negInf();
#pragma unroll
      for (int j = 0; j < kN; j += C::guard_sample_stride)
        anchor = fmaxf(anchor, acc[j]);
      r.m = anchor * mul;
    }
    m_new = tile_max <= r.m + C::guard_slack_log2 ? r.m : tile_max;
  } else {
    m_new = fmaxf(r.m, tile_max);
  }
  float factor = 1.0f;
  if (m_new != r.m) {
    factor = r.m == negInf() ? 0.0f : exp2Hw(r.m - m_new);
    r.l *= factor;
    r.m = m_new;
  }
  r.m_use = r.m == negInf() ? 0.0f : r.m;
  return factor;
}

} // namespace fa4jit::device::attention
