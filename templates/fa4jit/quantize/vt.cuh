#pragma once
// Pass 2 for V: the transposed layouts V^T [D, Skp] (keys contiguous) that FP8 tensor cores need
// for O = P V (K-major operands only, docs/ARCHITECTURE.md §6), in MXFP4 (directp) or FP8 (nvfp8).
// A CTA stages 128 keys x T::kDims head-dim rows of x in shared memory, then each thread encodes
// one (head-dim row, 32-key block): 32 keys are one MXFP4 scale block, and 128 keys are exactly
// one 4-column atom of the scale-factor layout.
#include "fa4jit/quantize/amax.cuh"

namespace fa4jit::device::quantize {

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)

// The staged tile (QuantizeTraits::kTilePitch): tile[d][key] as FP32 bits, or for 16-bit input
// tile[d][key / 2] holding keys 2m and 2m + 1 of row d in its low and high half.
template <class T> using VtTile = uint32_t[T::kDims][T::kTilePitch];

// Zeroes the NaN and Inf elements among 16-bit patterns (two per word) and says whether there was
// one. The common case is one mask and one packed maximum per word: with the sign cleared the
// patterns are ordered as the magnitudes are, and a NaN or Inf is at or above the Inf pattern.
template <class T, int kN> FA4JIT_DEVICE bool zeroNonFiniteHalves(uint32_t (&w)[kN]) {
  uint32_t m2 = 0u;
#pragma unroll
  for (int i = 0; i < kN; ++i)
    m2 = maxU16x2(m2, w[i] & 0x7FFF7FFFu);
  if ((m2 & 0xFFFFu) < T::kInfBits16 && (m2 >> 16) < T::kInfBits16)
    return false;
#pragma unroll
  for (int i = 0; i < kN; ++i) {
    const uint32_t lo = (w[i] & 0x7FFFu) < T::kInfBits16 ? w[i] & 0xFFFFu : 0u;
    const uint32_t hi = ((w[i] >> 16) & 0x7FFFu) < T::kInfBits16 ? w[i] & 0xFFFF0000u : 0u;
    w[i] = lo | hi;
  }
  return true;
}

// Stages keys [k0, k0 + 128) x head-dim rows [d0, d0 + kDims) of head bh, transposed, element by
// element (input that 16-byte vectors cannot read): keys past seqlen read as 0, which is what the
// padding keys encode to; NaN and Inf as 0, noted in `nonfinite`.
template <class T>
FA4JIT_DEVICE void stageVtTile(const QuantizeParams &p, int bh, int k0, int d0, VtTile<T> &tile, bool &nonfinite) {
  const int64_t base = headOffset(p, bh) + d0;
  for (int i = threadIdx.x; i < kVtKeyTile * T::kDims; i += T::kThreads) {
    const int key = i / T::kDims, d = i % T::kDims;
    const int64_t off = base + static_cast<int64_t>(k0 + key) * p.x_row_stride + d;
    const bool inside = k0 + key < p.seqlen;
    if constexpr (T::kTilePaired) {
      uint16_t bits = inside ? reinterpret_cast<const uint16_t *>(p.x)[off] : uint16_t(0);
      if ((bits & 0x7FFFu) >= T::kInfBits16) {
        bits = 0;
        nonfinite = true;
      }
      reinterpret_cast<uint16_t *>(&tile[d][key / 2])[key % 2] = bits; // (key 2m + 1: the high half)
    } else {
      float v = !inside ? 0.0f
                : T::kInputFp32 ? reinterpret_cast<const float *>(p.x)[off]
                                : elementToFloat<T>(reinterpret_cast<const uint16_t *>(p.x)[off]);
      if (!isFiniteFloat(v)) {
        v = 0.0f;
        nonfinite = true;
      }
      tile[d][key] = floatAsBits(v);
    }
  }
  __syncthreads();
}

// The raw 16-byte vectors of one tile that a thread loads (its share of 128 keys x kDims), so the
// next tile's loads can be in flight while one is encoded: four per thread for BF16 at every CTA
// size. 16-bit input takes them in pairs: vector 2j of key 2m, vector 2j + 1 the same head-dim
// columns of key 2m + 1.
template <class T> constexpr int kVtVectorsPerThread = kVtKeyTile * (T::kDims / T::kVec) / T::kThreads;
template <class T> using VtTileVectors = uint4[kVtVectorsPerThread<T>];
template <class T> constexpr int kVtKeysPerLoad = T::kTilePaired ? 2 : 1;

