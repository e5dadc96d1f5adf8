#pragma once
// bf16 route P (NUMERICS.md §2.3): p = exp2(x) in FP32 with x = fma(acc, mul, -m), l += p before
// rounding, P_fed = BF16(p).
// P leaves the S accumulator as the m16n8k16 A fragment directly (mma.cuh): for keys 16ks..16ks+15
//   a0 = (g, n-tile 2ks), a1 = (g+8, 2ks), a2 = (g, 2ks+1), a3 = (g+8, 2ks+1), two keys each.
// The wgmma kernel's k16 register operand is the same fragment per warp (wgmma_bf16.cuh).
#include "fa4jit/attention/config.cuh"
#include "fa4jit/attention/mma.cuh"
#include "fa4jit/attention/softmax.cuh"

namespace fa4jit::device::attention {

// In two halves (as p_nvfp8.cuh): exp2 in place in S with l summed in key order per row (n-tile,
// then the two keys of a pair), then the BF16 packing (the wgmma consumers run it once the
// previous PV has completed).
template <class C>
FA4JIT_DEVICE void exponentiateBf16(float (&s)[AttentionTraits<C>::kSTiles][4], SoftmaxRows &st, float mul) {
  const float addend[2] = {-st.m_use[0], -st.m_use[1]};
#pragma unroll
  for (int nt = 0; nt < AttentionTraits<C>::kSTiles; ++nt)
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      s[nt][i] = exp2Hw(scoreExponent(s[nt][i], mul, addend[i / 2]));
      st.l[i / 2] += s[nt][i];
    }
}

template <class C>
FA4JIT_DEVICE void packBf16(uint32_t (&pa)[AttentionTraits<C>::kBlockN / 16][4],
                            const float (&p)[AttentionTraits<C>::kSTiles][4]) {
#pragma unroll
  for (int ks = 0; ks < AttentionTraits<C>::kBlockN / 16; ++ks)
#pragma unroll
    for (int half = 0; half < 2; ++half)
#pragma unroll
      for (int r = 0; r < 2; ++r)
        pa[ks][2 * half + r] = packBf16x2(p[2 * ks + half][2 * r], p[2 * ks + half][2 * r + 1]);
}

// Both halves at once, per pair (the mma.sync kernel): the same values and the same l order per
// row as the two halves above (key order: n-tile, then the pair), with the exponentials consumed
// as they are made. Composed of the halves it kept all 64 of a thread's exponentials live at once
// and the sm_80 D = 128 causal kernel spilled 8 bytes under NVRTC.
template <class C>
FA4JIT_DEVICE void buildPBf16(uint32_t (&pa)[AttentionTraits<C>::kBlockN / 16][4],
                              const float (&s)[AttentionTraits<C>::kSTiles][4], SoftmaxRows &st, float mul) {
  const float addend[2] = {-st.m_use[0], -st.m_use[1]};
#pragma unroll
  for (int ks = 0; ks < AttentionTraits<C>::kBlockN / 16; ++ks)
#pragma unroll
    for (int half = 0; half < 2; ++half)
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const int nt = 2 * ks + half;
        const float p0 = exp2Hw(scoreExponent(s[nt][2 * r], mul, addend[r]));
        const float p1 = exp2Hw(scoreExponent(s[nt][2 * r + 1], mul, addend[r]));
        st.l[r] += p0;
        st.l[r] += p1;
        pa[ks][2 * half + r] = packBf16x2(p0, p1);
      }
}

} // namespace fa4jit::device::attention
