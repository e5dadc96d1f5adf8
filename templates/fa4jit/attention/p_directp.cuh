#pragma once
// directp route P (NUMERICS.md §2.3, DESIGN.md §1.2): per 32-key block b (aligned to absolute
// keys, since tiles start at multiples of block_n, itself a multiple of 32) and row:
//   e_b = floor(max_b x) - 2, y = x - e_b, c = classifier(y) (fa4jit/directp.cuh, shared with the
//   CPU model), P_fed = E4M3(E2M1[c] * 2^(e_b + off)), l += P_fed.
// A block's 8 fed values form one PRMT table (formats.cuh), so the 4 codes of a fragment register
// become 4 E4M3 bytes in one PRMT with the codes as selector nibbles. The normalizer uses a second
// table of integers: P_fed = I[c] * u exactly, with I = 2*E2M1 = {0,1,2,3,4,6,8,12} and
// u = 2^(k-1) when k = e_b + off >= -8 (every fed value exact), and I = the E4M3 bytes themselves
// with u = 2^-9 below (all fed values are then < 2^-5, where an E4M3 byte is its value in units
// of 2^-9); dp4a sums the integers, one FP32 multiply-add per block and row.
// Fragment register layout as in p_nvfp8.cuh.
#include "fa4jit/attention/config.cuh"
#include "fa4jit/attention/mma.cuh"
#include "fa4jit/attention/softmax.cuh"
#include "fa4jit/directp.cuh"
#include "fa4jit/formats.cuh"

namespace fa4jit::device::attention {

template <class C>
FA4JIT_DEVICE void buildPDirectP(uint32_t (&pa)[AttentionTraits<C>::kBlockN / 32][4],
                                 const float (&s)[AttentionTraits<C>::kSTiles][4], SoftmaxRows &st) {
  using T = AttentionTraits<C>;
  constexpr DirectPCoefficients kCoef = C::classifier;
#pragma unroll
  for (int kb = 0; kb < T::kBlockN / 32; ++kb) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float block_max = negInf();
#pragma unroll
      for (int i = 0; i < 4; ++i)
        block_max = fmaxf(block_max, fmaxf(s[4 * kb + i][2 * r], s[4 * kb + i][2 * r + 1]));
      block_max = warpQuadMax(block_max);

      // Selector nibbles: sel[0] = tiles 4kb, 4kb+1 (-> a0/a1), sel[1] = tiles 4kb+2, 4kb+3 (a2/a3).
      uint32_t sel[2] = {0u, 0u};
      int k = 0;
      if (block_max != negInf()) { // else no visible key: the block feeds zeros (all codes 0)
        // max_b(t - m) = max_b(t) - m: FP32 subtraction is monotone, so this is max_b x exactly.
        const int e_b = directpBlockExponent(block_max - st.m_use[r]);
        const float e_f = static_cast<float>(e_b);
#pragma unroll
        for (int i = 0; i < 4; ++i) {
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const float t = s[4 * kb + i][2 * r + e];
            const uint32_t c = t == negInf() ? 0u : static_cast<uint32_t>(directpClassify(kCoef, t, st.m_use[r], e_f));
            sel[i / 2] |= c << (4 * (2 * (i % 2) + e));
          }
        }
        k = e_b + C::p_offset_log2;
      }
      const E2M1ToE4M3Table fed = e2m1ToE4M3TablePow2(k);
      pa[kb][r] = bytePerm(fed.lo, fed.hi, sel[0]);
      pa[kb][2 + r] = bytePerm(fed.lo, fed.hi, sel[1]);

      const bool exact = k >= -8;
      const uint32_t int_lo = exact ? 0x03020100u : fed.lo;
      const uint32_t int_hi = exact ? 0x0C080604u : fed.hi;
      const float unit = exp2Int(exact ? k - 1 : -9);
      const uint32_t isum = __dp4a(bytePerm(int_lo, int_hi, sel[1]), 0x01010101u,
                                   __dp4a(bytePerm(int_lo, int_hi, sel[0]), 0x01010101u, 0u));
      st.l[r] = fmaf(static_cast<float>(isum), unit, st.l[r]);
    }
  }
}

} // namespace fa4jit::device::attention
