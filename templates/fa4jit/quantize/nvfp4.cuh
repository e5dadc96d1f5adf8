#pragma once
// Pass 2 for Q and K: NVFP4 rows (docs/NUMERICS.md §1), bit-identical to formats::quantizeNvfp4.
// One thread per 16-element block: it owns one UE4M3 scale and 8 payload bytes, so the payload
// store is one 8-byte vector and neighbouring threads write neighbouring bytes of a row.
#include "fa4jit/quantize/amax.cuh"

namespace fa4jit::device::quantize {

// One 16-element block of row `row` (< seqlen) of head bh, non-finite elements read as 0.
template <class T> FA4JIT_DEVICE void loadNvfp4Block(const QuantizeParams &p, int bh, int row, int blk, bool vec_ok,
                                                     float (&v)[16]) {
  loadRun<T, 16>(p, headOffset(p, bh) + static_cast<int64_t>(row) * p.x_row_stride + blk * 16, vec_ok, v);
  zeroNonFinite(v);
}

// grid quantizeEncodeGrid (x over groups of rows of S padded to 128, y = batch * heads), block
// T::kThreads: group i of CTA x covers rows (x * kEncodeGroupsPerCta + i) * T::kRowsPerCta + ...
template <class C> FA4JIT_DEVICE void nvfp4EncodePass(const QuantizeParams &p) {
  using T = QuantizeTraits<C>;
  const int bh = blockIdx.y;
  const int blk = static_cast<int>(threadIdx.x) % T::kBlocksPerRow;
  const int row0 = blockIdx.x * kEncodeGroupsPerCta * T::kRowsPerCta + static_cast<int>(threadIdx.x) / T::kBlocksPerRow;
  const int padded_rows = (p.seqlen + 127) / 128 * 128;
  const bool vec_ok = vectorLoadsOk<T>(p);
  // The first group is loaded before the head's maximum is reduced (that reduction waits at CTA
  // barriers, which loads cannot cross), and each next group while the current one is encoded.
  float v[16], next[16];
  if (row0 < p.seqlen)
    loadNvfp4Block<T>(p, bh, row0, blk, vec_ok, v);
  const HeadAmax head = headAmax<T>(p, bh);
  // Every division below is docs/NUMERICS.md §1's, in FP32 with one rounding (__fdiv_rn /
  // __fmul_rn keep that under --use_fast_math too); a quotient that underflows to 0 gives g = 1
  // like the host.
  float g = __fdiv_rn(head.amax, 448.0f * 6.0f);
  if (!(g > 0.0f))
    g = 1.0f;
  const float six_g = __fmul_rn(6.0f, g);
  uint8_t *sf = reinterpret_cast<uint8_t *>(p.scales) +
                static_cast<int64_t>(bh) * quantizeScaleBytesPerHead(0, T::kHeadDim, p.seqlen);

#pragma unroll 1
  for (int i = 0; i < kEncodeGroupsPerCta; ++i) {
    const int row = row0 + i * T::kRowsPerCta;
    if (row >= padded_rows)
      break;
    const int next_row = row + T::kRowsPerCta;
    if (i + 1 < kEncodeGroupsPerCta && next_row < p.seqlen)
      loadNvfp4Block<T>(p, bh, next_row, blk, vec_ok, next);
    const int64_t sf_off = scaleFactorOffset(row, blk, T::kBlocksPerRow);
    if (row < p.seqlen) {
      float amax_b = 0.0f;
#pragma unroll
      for (int k = 0; k < 16; ++k)
        amax_b = fmaxf(amax_b, fabsf(v[k]));
      const uint8_t s = amax_b == 0.0f ? uint8_t(0) : floatToUE4M3(__fdiv_rn(amax_b, six_g));
      // s_b * g can underflow to 0 for a subnormal g: such blocks hold code 0, as on the host.
      const float denom = __fmul_rn(ue4m3ToFloat(s), g);
      uint32_t w[2] = {0u, 0u};
      if (denom != 0.0f) {
#pragma unroll
        for (int k = 0; k < 8; ++k)
          w[k / 4] |= static_cast<uint32_t>(floatsToE2M1x2(__fdiv_rn(v[2 * k], denom), __fdiv_rn(v[2 * k + 1], denom)))
                      << (8 * (k % 4));
      }
      uint8_t *dst = reinterpret_cast<uint8_t *>(p.payload) +
                     (static_cast<int64_t>(bh) * p.seqlen + row) * (T::kHeadDim / 2) + blk * 8;
      *reinterpret_cast<uint2 *>(dst) = make_uint2(w[0], w[1]);
      sf[sf_off] = s;
    } else {
      sf[sf_off] = 0; // padding rows of the last 128-row scale atom
    }
#pragma unroll
    for (int k = 0; k < 16; ++k)
      v[k] = next[k];
  }
  if (blockIdx.x == 0) {
    if (threadIdx.x == 0)
      reinterpret_cast<float *>(p.head_scalar)[bh] = g;
    writeFirstNonFiniteRow<T>(p, bh, head.nonfinite);
  }
}

} // namespace fa4jit::device::quantize
