#pragma once
// The softmax of the wgmma consumers, split so that the O rescale can wait for an in-flight PV
// wgmma while everything else runs (NUMERICS.md §2.2, §2.3; the same arithmetic as
// attention/softmax.cuh and attention/p_directp.cuh, in a cheaper order):
//   rowTileMax    the row maxima of a tile (and, for directp, of each 32-key block: the tile max
//                 is the max of the block maxima, so no element is visited twice);
//   advanceRowMax m and l advance, the factor O must take is returned (1 when m did not move);
//   rescaleO      applies it once the PV that accumulates into O has completed;
//   classifyDirectP / exponentiateNvfp8, then packDirectP / packNvfp8: P in two halves.
// Fragment layouts: attention/mma.cuh (per warp, m16n8), wgmma.cuh (per warpgroup).
#include "fa4jit/attention/config.cuh"
#include "fa4jit/attention/mma.cuh"
#include "fa4jit/attention/scores.cuh"
#include "fa4jit/attention/softmax.cuh"
#include "fa4jit/directp.cuh"
#include "fa4jit/formats.cuh"

namespace fa4jit::device::attention_sm90 {

using attention::AttentionTraits;
using attention::negInf;
using attention::SoftmaxRows;

// Row maxima of t over the tile (quad-reduced) and, when kBlocks, over each 32-key block.
template <class CV, bool kBlocks>
FA4JIT_DEVICE void rowTileMax(const float (&s)[AttentionTraits<CV>::kSTiles][4],
                              float (&block_max)[AttentionTraits<CV>::kBlockN / 32][2], float (&tile_max)[2]) {
  constexpr int kBlocksPerTile = AttentionTraits<CV>::kBlockN / 32;
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
        bmax = attention::warpQuadMax(bmax);
      block_max[kb][r] = bmax;
      tmax = fmaxf(tmax, bmax);
    }
    tile_max[r] = kBlocks ? tmax : attention::warpQuadMax(tmax);
  }
}

// softmaxUpdate (attention/softmax.cuh) without touching O: the same m, m_use and l, and in
// o_scale the factor softmaxUpdate would have applied to O (1 when it would not have).
template <class C>
FA4JIT_DEVICE void advanceRowMax(SoftmaxRows &st, const float (&s)[AttentionTraits<C>::kSTiles][4],
                                 const float (&tile_max)[2], bool first_tile, int lane, float (&o_scale)[2]) {
  using T = AttentionTraits<C>;
  const int q = lane % 4;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float m_new;
    if constexpr (C::guard == attention::GuardKind::SampledAnchor) {
      if (first_tile) {
        float anchor = negInf();
#pragma unroll
        for (int nt = 0; nt < T::kSTiles; ++nt)
#pragma unroll
          for (int e = 0; e < 2; ++e)
            if ((nt * 8 + 2 * q + e) % C::guard_sample_stride == 0)
              anchor = fmaxf(anchor, s[nt][2 * r + e]);
        st.m[r] = attention::warpQuadMax(anchor);
      }
      m_new = tile_max[r] <= st.m[r] + C::guard_slack_log2 ? st.m[r] : tile_max[r];
    } else {
      m_new = fmaxf(st.m[r], tile_max[r]);
    }
    o_scale[r] = 1.0f;
    if (m_new != st.m[r]) {
      const float scale = st.m[r] == negInf() ? 0.0f : exp2f(st.m[r] - m_new);
      st.l[r] *= scale;
      o_scale[r] = scale;
      st.m[r] = m_new;
    }
    st.m_use[r] = st.m[r] == negInf() ? 0.0f : st.m[r];
  }
}

template <class C>
FA4JIT_DEVICE void rescaleO(float (&o)[AttentionTraits<C>::kOTiles][4], const float (&o_scale)[2]) {
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    if (o_scale[r] != 1.0f) {
#pragma unroll
      for (int dt = 0; dt < AttentionTraits<C>::kOTiles; ++dt) {
        o[dt][2 * r] *= o_scale[r];
        o[dt][2 * r + 1] *= o_scale[r];
      }
    }
  }
}

