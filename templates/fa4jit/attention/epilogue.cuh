#pragma once
// O_out = BF16(O / l * f) (FP16 with AttentionParams::o_fp16), LSE = (m + log2(l) - off) * ln 2 (NUMERICS.md §2.4). Rows without a
// visible key (l = 0) get O = 0 and LSE = -inf; a NaN l (a NaN input on the bf16 route) leaves
// the row NaN (NUMERICS.md §1.3).
#include "fa4jit/attention/config.cuh"
#include "fa4jit/attention/mma.cuh"
#include "fa4jit/attention/softmax.cuh"

namespace fa4jit::device::attention {

// o_rows: the output row of this warp's row 0 (16-bit elements, BF16 or with o_fp16 FP16);
// row_base: its absolute query index.
template <class C>
FA4JIT_DEVICE void writeOutput(const float (&o)[AttentionTraits<C>::kOTiles][4], SoftmaxRows &st, float f,
                               uint16_t *o_rows, int64_t o_row_stride, float *lse_rows, int row_base,
                               int seqlen_q, int lane, bool o_fp16) {
  using T = AttentionTraits<C>;
  const int g = lane / 4, q = lane % 4;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const float l = warpQuadSum(st.l[r]);
    const int row = g + 8 * r;
    if (row_base + row >= seqlen_q)
      continue;
    uint16_t *dst = o_rows + row * o_row_stride + 2 * q;
#pragma unroll
    for (int dt = 0; dt < T::kOTiles; ++dt) {
      const float v0 = l != 0.0f ? o[dt][2 * r] / l * f : 0.0f;
      const float v1 = l != 0.0f ? o[dt][2 * r + 1] / l * f : 0.0f;
      *reinterpret_cast<uint32_t *>(dst + dt * 8) = packOutput2(v0, v1, o_fp16);
    }
    if (lse_rows != nullptr && q == 0) {
      constexpr float kLn2 = 0.693147180559945309f;
      lse_rows[row] = l != 0.0f ? (st.m[r] + log2f(l) - static_cast<float>(T::kLseOffset)) * kLn2 : negInf();
    }
  }
}

} // namespace fa4jit::device::attention
