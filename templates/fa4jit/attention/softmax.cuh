#pragma once
// Online softmax in the log2 domain with the range guard (NUMERICS.md §2.2). Each thread holds two
// rows of its warp's 16 (g and g + 8, index r = 0, 1); the four threads of a quad (same g) hold a
// row's keys between them, so row reductions are two xor-shuffles.
#include "fa4jit/attention/config.cuh"
#include "fa4jit/attention/mma.cuh"
#include "fa4jit/attention/scores.cuh"

namespace fa4jit::device::attention {

struct SoftmaxRows {
  float m[2];     // running max of t (FP32), -inf until a visible key has been seen
  float l[2];     // this thread's share of the normalizer (summed over the quad in the epilogue)
  float m_use[2]; // m, or 0 while m = -inf (so that x = t - m_use is -inf, never NaN)
};

FA4JIT_DEVICE void softmaxInit(SoftmaxRows &st) {
  st.m[0] = st.m[1] = negInf();
  st.l[0] = st.l[1] = 0.0f;
  st.m_use[0] = st.m_use[1] = 0.0f;
}

// Advance the row max over one key tile and rescale O and l when it moves.
// first_tile: the tile of key 0, where SampledAnchor seeds m (key 0 is visible in every row that
// has a visible key at all, so the first tile with a visible key is always tile 0).
template <class C>
FA4JIT_DEVICE void softmaxUpdate(SoftmaxRows &st, const float (&s)[AttentionTraits<C>::kSTiles][4],
                                 float (&o)[AttentionTraits<C>::kOTiles][4], bool first_tile, int lane) {
  using T = AttentionTraits<C>;
  const int q = lane % 4;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float tile_max = negInf();
#pragma unroll
    for (int nt = 0; nt < T::kSTiles; ++nt)
      tile_max = fmaxf(tile_max, fmaxf(s[nt][2 * r], s[nt][2 * r + 1]));
    tile_max = warpQuadMax(tile_max);

    float m_new;
    if constexpr (C::guard == GuardKind::SampledAnchor) {
      if (first_tile) {
        // Anchor: max over visible keys j = 0 (mod stride) of this tile (masked keys are -inf).
        float anchor = negInf();
#pragma unroll
        for (int nt = 0; nt < T::kSTiles; ++nt)
#pragma unroll
          for (int e = 0; e < 2; ++e)
            if ((nt * 8 + 2 * q + e) % C::guard_sample_stride == 0)
              anchor = fmaxf(anchor, s[nt][2 * r + e]);
        st.m[r] = warpQuadMax(anchor);
      }
      m_new = tile_max <= st.m[r] + C::guard_slack_log2 ? st.m[r] : tile_max;
    } else {
      m_new = fmaxf(st.m[r], tile_max);
    }
    if (m_new != st.m[r]) {
      const float scale = st.m[r] == negInf() ? 0.0f : exp2f(st.m[r] - m_new);
      st.l[r] *= scale;
#pragma unroll
      for (int dt = 0; dt < T::kOTiles; ++dt) {
        o[dt][2 * r] *= scale;
        o[dt][2 * r + 1] *= scale;
      }
      st.m[r] = m_new;
    }
    st.m_use[r] = st.m[r] == negInf() ? 0.0f : st.m[r];
  }
}

} // namespace fa4jit::device::attention