// P of one tile in two halves. classify* (before the previous PV has completed) does the
// per-element work into plain registers and advances l; packP (after it has completed) writes
// the wgmma A fragments. Writing A-fragment registers only there (no copies between register
// sets, no wgmma under a branch) is what keeps ptxas from serializing the wgmma pipeline.
template <class CV> struct PendingP {
  static constexpr int kBlocks = AttentionTraits<CV>::kBlockN / 32;
  uint32_t sel[kBlocks][2][2]; // directp: PRMT selectors (a0/a1 and a2/a3 halves) per block and row
  uint32_t fed[kBlocks][2][2]; // directp: the block's E2M1 -> E4M3 table (lo, hi)
};

// Direct-P codes (p_directp.cuh's numerics) from precomputed block maxima. The affine classifier
// runs as directpAffineFusedCode (directp.cuh) in three instructions per element:
//   FFMA.SAT z = sat(fma(alpha/8, t, addend)); FFMA.RM bits(2^23 + floor(8z)) = 0x4B000000 | c;
//   a shift-add of those bits into the selector nibble (the exponent bits land at bit 23 and up,
//   which PRMT ignores and which no carry can bring down).
// Other classifier kinds take directpClassify as it is.
template <class C>
FA4JIT_DEVICE void classifyDirectP(PendingP<C> &pp, const float (&s)[AttentionTraits<C>::kSTiles][4],
                                   const float (&block_max)[AttentionTraits<C>::kBlockN / 32][2], SoftmaxRows &st) {
  using T = AttentionTraits<C>;
  constexpr DirectPCoefficients kCoef = C::classifier;
  constexpr bool kAffine = kCoef.kind == 1;
  constexpr float kA = kCoef.alpha * 0.125f;
  // y < 3 in every block (its max minus floor(max) + 2), so alpha*3 + beta <= 7.5 keeps 8z below
  // 8 with room for the roundings of the addend: the min(., 7) of the definition is then void.
  constexpr bool kNeedsUpperClamp = !(kCoef.alpha > 0.0f && kCoef.alpha * 3.0f + kCoef.beta <= 7.5f);
  constexpr float kBelowOne = 0.99999994f; // 1 - 2^-24: floor(8 * kBelowOne) = 7
#pragma unroll
  for (int kb = 0; kb < T::kBlockN / 32; ++kb) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      uint32_t sel[2] = {0u, 0u};
      int k = 0;
      if (block_max[kb][r] != negInf()) { // else no visible key: the block feeds zeros
        // e_b = directpBlockExponent(block max of x) without the conversion pipe (F2I/I2F run at
        // MUFU's 16/clk/SM): a round-down add onto 1.5 * 2^23 is floor() and its low bits the
        // integer. Clamping x at -2^20 only touches blocks 2^-1000000 below the row max, whose
        // fed values and normalizer terms are 0 either way (e2m1ToE4M3TablePow2 clamps too).
        const float floor_magic = __fadd_rd(fmaxf(block_max[kb][r] - st.m_use[r], -1048576.0f), 12582912.0f);
        const int e_b = (__float_as_int(floor_magic) - 0x4B400000) - 2;
        const float e_f = (floor_magic - 12582912.0f) - 2.0f;
        if constexpr (kAffine) {
          const float addend = directpAffineAddend(kCoef, st.m_use[r], e_f);
#pragma unroll
          for (int i = 0; i < 4; ++i) {
#pragma unroll
            for (int e = 0; e < 2; ++e) {
              float z = __saturatef(fmaf(kA, s[4 * kb + i][2 * r + e], addend));
              if constexpr (kNeedsUpperClamp)
                z = fminf(z, kBelowOne);
              const uint32_t bits = __float_as_uint(__fmaf_rd(z, 8.0f, 8388608.0f));
              sel[i / 2] += bits << (4 * (2 * (i % 2) + e));
            }
          }
        } else {
#pragma unroll
          for (int i = 0; i < 4; ++i) {
#pragma unroll
            for (int e = 0; e < 2; ++e) {
              const float t = s[4 * kb + i][2 * r + e];
              const uint32_t c = static_cast<uint32_t>(directpClassify(kCoef, t, st.m_use[r], e_f));
              sel[i / 2] |= c << (4 * (2 * (i % 2) + e));
            }
          }
        }
        k = e_b + C::p_offset_log2;
      }
      // k in [-5, 6] (blocks within 2^-11 of the row max: nearly all): two IMADs build the table.
      const E2M1ToE4M3Table fed = (k >= -5 && k <= 6) ? e2m1ToE4M3TablePow2Normal(k) : e2m1ToE4M3TablePow2(k);
      pp.sel[kb][r][0] = sel[0];
      pp.sel[kb][r][1] = sel[1];
      pp.fed[kb][r][0] = fed.lo;
      pp.fed[kb][r][1] = fed.hi;

      const bool exact = k >= -8;
      const uint32_t int_lo = exact ? 0x03020100u : fed.lo;
      const uint32_t int_hi = exact ? 0x0C080604u : fed.hi;
      // exp2Int(k - 1) for k - 1 in [-9, 127) (k <= 8 + slack here), else 2^-9: plain bits.
      const float unit = __int_as_float(((exact ? k - 1 : -9) + 127) << 23);
      const uint32_t isum = __dp4a(bytePerm(int_lo, int_hi, sel[1]), 0x01010101u,
                                   __dp4a(bytePerm(int_lo, int_hi, sel[0]), 0x01010101u, 0u));
      // isum <= 8 * 255 < 2^23: its float by the 2^23 magic number, no I2F.
      const float isum_f = __int_as_float(0x4B000000 | isum) - 8388608.0f;
      st.l[r] = fmaf(isum_f, unit, st.l[r]);
    }
  }
}

