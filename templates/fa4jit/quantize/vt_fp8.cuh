#pragma once
// FP8 E4M3 V^T with one FP32 scale per head for the nvfp8 route (docs/NUMERICS.md §1),
// bit-identical to formats::quantizeFp8PerTensor applied to one head's V^T with padded_cols = Skp.
#include "fa4jit/quantize/vt.cuh"

namespace fa4jit::device::quantize {

// grid quantizeEncodeGrid (groups of 128-key tiles, head_dim / T::kDims, batch * heads), block
// T::kThreads.
template <class C> FA4JIT_DEVICE void vtFp8EncodePass(const QuantizeParams &p) {
  using T = QuantizeTraits<C>;
  __shared__ float tile[T::kDims][T::kTilePitch];
  const int bh = blockIdx.z;
  const int d0 = blockIdx.y * T::kDims;
  const int64_t skp = quantizePaddedKeys(p.seqlen);
  const int d = d0 + static_cast<int>(threadIdx.x) % T::kDims;
  const int blk = static_cast<int>(threadIdx.x) / T::kDims;
  float s_v = 1.0f;
  auto head = [&] {
    // s_v = amax / 448 in FP32 (1 when that is 0), one division per element: as the host does.
    const HeadAmax h = headAmax<T>(p, bh);
    s_v = __fdiv_rn(h.amax, 448.0f);
    if (!(s_v > 0.0f))
      s_v = 1.0f;
    if (blockIdx.x == 0 && blockIdx.y == 0) {
      if (threadIdx.x == 0)
        reinterpret_cast<float *>(p.head_scalar)[bh] = s_v;
      writeFirstNonFiniteRow<T>(p, bh, h.nonfinite);
    }
  };
  auto encode = [&](int k0) {
    float v[32];
    readVtBlock<T>(tile, d - d0, blk, v);
    uint32_t w[8];
#pragma unroll
    for (int i = 0; i < 8; ++i)
      w[i] = static_cast<uint32_t>(floatsToE4M3x2(__fdiv_rn(v[4 * i], s_v), __fdiv_rn(v[4 * i + 1], s_v))) |
             (static_cast<uint32_t>(floatsToE4M3x2(__fdiv_rn(v[4 * i + 2], s_v), __fdiv_rn(v[4 * i + 3], s_v))) << 16);
    uint8_t *dst =
        reinterpret_cast<uint8_t *>(p.payload) + (static_cast<int64_t>(bh) * T::kHeadDim + d) * skp + k0 + blk * 32;
    reinterpret_cast<uint4 *>(dst)[0] = make_uint4(w[0], w[1], w[2], w[3]);
    reinterpret_cast<uint4 *>(dst)[1] = make_uint4(w[4], w[5], w[6], w[7]);
  };
  forEachVtTile<T>(p, bh, d0, tile, head, encode);
}

} // namespace fa4jit::device::quantize
