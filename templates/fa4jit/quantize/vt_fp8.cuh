#pragma once
// FP8 E4M3 V^T with one FP32 scale per head for the nvfp8 route (docs/NUMERICS.md §1),
// bit-identical to formats::quantizeFp8PerTensor applied to one head's V^T with padded_cols = Skp.
#include "fa4jit/quantize/vt.cuh"

namespace fa4jit::device::quantize {

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)

// One (head-dim row, 32-key block)'s E4M3 codes under the head's s_v = amax / 448 in FP32 (1 when
// that is 0): one division per element as the host does (by reciprocal and correction where that
// gives the same codes). Shared by the two-pass and the cluster encode.
template <class T> struct Fp8VtEncoder {
  float s_v, r;
  bool by_reciprocal;
  FA4JIT_DEVICE explicit Fp8VtEncoder(float head_amax) : s_v(__fdiv_rn(head_amax, 448.0f)) {
    if (!(s_v > 0.0f))
      s_v = 1.0f;
    r = __frcp_rn(s_v);
    by_reciprocal = quotientByReciprocalOk(s_v); // (the E4M3 codes of the exact quotients, formats.cuh)
  }
  // Writes the 32 codes of one (head-dim row d, 32-key block at key k) of head bh, in stored key
  // order, to V^T [D, Skp]; v is overwritten.
  FA4JIT_DEVICE void operator()(float (&v)[32], const QuantizeParams &p, int bh, int d, int k) const {
    if (by_reciprocal) {
#pragma unroll
      for (int i = 0; i < 32; ++i)
        v[i] = quotientByReciprocal(v[i], s_v, r);
    } else {
#pragma unroll
      for (int i = 0; i < 32; ++i)
        v[i] = __fdiv_rn(v[i], s_v);
    }
    uint32_t w[8];
#pragma unroll
    for (int i = 0; i < 8; ++i)
      w[i] = static_cast<uint32_t>(floatsToE4M3x2(v[4 * i], v[4 * i + 1])) |
             (static_cast<uint32_t>(floatsToE4M3x2(v[4 * i + 2], v[4 * i + 3])) << 16);
    uint4 *dst = reinterpret_cast<uint4 *>(reinterpret_cast<uint8_t *>(p.payload) +
                                           (static_cast<int64_t>(bh) * T::kHeadDim + d) * quantizePaddedKeys(p.seqlen) + k);
    dst[0] = make_uint4(w[0], w[1], w[2], w[3]);
    dst[1] = make_uint4(w[4], w[5], w[6], w[7]);
  }
};

// grid quantizeEncodeGrid (x over groups of kVtTilesPerCta key tiles, y over head-dim tiles,
// z = batch * heads), block T::kThreads.
template <class C> FA4JIT_DEVICE void vtFp8EncodePass(const QuantizeParams &p) {
  using T = QuantizeTraits<C>;
  __shared__ float tile[T::kDims][T::kTilePitch];
  const int bh = blockIdx.z;
  const int d0 = blockIdx.y * T::kDims;
  const int first_k = blockIdx.x * kVtTilesPerCta * kVtKeyTile;
  const bool vec_ok = vectorLoadsOk<T>(p);

  // The first tile's loads are issued before the head's maximum is reduced: both latencies overlap.
  VtTileVectors<T> next{};
  if (vec_ok)
    loadVtTileVectors<T>(p, bh, first_k, d0, next);
  const HeadAmax head = headAmax<T>(p, bh);
  const Fp8VtEncoder<T> encoder(head.amax);
  if (blockIdx.x == 0 && blockIdx.y == 0) {
    if (threadIdx.x == 0)
      reinterpret_cast<float *>(p.head_scalar)[bh] = encoder.s_v;
    writeFirstNonFiniteRow<T>(p, bh, head.nonfinite);
  }
  const int d = d0 + static_cast<int>(threadIdx.x) % T::kDims;
  const int blk = static_cast<int>(threadIdx.x) / T::kDims;
  bool nonfinite = false; // (the amax pass records the rows)
  forEachVtTile<T>(p, bh, first_k, d0, vec_ok, next, tile, nonfinite, [&](int k0, float (&v)[32]) {
    encoder(v, p, bh, d, k0 + blk * 32);
  });
}

#endif // CUDA compilers

} // namespace fa4jit::device::quantize