template <class C>
FA4JIT_DEVICE void packDirectP(uint32_t (&pa)[AttentionTraits<C>::kBlockN / 32][4], const PendingP<C> &pp) {
#pragma unroll
  for (int kb = 0; kb < AttentionTraits<C>::kBlockN / 32; ++kb)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      pa[kb][r] = bytePerm(pp.fed[kb][r][0], pp.fed[kb][r][1], pp.sel[kb][r][0]);
      pa[kb][2 + r] = bytePerm(pp.fed[kb][r][0], pp.fed[kb][r][1], pp.sel[kb][r][1]);
    }
}

// nvfp8 (p_nvfp8.cuh's numerics) in the same two halves: exp2 in place in S, then the E4M3
// packing and l (which sums the decoded bytes) once the previous PV has completed.
template <class C>
FA4JIT_DEVICE void exponentiateNvfp8(float (&s)[AttentionTraits<C>::kSTiles][4], const SoftmaxRows &st) {
  constexpr float kOff = static_cast<float>(C::p_offset_log2);
#pragma unroll
  for (int nt = 0; nt < AttentionTraits<C>::kSTiles; ++nt)
#pragma unroll
    for (int i = 0; i < 4; ++i)
      s[nt][i] = exp2f((s[nt][i] - st.m_use[i / 2]) + kOff);
}

template <class C>
FA4JIT_DEVICE void packNvfp8(uint32_t (&pa)[AttentionTraits<C>::kBlockN / 32][4],
                             const float (&p)[AttentionTraits<C>::kSTiles][4], SoftmaxRows &st) {
#pragma unroll
  for (int kb = 0; kb < AttentionTraits<C>::kBlockN / 32; ++kb) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      uint32_t half[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        half[i] = floatsToE4M3x2(p[4 * kb + i][2 * r], p[4 * kb + i][2 * r + 1]);
        float f0, f1;
        attention::unpackE4m3x2(half[i], f0, f1);
        st.l[r] += f0;
        st.l[r] += f1;
      }
      pa[kb][r] = half[0] | (half[1] << 16);
      pa[kb][2 + r] = half[2] | (half[3] << 16);
    }
  }
}

} // namespace fa4jit::device::attention_sm90