// Vector j's key (within the tile) and first head-dim column (within the CTA's rows).
template <class T> FA4JIT_DEVICE void vtVectorAt(int j, int &key, int &dv) {
  constexpr int kVecPerRow = T::kDims / T::kVec, kKeys = kVtKeysPerLoad<T>;
  const int i = static_cast<int>(threadIdx.x) + (j / kKeys) * T::kThreads;
  key = (i / kVecPerRow) * kKeys + j % kKeys;
  dv = (i % kVecPerRow) * T::kVec;
}

// Loads keys [k0, k0 + 128) x head-dim rows [d0, d0 + kDims) of head bh as raw vectors (16-byte
// aligned input only; keys past seqlen read as 0).
template <class T>
FA4JIT_DEVICE void loadVtTileVectors(const QuantizeParams &p, int bh, int k0, int d0, VtTileVectors<T> &w) {
  const uint8_t *x = reinterpret_cast<const uint8_t *>(p.x);
  const int64_t base = headOffset(p, bh) + d0;
#pragma unroll
  for (int j = 0; j < kVtVectorsPerThread<T>; ++j) {
    int key, dv;
    vtVectorAt<T>(j, key, dv);
    w[j] = k0 + key < p.seqlen
               ? *reinterpret_cast<const uint4 *>(x + (base + static_cast<int64_t>(k0 + key) * p.x_row_stride + dv) *
                                                          T::kElemBytes)
               : make_uint4(0u, 0u, 0u, 0u);
  }
}

// Writes loadVtTileVectors' vectors into the tile, transposed (non-finite elements as 0, noted in
// `nonfinite`), then waits for the CTA.
template <class T>
FA4JIT_DEVICE void storeVtTileVectors(const VtTileVectors<T> &w, VtTile<T> &tile, bool &nonfinite) {
  if constexpr (T::kTilePaired) {
    static_assert(kVtVectorsPerThread<T> % 2 == 0, "a thread loads whole key pairs");
#pragma unroll
    for (int j = 0; j < kVtVectorsPerThread<T>; j += 2) {
      int key, dv;
      vtVectorAt<T>(j, key, dv);
      uint32_t a[4] = {w[j].x, w[j].y, w[j].z, w[j].w}, b[4] = {w[j + 1].x, w[j + 1].y, w[j + 1].z, w[j + 1].w};
      nonfinite |= zeroNonFiniteHalves<T>(a);
      nonfinite |= zeroNonFiniteHalves<T>(b);
      // word k of a vector: columns dv + 2k (low half) and dv + 2k + 1 (high half)
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        tile[dv + 2 * k][key / 2] = bytePerm(a[k], b[k], 0x5410u);
        tile[dv + 2 * k + 1][key / 2] = bytePerm(a[k], b[k], 0x7632u);
      }
    }
  } else {
#pragma unroll
    for (int j = 0; j < kVtVectorsPerThread<T>; ++j) {
      int key, dv;
      vtVectorAt<T>(j, key, dv);
      uint32_t words[4] = {w[j].x, w[j].y, w[j].z, w[j].w};
      float v[T::kVec];
      if constexpr (T::kInputFp32) {
#pragma unroll
        for (int k = 0; k < 4; ++k)
          v[k] = bitsAsFloat(words[k]);
        nonfinite |= zeroNonFinite(v);
      } else {
        nonfinite |= zeroNonFiniteHalves<T>(words);
#pragma unroll
        for (int k = 0; k < 4; ++k)
          wordToFloats<T>(words[k], v[2 * k], v[2 * k + 1]);
      }
#pragma unroll
      for (int k = 0; k < T::kVec; ++k)
        tile[dv + k][key] = floatAsBits(v[k]);
    }
  }
  __syncthreads();
}

// Stages key tile `k0` of a CTA's loop into `tile`: from the vectors loaded ahead into `next`
// (then loads the following tile's, `k_next` < 0 for none), or, for input that 16-byte vectors
// cannot read, straight from x. The leading barrier lets the previous tile's readers finish.
template <class T>
FA4JIT_DEVICE void stageVtTileAhead(const QuantizeParams &p, int bh, int k0, int k_next, int d0, bool vec_ok,
                                    VtTileVectors<T> &next, VtTile<T> &tile, bool &nonfinite) {
  __syncthreads();
  if (!vec_ok) {
    stageVtTile<T>(p, bh, k0, d0, tile, nonfinite);
    return;
  }
  storeVtTileVectors<T>(next, tile, nonfinite);
  if (k_next >= 0)
    loadVtTileVectors<T>(p, bh, k_next, d0, next);
}

