#pragma once
// Pass 2 for V: the transposed layouts V^T [D, Skp] (keys contiguous) that FP8 tensor cores need
// for O = P V (K-major operands only, docs/ARCHITECTURE.md §6), in MXFP4 (directp) or FP8 (nvfp8).
// A CTA stages 128 keys x T::kDims head-dim rows of x in shared memory, then each thread encodes
// one (head-dim row, 32-key block): 32 keys are one MXFP4 scale block, and 128 keys are exactly
// one 4-column atom of the scale-factor layout. A CTA works through kEncodeGroupsPerCta such
// tiles.
#include "fa4jit/quantize/amax.cuh"

namespace fa4jit::device::quantize {

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)

// The loads of one tile, held in registers between issue and the shared-memory store.
template <class T> struct VtTileLoads {
  static constexpr int kVecPerRow = T::kDims / T::kVec;
  static constexpr int kLoads = kVtKeyTile * kVecPerRow / T::kThreads;
  static_assert(kLoads * T::kThreads == kVtKeyTile * kVecPerRow, "a tile is a whole number of loads per thread");
  float v[kLoads][T::kVec];
};

// Loads keys [k0, k0 + 128) x head-dim rows [d0, d0 + kDims) of head bh (keys past seqlen read
// as 0, which is what the padding keys encode to; non-finite elements as 0).
template <class T>
FA4JIT_DEVICE void loadVtTile(const QuantizeParams &p, int bh, int k0, int d0, bool vec_ok, VtTileLoads<T> &r) {
  using L = VtTileLoads<T>;
  const int64_t base = headOffset(p, bh);
#pragma unroll
  for (int l = 0; l < L::kLoads; ++l) {
    const int i = static_cast<int>(threadIdx.x) + l * T::kThreads;
    const int key = i / L::kVecPerRow;
    const int dv = (i % L::kVecPerRow) * T::kVec;
    if (k0 + key < p.seqlen) {
      loadRun<T, T::kVec>(p, base + static_cast<int64_t>(k0 + key) * p.x_row_stride + d0 + dv, vec_ok, r.v[l]);
    } else {
#pragma unroll
      for (int j = 0; j < T::kVec; ++j)
        r.v[l][j] = 0.0f;
    }
  }
}

// Stores a loaded tile transposed, tile[d][key], and waits for the CTA.
template <class T> FA4JIT_DEVICE void storeVtTile(VtTileLoads<T> &r, float (*tile)[T::kTilePitch]) {
  using L = VtTileLoads<T>;
#pragma unroll
  for (int l = 0; l < L::kLoads; ++l) {
    const int i = static_cast<int>(threadIdx.x) + l * T::kThreads;
    const int key = i / L::kVecPerRow;
    const int dv = (i % L::kVecPerRow) * T::kVec;
    zeroNonFinite(r.v[l]);
#pragma unroll
    for (int j = 0; j < T::kVec; ++j)
      tile[dv + j][key] = r.v[l][j];
  }
  __syncthreads();
}

// The encode pass's walk over its CTA's group of 128-key tiles (head-dim rows [d0, d0 + kDims)):
// the first tile is staged, then `head()` runs once (every thread; it may wait at barriers), then
// `encode(k0)` runs on each tile in shared memory while the next tile's loads are in flight.
template <class T, class Head, class Encode>
FA4JIT_DEVICE void forEachVtTile(const QuantizeParams &p, int bh, int d0, float (*tile)[T::kTilePitch], Head head,
                                 Encode encode) {
  const int tiles = static_cast<int>(quantizePaddedKeys(p.seqlen) / kVtKeyTile);
  const int first = static_cast<int>(blockIdx.x) * kEncodeGroupsPerCta;
  const int last = first + kEncodeGroupsPerCta < tiles ? first + kEncodeGroupsPerCta : tiles;
  const bool vec_ok = vectorLoadsOk<T>(p);
  VtTileLoads<T> loads;
  loadVtTile<T>(p, bh, first * kVtKeyTile, d0, vec_ok, loads);
  storeVtTile<T>(loads, tile);
  head();
#pragma unroll 1
  for (int t = first; t < last; ++t) {
    const bool more = t + 1 < last;
    if (more)
      loadVtTile<T>(p, bh, (t + 1) * kVtKeyTile, d0, vec_ok, loads);
    encode(t * kVtKeyTile);
    if (more) {
      __syncthreads(); // every thread has read the tile
      storeVtTile<T>(loads, tile);
    }
  }
}

// The 32 values of this thread's (row, block), in stored (possibly permuted) key order. Threads
// of a warp read 32 consecutive rows: with the odd pitch every read is conflict-free.
template <class T>
FA4JIT_DEVICE void readVtBlock(const float (*tile)[T::kTilePitch], int d, int blk, float (&v)[32]) {
#pragma unroll
  for (int pos = 0; pos < 32; ++pos)
    v[pos] = tile[d][blk * 32 + vtKeyAt(pos, T::kPermuted)];
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
