#pragma once
// Row-wise passes over the O accumulator in TMEM (warp-collective: tcgen05.ld/st are .sync.aligned,
// so a warp runs them together even when only some of its rows need them).
#include "fa4jit/attention/mma.cuh"
#include "fa4jit/attention_sm100/row_softmax.cuh"
#include "fa4jit/attention_sm100/tcgen05.cuh"

namespace fa4jit::device::attention {

// O <- factor * O for this thread's row; skipped by warps where every row's factor is 1.
// PV of the previous tile must have completed (its commit waited on) before this runs.
template <class C> FA4JIT_DEVICE void sm100RescaleO(uint32_t o_warp_tmem, float factor) {
  if (!__any_sync(0xffffffffu, factor != 1.0f))
    return;
#pragma unroll 1
  for (int c = 0; c < Sm100AttentionTraits<C>::kHeadDim; c += 32) {
    uint32_t v[32];
    sm100::sm100_tcgen05_ld_32x32b_x32(v, o_warp_tmem + static_cast<uint32_t>(c));
    sm100::sm100_tcgen05_wait_ld();
#pragma unroll
    for (int i = 0; i < 32; ++i)
      v[i] = __float_as_uint(__uint_as_float(v[i]) * factor);
    sm100::sm100_tcgen05_st_32x32b_x32(o_warp_tmem + static_cast<uint32_t>(c), v);
  }
  sm100::sm100_tcgen05_wait_st();
}

// O_out = BF16(O / l * f), LSE = (m + log2(l) - off) * ln 2 (NUMERICS.md §2.4); rows without a
// visible key (l = 0) get O = 0 and LSE = -inf. row_valid: the row exists (row < seqlen_q).
// have_o: false when the CTA saw no key at all (O was never written; nothing is read from TMEM).
template <class C>
FA4JIT_DEVICE void sm100WriteOutput(uint32_t o_warp_tmem, bool have_o, const Sm100Row &r, float f, uint16_t *o_row,
                                    float *lse, bool row_valid, bool o_fp16) {
  using T = Sm100AttentionTraits<C>;
  const bool live = have_o && r.l != 0.0f; // (a NaN l, from a NaN input, keeps the row NaN)
#pragma unroll 1
  for (int c = 0; c < T::kHeadDim; c += 32) {
    uint32_t v[32];
    if (have_o) {
      sm100::sm100_tcgen05_ld_32x32b_x32(v, o_warp_tmem + static_cast<uint32_t>(c));
      sm100::sm100_tcgen05_wait_ld();
    }
    if (!row_valid)
      continue;
    uint32_t packed[16];
#pragma unroll
    for (int i = 0; i < 16; ++i) {
      // O / l * f as NUMERICS.md writes it: divide first, then scale.
      const float lo = live ? __uint_as_float(v[2 * i]) / r.l * f : 0.0f;
      const float hi = live ? __uint_as_float(v[2 * i + 1]) / r.l * f : 0.0f;
      packed[i] = packOutput2(lo, hi, o_fp16);
    }
    uint4 *dst = reinterpret_cast<uint4 *>(o_row + c);
#pragma unroll
    for (int i = 0; i < 4; ++i)
      dst[i] = make_uint4(packed[4 * i], packed[4 * i + 1], packed[4 * i + 2], packed[4 * i + 3]);
  }
  if (row_valid && lse != nullptr) {
    constexpr float kLn2 = 0.693147180559945309f;
    *lse = live ? (r.m + log2f(r.l) - static_cast<float>(T::kLseOffset)) * kLn2 : negInf();
  }
}

} // namespace fa4jit::device::attention
