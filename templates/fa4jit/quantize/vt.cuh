#pragma once
// Pass 2 for V: the transposed layouts V^T [D, Skp] (keys contiguous) that FP8 tensor cores need
// for O = P V (K-major operands only, docs/ARCHITECTURE.md §6), in MXFP4 (directp) or FP8 (nvfp8).
// A CTA stages 128 keys x T::kDims head-dim rows of x in shared memory, then each thread encodes
// one (head-dim row, 32-key block): 32 keys are one MXFP4 scale block, and 128 keys are exactly
// one 4-column atom of the scale-factor layout.
#include "fa4jit/quantize/amax.cuh"

namespace fa4jit::device::quantize {

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)

// Stages keys [k0, k0 + 128) x head-dim rows [d0, d0 + kDims) of head bh, transposed:
// tile[d][key] (keys past seqlen read as 0, which is what the padding keys encode to; NaN and Inf
// as 0, noted in `nonfinite`).
template <class T>
FA4JIT_DEVICE void stageVtTile(const QuantizeParams &p, int bh, int k0, int d0, float (*tile)[T::kTilePitch],
                               bool &nonfinite) {
  constexpr int kVecPerRow = T::kDims / T::kVec;
  const bool vec_ok = vectorLoadsOk<T>(p);
  const int64_t base = headOffset(p, bh);
  for (int i = threadIdx.x; i < kVtKeyTile * kVecPerRow; i += T::kThreads) {
    const int key = i / kVecPerRow;
    const int dv = (i % kVecPerRow) * T::kVec;
    float v[T::kVec];
    if (k0 + key < p.seqlen) {
      loadRun<T, T::kVec>(p, base + (k0 + key) * p.x_row_stride + d0 + dv, vec_ok, v);
      nonfinite |= zeroNonFinite(v);
    } else {
#pragma unroll
      for (int j = 0; j < T::kVec; ++j)
        v[j] = 0.0f;
    }
#pragma unroll
    for (int j = 0; j < T::kVec; ++j)
      tile[dv + j][key] = v[j];
  }
  __syncthreads();
}

// The raw 16-byte vectors of one tile that a thread loads (its share of 128 keys x kDims), so the
// next tile's loads can be in flight while one is encoded: four per thread for BF16 at every CTA
// size.
template <class T> constexpr int kVtVectorsPerThread = kVtKeyTile * (T::kDims / T::kVec) / T::kThreads;
template <class T> using VtTileVectors = uint4[kVtVectorsPerThread<T>];

// Loads keys [k0, k0 + 128) x head-dim rows [d0, d0 + kDims) of head bh as raw vectors (16-byte
// aligned input only; keys past seqlen read as 0).
template <class T>
FA4JIT_DEVICE void loadVtTileVectors(const QuantizeParams &p, int bh, int k0, int d0, VtTileVectors<T> &w) {
  constexpr int kVecPerRow = T::kDims / T::kVec;
  const uint8_t *x = reinterpret_cast<const uint8_t *>(p.x);
  const int64_t base = headOffset(p, bh) + d0;
#pragma unroll
  for (int j = 0; j < kVtVectorsPerThread<T>; ++j) {
    const int i = static_cast<int>(threadIdx.x) + j * T::kThreads;
    const int key = i / kVecPerRow;
    const int dv = (i % kVecPerRow) * T::kVec;
    w[j] = k0 + key < p.seqlen
               ? *reinterpret_cast<const uint4 *>(x + (base + static_cast<int64_t>(k0 + key) * p.x_row_stride + dv) *
                                                          T::kElemBytes)
               : make_uint4(0u, 0u, 0u, 0u);
  }
}