// One (head-dim row, 32-key block) as the encoders take it, in stored (possibly permuted) key
// order. 16-bit input keeps the patterns, positions 2i and 2i + 1 in word i (the permutation moves
// keys in pairs 2m, 2m + 1, so a stored pair is one word of the tile), and widens a value where it
// is used: half the registers of the FP32 values. FP32 input keeps the values' bits.
template <class T> struct VtBlock {
  static constexpr int kWords = T::kTilePaired ? 16 : 32;
  uint32_t w[kWords];
  FA4JIT_DEVICE float operator[](int pos) const {
    if constexpr (T::kTilePaired) {
      const uint32_t word = w[pos / 2];
      return pos % 2 ? elementToFloat<T>(static_cast<uint16_t>(word >> 16))
                     : elementToFloat<T>(static_cast<uint16_t>(word & 0xFFFFu));
    } else {
      return bitsAsFloat(w[pos]);
    }
  }
  // max |value| (the staged values are finite): for 16-bit patterns one mask and one packed
  // maximum per two values, the patterns being ordered as the magnitudes are.
  FA4JIT_DEVICE float amax() const {
    if constexpr (T::kTilePaired) {
      uint32_t m2 = 0u;
#pragma unroll
      for (int i = 0; i < kWords; ++i)
        m2 = maxU16x2(m2, w[i] & 0x7FFF7FFFu);
      return elementToFloat<T>(static_cast<uint16_t>((m2 & 0xFFFFu) > (m2 >> 16) ? m2 & 0xFFFFu : m2 >> 16));
    } else {
      float m = 0.0f;
#pragma unroll
      for (int i = 0; i < kWords; ++i)
        m = fmaxf(m, fabsf(bitsAsFloat(w[i])));
      return m;
    }
  }
  // E2M1's sign bits of positions 8j .. 8j + 7 (bit 4n + 3 for position 8j + n).
  FA4JIT_DEVICE uint32_t e2m1Signs8(int j) const {
    if constexpr (T::kTilePaired) {
      return e2m1SignsOfHalves8(w[4 * j], w[4 * j + 1], w[4 * j + 2], w[4 * j + 3]);
    } else {
      float x[8];
#pragma unroll
      for (int n = 0; n < 8; ++n)
        x[n] = bitsAsFloat(w[8 * j + n]);
      return e2m1SignsOfFloats8(x);
    }
  }
};

// Threads of a warp read 32 consecutive rows: with the odd pitch every read is conflict-free.
template <class T> FA4JIT_DEVICE void readVtBlock(const VtTile<T> &tile, int d, int blk, VtBlock<T> &b) {
#pragma unroll
  for (int i = 0; i < 16; ++i) {
    const int key = blk * 32 + vtKeyAt(2 * i, T::kPermuted);
    if constexpr (T::kTilePaired) {
      b.w[i] = tile[d][key / 2];
    } else {
      b.w[2 * i] = tile[d][key];
      b.w[2 * i + 1] = tile[d][key + 1];
    }
  }
}

// The loop of a V^T encode CTA: for each of its (up to) kVtTilesPerCta key tiles, stages the tile
// (the next one's loads then in flight) and calls encode(k0, block) with this thread's (head-dim
// row, 32-key block). `nonfinite`: whether this thread staged a NaN or Inf (as 0).
template <class T, class Encode>
FA4JIT_DEVICE void forEachVtTile(const QuantizeParams &p, int bh, int first_k, int d0, bool vec_ok,
                                 VtTileVectors<T> &next, VtTile<T> &tile, bool &nonfinite, Encode &&encode) {
  const int64_t skp = quantizePaddedKeys(p.seqlen);
  const int row = static_cast<int>(threadIdx.x) % T::kDims;
  const int blk = static_cast<int>(threadIdx.x) / T::kDims;
  for (int t = 0; t < kVtTilesPerCta; ++t) {
    const int k0 = first_k + t * kVtKeyTile;
    if (k0 >= skp)
      break;
    const int k_next = t + 1 < kVtTilesPerCta && k0 + kVtKeyTile < skp ? k0 + kVtKeyTile : -1;
    stageVtTileAhead<T>(p, bh, k0, k_next, d0, vec_ok, next, tile, nonfinite);
    VtBlock<T> b;
    readVtBlock<T>(tile, row, blk, b);
    encode(k0, b);
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
