#pragma once
// Pass 2 for Q and K: NVFP4 rows (docs/NUMERICS.md §1), bit-identical to formats::quantizeNvfp4.
// One thread per 16-element block: it owns one UE4M3 scale and 8 payload bytes, so the payload
// store is one 8-byte vector and neighbouring threads write neighbouring bytes of a row.
#include "fa4jit/quantize/amax.cuh"

namespace fa4jit::device::quantize {

// grid quantizeEncodeGrid (x over rows of S padded to 128, y = batch * heads), block T::kThreads.
template <class C> FA4JIT_DEVICE void nvfp4EncodePass(const QuantizeParams &p) {
  using T = QuantizeTraits<C>;
  const int bh = blockIdx.y;
  const int row = blockIdx.x * T::kRowsPerCta + static_cast<int>(threadIdx.x) / T::kBlocksPerRow;
  const int blk = static_cast<int>(threadIdx.x) % T::kBlocksPerRow;
  // The block's values are loaded before the head's maximum is reduced (that reduction waits at
  // CTA barriers, which loads cannot cross): both latencies overlap.
  float v[16];
  if (row < p.seqlen) {
    loadRun<T, 16>(p, headOffset(p, bh) + row * p.x_row_stride + blk * 16, vectorLoadsOk<T>(p), v);
  }
  const HeadAmax head = headAmax<T>(p, bh);
  if (head.nonfinite) // (uniform over the CTA; the common case skips the test per element)
    zeroNonFinite(v);
  // Every division below is docs/NUMERICS.md §1's, in FP32 with one rounding (__fdiv_rn /
  // __fmul_rn keep that under --use_fast_math too); a quotient that underflows to 0 gives g = 1
  // like the host.
  float g = __fdiv_rn(head.amax, 448.0f * 6.0f);
  if (!(g > 0.0f))
    g = 1.0f;
  const float six_g = __fmul_rn(6.0f, g);

  uint8_t *sf = reinterpret_cast<uint8_t *>(p.scales) +
                static_cast<int64_t>(bh) * quantizeScaleBytesPerHead(0, T::kHeadDim, p.seqlen);
  const int64_t sf_off = scaleFactorOffset(row, blk, T::kBlocksPerRow);
  if (row < p.seqlen) {
    float amax_b = 0.0f;
#pragma unroll
    for (int i = 0; i < 16; ++i)
      amax_b = fmaxf(amax_b, fabsf(v[i]));
    const uint8_t s = amax_b == 0.0f ? uint8_t(0) : floatToUE4M3(__fdiv_rn(amax_b, six_g));
    // s_b * g can underflow to 0 for a subnormal g: such blocks hold code 0, as on the host.
    const float denom = __fmul_rn(ue4m3ToFloat(s), g);
    uint32_t w[2] = {0u, 0u};
    if (quotientByReciprocalOk(denom)) { // (the E2M1 codes of the exact quotients, formats.cuh)
      const float r = __frcp_rn(denom);
#pragma unroll
      for (int i = 0; i < 8; ++i)
        w[i / 4] |= finiteFloatsToE2M1x2(quotientByReciprocal(v[2 * i], denom, r),
                                         quotientByReciprocal(v[2 * i + 1], denom, r))
                    << (8 * (i % 4));
    } else if (denom != 0.0f) {
#pragma unroll
      for (int i = 0; i < 8; ++i)
        w[i / 4] |= finiteFloatsToE2M1x2(__fdiv_rn(v[2 * i], denom), __fdiv_rn(v[2 * i + 1], denom)) << (8 * (i % 4));
    }
    uint8_t *dst = reinterpret_cast<uint8_t *>(p.payload) +
                   (static_cast<int64_t>(bh) * p.seqlen + row) * (T::kHeadDim / 2) + blk * 8;
    *reinterpret_cast<uint2 *>(dst) = make_uint2(w[0], w[1]);
    sf[sf_off] = s;
  } else if (row < (p.seqlen + 127) / 128 * 128) {
    sf[sf_off] = 0; // padding rows of the last 128-row scale atom
  }
  if (blockIdx.x == 0) {
    if (threadIdx.x == 0)
      reinterpret_cast<float *>(p.head_scalar)[bh] = g;
    writeFirstNonFiniteRow<T>(p, bh, head.nonfinite);
  }
}

} // namespace fa4jit::device::quantize
