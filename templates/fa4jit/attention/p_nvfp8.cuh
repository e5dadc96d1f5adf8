#pragma once
// nvfp8 route P (NUMERICS.md §2.3): P_fed = E4M3(exp2(fma(acc, mul, off - m))), l += P_fed (the
// decoded byte, so numerator and denominator describe the same operator).
// FP8 A fragment of keys 32kb..32kb+31 (mma.cuh), with V's keys permuted within each 16
// (tile_load.cuh): a0 = (g, n-tiles 4kb, 4kb+1), a1 = (g+8, same), a2 = (g, 4kb+2, 4kb+3),
// a3 = (g+8, same); byte order inside a register: tile 4kb (2 keys) then tile 4kb+1 (2 keys).
#include "fa4jit/attention/config.cuh"
#include "fa4jit/attention/half2.cuh"
#include "fa4jit/attention/mma.cuh"
#include "fa4jit/attention/softmax.cuh"
#include "fa4jit/formats.cuh"

namespace fa4jit::device::attention {

// In two halves (as p_directp.cuh): exp2 in place in S (acc in, one FFMA and one exp2 per key),
// then the E4M3 packing and l, which sums the decoded bytes (the wgmma consumers run it once the
// previous PV has completed). (kBothRows: as the FP16 form's; FP32 exponents are one block anyway.)
template <class C, bool kBothRows = true>
FA4JIT_DEVICE void exponentiateNvfp8(float (&s)[AttentionTraits<C>::kSTiles][4], const SoftmaxRows &st, float mul) {
  constexpr float kOff = static_cast<float>(C::p_offset_log2);
  const float addend[2] = {kOff - st.m_use[0], kOff - st.m_use[1]};
#pragma unroll
  for (int nt = 0; nt < AttentionTraits<C>::kSTiles; ++nt)
#pragma unroll
    for (int i = 0; i < 4; ++i)
      s[nt][i] = exp2Hw(scoreExponent(s[nt][i], mul, addend[i / 2]));
}

// C::exp2_poly_tiles where the config has it (the wgmma kernels' configs bake it), else 0.
template <class C> struct Exp2PolyTilesOf {
  template <class X> FA4JIT_HD static constexpr int get(decltype(&X::exp2_poly_tiles)) { return X::exp2_poly_tiles; }
  template <class X> FA4JIT_HD static constexpr int get(...) { return 0; }
  static constexpr int value = get<C>(nullptr);
};

// 2^x_h of one pair of keys of n8 tile nt: the polynomial for the first exp2_poly_tiles tiles
// (exp2PolyKey), the MUFU for the rest.
template <class C> FA4JIT_DEVICE Half2 halfExp2Of(int nt, Half2 x) {
  if (exp2PolyKey(8 * nt, Exp2PolyTilesOf<C>::value))
    return half2Exp2Poly(x);
  return half2Exp2(x);
}

// The same on FP16 scores (scores_fp16, NUMERICS.md §2.3), P in place as FP16 pairs: per row whose
// exponents fit FP16 (halfExponentsFit: m on the grid of softmax.cuh's advanceRowMax) x_h =
// FP16(fma(acc_h, FP16(mul), off - m)) in one HFMA2 and 2^x_h on the MUFU's FP16 form (or, for the
// first exp2_poly_tiles n8 tiles, score_terms.cuh's FP16 polynomial on the FMA pipe); other rows
// (a multiplier outside FP16's normal range, |off - m| >= 128) x in FP32 from the FP16 values, as
// from FP32 scores, and 2^x rounded to FP16. The branch is per thread and row, after the row max's
// shuffles: it may diverge.
template <class C>
FA4JIT_DEVICE void exponentiateNvfp8Row(uint32_t (&s)[AttentionTraits<C>::kSTiles][2], int r, float mul,
                                        float addend) {
  if (halfExponentsFit(mul, addend)) {
    const Half2 mul_h = half2FromFloats(mul, mul);
    const Half2 addend_h = half2FromFloats(addend, addend);
#pragma unroll
    for (int nt = 0; nt < AttentionTraits<C>::kSTiles; ++nt)
      s[nt][r] = halfExp2Of<C>(nt, directpFmaV(Half2{s[nt][r]}, mul_h, addend_h)).u;
  } else {
#pragma unroll
    for (int nt = 0; nt < AttentionTraits<C>::kSTiles; ++nt)
      s[nt][r] = half2FromFloats(exp2Hw(scoreExponent(halfLowToFloat(s[nt][r]), mul, addend)),
                                 exp2Hw(scoreExponent(halfHighToFloat(s[nt][r]), mul, addend)))
                     .u;
  }
}

// Both rows of the thread in one loop where both fit (the usual case): the same numbers as row by
// row, but one basic block, so that ptxas interleaves the two rows' HFMA2 and MUFU chains (row by
// row, each row's exponents end a block of their own). On the H200 one block is +10-13% at D64,
// +3% at D128, +1-2% at D256 over row by row (base binary built with kBothRows false):
// BENCH_ARGS='--routes nvfp8 --head-dims 64,128,256 --seqlens 4096,16384 --causal 0' scripts/device_check.sh bench ab
// kBothRows false keeps the row-by-row code alone: the kernels that sum l on the ALUs
// (mma_row_sum off) need the registers the one block holds at once (D128's three consumers of
// 128 keys spill 4 bytes with it).
template <class C, bool kBothRows = true>
FA4JIT_DEVICE void exponentiateNvfp8(uint32_t (&s)[AttentionTraits<C>::kSTiles][2], const SoftmaxRows &st, float mul) {
  constexpr float kOff = static_cast<float>(C::p_offset_log2);
  const float addend[2] = {kOff - st.m_use[0], kOff - st.m_use[1]};
  if (kBothRows && halfExponentsFit(mul, addend[0]) && halfExponentsFit(mul, addend[1])) {
    const Half2 mul_h = half2FromFloats(mul, mul);
    const Half2 addend_h[2] = {half2FromFloats(addend[0], addend[0]), half2FromFloats(addend[1], addend[1])};
#pragma unroll
    for (int nt = 0; nt < AttentionTraits<C>::kSTiles; ++nt)
#pragma unroll
      for (int r = 0; r < 2; ++r)
        s[nt][r] = halfExp2Of<C>(nt, directpFmaV(Half2{s[nt][r]}, mul_h, addend_h[r])).u;
  } else {
    exponentiateNvfp8Row<C>(s, 0, mul, addend[0]);
    exponentiateNvfp8Row<C>(s, 1, mul, addend[1]);
  }
}

// The E4M3 pair of row r's keys 8 nt + 2 q, + 1 of P in either form of score_tile.cuh.
template <int kTiles> FA4JIT_DEVICE uint32_t e4m3PairOf(const float (&p)[kTiles][4], int nt, int r) {
  return floatsToE4M3x2(p[nt][2 * r], p[nt][2 * r + 1]);
}
template <int kTiles> FA4JIT_DEVICE uint32_t e4m3PairOf(const uint32_t (&p)[kTiles][2], int nt, int r) {
  return half2ToE4m3x2(Half2{p[nt][r]});
}

// The A fragments of P (either form) and, with kSumL, l. kSumL false: the wgmma kernel's PV sums
// l itself (mma_row_sum), so the bytes are not decoded.
template <class C, bool kSumL = true, class Probs>
FA4JIT_DEVICE void packNvfp8(uint32_t (&pa)[AttentionTraits<C>::kBlockN / 32][4], const Probs &p, SoftmaxRows &st) {
#pragma unroll
  for (int kb = 0; kb < AttentionTraits<C>::kBlockN / 32; ++kb) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      uint32_t half[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        half[i] = e4m3PairOf(p, 4 * kb + i, r);
        if constexpr (kSumL) {
          float f0, f1;
          unpackE4m3x2(half[i], f0, f1);
          st.l[r] += f0;
          st.l[r] += f1;
        }
      }
      pa[kb][r] = half[0] | (half[1] << 16);
      pa[kb][2 + r] = half[2] | (half[3] << 16);
    }
  }
}

// Both halves at once (the mma.sync kernel).
template <class C>
FA4JIT_DEVICE void buildPNvfp8(uint32_t (&pa)[AttentionTraits<C>::kBlockN / 32][4],
                               const float (&s)[AttentionTraits<C>::kSTiles][4], SoftmaxRows &st, float mul) {
  float p[AttentionTraits<C>::kSTiles][4];
#pragma unroll
  for (int nt = 0; nt < AttentionTraits<C>::kSTiles; ++nt)
#pragma unroll
    for (int i = 0; i < 4; ++i)
      p[nt][i] = s[nt][i];
  exponentiateNvfp8<C>(p, st, mul);
  packNvfp8<C>(pa, p, st);
}

} // namespace fa4jit::device::attention