// Writes loadVtTileVectors' vectors into the tile, transposed (non-finite elements as 0, noted in
// `nonfinite`), then waits for the CTA.
template <class T>
FA4JIT_DEVICE void storeVtTileVectors(const VtTileVectors<T> &w, float (*tile)[T::kTilePitch], bool &nonfinite) {
  constexpr int kVecPerRow = T::kDims / T::kVec;
#pragma unroll
  for (int j = 0; j < kVtVectorsPerThread<T>; ++j) {
    const int i = static_cast<int>(threadIdx.x) + j * T::kThreads;
    const int key = i / kVecPerRow;
    const int dv = (i % kVecPerRow) * T::kVec;
    const uint32_t words[4] = {w[j].x, w[j].y, w[j].z, w[j].w};
    float v[T::kVec];
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      if constexpr (T::kInputFp32) {
        v[k] = bitsAsFloat(words[k]);
      } else {
        wordToFloats<T>(words[k], v[2 * k], v[2 * k + 1]);
      }
    }
    nonfinite |= zeroNonFinite(v);
#pragma unroll
    for (int k = 0; k < T::kVec; ++k)
      tile[dv + k][key] = v[k];
  }
  __syncthreads();
}

// Stages key tile `k0` of a CTA's loop into `tile`: from the vectors loaded ahead into `next`
// (then loads the following tile's, `k_next` < 0 for none), or, for input that 16-byte vectors
// cannot read, straight from x. The leading barrier lets the previous tile's readers finish.
template <class T>
FA4JIT_DEVICE void stageVtTileAhead(const QuantizeParams &p, int bh, int k0, int k_next, int d0, bool vec_ok,
                                    VtTileVectors<T> &next, float (*tile)[T::kTilePitch], bool &nonfinite) {
  __syncthreads();
  if (!vec_ok) {
    stageVtTile<T>(p, bh, k0, d0, tile, nonfinite);
    return;
  }
  storeVtTileVectors<T>(next, tile, nonfinite);
  if (k_next >= 0)
    loadVtTileVectors<T>(p, bh, k_next, d0, next);
}

// The 32 values of this thread's (row, block), in stored (possibly permuted) key order. Threads
// of a warp read 32 consecutive rows: with the odd pitch every read is conflict-free.
template <class T>
FA4JIT_DEVICE void readVtBlock(const float (*tile)[T::kTilePitch], int d, int blk, float (&v)[32]) {
#pragma unroll
  for (int pos = 0; pos < 32; ++pos)
    v[pos] = tile[d][blk * 32 + vtKeyAt(pos, T::kPermuted)];
}

// The loop of a V^T encode CTA: for each of its (up to) kVtTilesPerCta key tiles, stages the tile
// (the next one's loads then in flight) and calls encode(k0, v) with this thread's 32 values of
// its (head-dim row, 32-key block), in stored key order. `nonfinite`: whether this thread staged
// a NaN or Inf (as 0).
template <class T, class Encode>
FA4JIT_DEVICE void forEachVtTile(const QuantizeParams &p, int bh, int first_k, int d0, bool vec_ok,
                                 VtTileVectors<T> &next, float (*tile)[T::kTilePitch], bool &nonfinite,
                                 Encode &&encode) {
  const int64_t skp = quantizePaddedKeys(p.seqlen);
  const int row = static_cast<int>(threadIdx.x) % T::kDims;
  const int blk = static_cast<int>(threadIdx.x) / T::kDims;
  for (int t = 0; t < kVtTilesPerCta; ++t) {
    const int k0 = first_k + t * kVtKeyTile;
    if (k0 >= skp)
      break;
    const int k_next = t + 1 < kVtTilesPerCta && k0 + kVtKeyTile < skp ? k0 + kVtKeyTile : -1;
    stageVtTileAhead<T>(p, bh, k0, k_next, d0, vec_ok, next, tile, nonfinite);
    float v[32];
    readVtBlock<T>(tile, row, blk, v);
    encode(k0, v);
  }
}

// The scale bytes of head-dim rows [head_dim, 128) (only head_dim 64 has them) for this tile's 4
// scale columns: the SF layout pads rows to a multiple of 128 with zeros.
template <class T> FA4JIT_DEVICE void zeroVtScalePadding(uint8_t *sf, int k0, int scale_cols) {
  constexpr int kPadRows = (128 - T::kHeadDim % 128) % 128;
  if constexpr (kPadRows > 0) {
    if (blockIdx.y == gridDim.y - 1)
      for (int i = threadIdx.x; i < kPadRows * 4; i += T::kThreads)
        sf[scaleFactorOffset(T::kHeadDim + i / 4, k0 / 32 + i % 4, scale_cols)] = 0;
  }
}

#endif // CUDA compilers

} // namespace fa4jit::device::quantize
