#pragma once
// bf16 route P (NUMERICS.md §2.3): p = exp2(x) in FP32, l += p before rounding, P_fed = BF16(p).
// P leaves the S accumulator as the m16n8k16 A fragment directly (mma.cuh): for keys 16ks..16ks+15
//   a0 = (g, n-tile 2ks), a1 = (g+8, 2ks), a2 = (g, 2ks+1), a3 = (g+8, 2ks+1), two keys each.
#include "fa4jit/attention/config.cuh"
#include "fa4jit/attention/mma.cuh"
#include "fa4jit/attention/softmax.cuh"

namespace fa4jit::device::attention {

template <class C>
FA4JIT_DEVICE void buildPBf16(uint32_t (&pa)[AttentionTraits<C>::kBlockN / 16][4],
                              const float (&s)[AttentionTraits<C>::kSTiles][4], SoftmaxRows &st) {
  using T = AttentionTraits<C>;
#pragma unroll
  for (int ks = 0; ks < T::kBlockN / 16; ++ks) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int nt = 2 * ks + half;
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const float p0 = exp2f(s[nt][2 * r] - st.m_use[r]);
        const float p1 = exp2f(s[nt][2 * r + 1] - st.m_use[r]);
        st.l[r] += p0;
        st.l[r] += p1;
        pa[ks][2 * half + r] = packBf16x2(p0, p1);
      }
    }
  }
}

} // namespace fa4jit::device::attention
