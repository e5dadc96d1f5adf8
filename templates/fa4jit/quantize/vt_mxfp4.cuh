#pragma once
// MXFP4 V^T for the directp route (docs/NUMERICS.md §1), bit-identical to formats::quantizeMxfp4
// applied to one head's V^T with padded_cols = Skp, plus the per-head v_shift of §2.3.
#include "fa4jit/quantize/vt.cuh"

namespace fa4jit::device::quantize {

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)

// grid quantizeEncodeGrid (x over groups of kVtTilesPerCta key tiles, y over head-dim tiles,
// z = batch * heads), block T::kThreads.
template <class C> FA4JIT_DEVICE void vtMxfp4EncodePass(const QuantizeParams &p) {
  using T = QuantizeTraits<C>;
  __shared__ float tile[T::kDims][T::kTilePitch];
  const int bh = blockIdx.z;
  const int d0 = blockIdx.y * T::kDims;
  const int64_t skp = quantizePaddedKeys(p.seqlen);
  const int scale_cols = static_cast<int>(skp / 32);
  const int first_k = blockIdx.x * kVtTilesPerCta * kVtKeyTile;
  const bool vec_ok = vectorLoadsOk<T>(p);
  uint8_t *sf = reinterpret_cast<uint8_t *>(p.scales) +
                static_cast<int64_t>(bh) * quantizeScaleBytesPerHead(1, T::kHeadDim, p.seqlen);

  VtTileVectors<T> next{};
  if (vec_ok) // (before the head reduction: latencies overlap)
    loadVtTileVectors<T>(p, bh, first_k, d0, next);
  // v_shift = (largest block exponent of the head) - 6 = mxBlockExponent(head amax) - 6, since
  // floor and the clamp are monotone: the largest block of V^T then widens to E4M3 exactly.
  if (blockIdx.x == 0 && blockIdx.y == 0) {
    const HeadAmax head = headAmax<T>(p, bh);
    if (threadIdx.x == 0)
      reinterpret_cast<int32_t *>(p.head_scalar)[bh] = mxBlockExponent(head.amax) - 6;
    writeFirstNonFiniteRow<T>(p, bh, head.nonfinite);
  }
  const int d = d0 + static_cast<int>(threadIdx.x) % T::kDims;
  const int blk = static_cast<int>(threadIdx.x) / T::kDims;
  uint8_t *payload_row = reinterpret_cast<uint8_t *>(p.payload) + (static_cast<int64_t>(bh) * T::kHeadDim + d) * (skp / 2);
  forEachVtTile<T>(p, bh, first_k, d0, vec_ok, next, tile, [&](int k0, float (&v)[32]) {
    float amax_b = 0.0f;
#pragma unroll
    for (int i = 0; i < 32; ++i)
      amax_b = fmaxf(amax_b, fabsf(v[i]));
    const int e = mxBlockExponent(amax_b);
    const float inv = exp2Int(-e); // exact power of two: the codes see x * 2^-e unrounded
    uint32_t w[4] = {0u, 0u, 0u, 0u};
#pragma unroll
    for (int i = 0; i < 16; ++i)
      w[i / 4] |= finiteFloatsToE2M1x2(__fmul_rn(v[2 * i], inv), __fmul_rn(v[2 * i + 1], inv)) << (8 * (i % 4));
    *reinterpret_cast<uint4 *>(payload_row + (k0 + blk * 32) / 2) = make_uint4(w[0], w[1], w[2], w[3]);
    sf[scaleFactorOffset(d, k0 / 32 + blk, scale_cols)] = exponentToUE8M0(e);
    zeroVtScalePadding<T>(sf, k0, scale_cols);
  });
}

#endif // CUDA compilers

} // namespace fa4jit::device::quantize
