#pragma once
// Global -> shared tiles, widened on the way for the FP4 formats (Hopper has FP8 and BF16 tensor
// cores but no FP4 ones, docs/ARCHITECTURE.md §6). Every CTA thread takes part; work units are
// 16-byte vectors so that consecutive threads read consecutive global bytes. Out-of-range rows and
// keys are written as zeros: a masked key gets P = 0, and 0 * garbage must not become NaN.
#include "fa4jit/common.cuh"
#include "fa4jit/formats.cuh"

namespace fa4jit::device::attention {

// Loads in flight per thread: full unrolling would hoist every vector of a 256-wide tile into
// registers at once and spill next to the O accumulator.
constexpr int kLoadUnroll = 4;

FA4JIT_DEVICE uint4 zeroVec() { return make_uint4(0u, 0u, 0u, 0u); }

// Keys 0..15 of a 16-byte FP8 vector reordered to [0,1,8,9, 2,3,10,11, 4,5,12,13, 6,7,14,15]:
// position 4q+i then holds the key that thread q's S accumulator has in slot i (mma.cuh), so P
// goes from the S accumulator into the FP8 A fragment without shuffles (docs/ARCHITECTURE.md §6).
FA4JIT_DEVICE uint4 permuteKeys16(uint4 v) {
  return make_uint4(__byte_perm(v.x, v.z, 0x5410u), __byte_perm(v.x, v.z, 0x7632u),
                    __byte_perm(v.y, v.w, 0x5410u), __byte_perm(v.y, v.w, 0x7632u));
}

// BF16 rows [kRows][kHeadDim] (head dim contiguous, `row_stride` elements apart) into shared rows
// of kPitch bytes; rows >= valid_rows become zeros. kUnroll: vectors in flight per thread (the
// backward, whose dK/dV accumulators stay live across its loads, takes 1).
template <int kHeadDim, int kRows, int kPitch, int kThreads, int kUnroll = kLoadUnroll>
FA4JIT_DEVICE void loadBf16Rows(uint8_t *smem, const uint16_t *gmem, int row_stride, int valid_rows,
                                int tid) {
  constexpr int kVecsPerRow = kHeadDim * 2 / 16;
  constexpr int kVecs = kRows * kVecsPerRow;
#pragma unroll kUnroll
  for (int it = 0; it < (kVecs + kThreads - 1) / kThreads; ++it) {
    const int u = tid + it * kThreads;
    if (kVecs % kThreads == 0 || u < kVecs) {
      const int row = u / kVecsPerRow, vec = u % kVecsPerRow;
      uint4 v = zeroVec();
      if (row < valid_rows)
        v = *reinterpret_cast<const uint4 *>(gmem + row * row_stride + vec * 8);
      *reinterpret_cast<uint4 *>(smem + row * kPitch + vec * 16) = v;
    }
  }
}

// NVFP4 rows (payload [rows][kHeadDim/2] bytes, UE4M3 scale per 16 elements in the SF layout)
// widened into shared rows of kPitch bytes:
//   kToBf16: BF16(E2M1[c] * s_b), exact (NUMERICS.md §2.1, Widening::Bf16);
//   else   : E4M3(E2M1[c] * s_b * pre_scale) with pre_scale = 2^-sigma, one rounding (E4m3).
// `row0` is the absolute row of tile row 0 (the SF layout is indexed by absolute row).
template <int kHeadDim, int kRows, int kPitch, int kThreads, bool kToBf16, int kUnroll = kLoadUnroll>
FA4JIT_DEVICE void loadNvfp4Rows(uint8_t *smem, const uint8_t *payload, int row_stride,
                                 const uint8_t *sf, int row0, int valid_rows, float pre_scale, int tid) {
  constexpr int kBlocksPerRow = kHeadDim / 16; // one scale and 8 payload bytes each
  constexpr int kUnits = kRows * kBlocksPerRow;
#pragma unroll kUnroll
  for (int it = 0; it < (kUnits + kThreads - 1) / kThreads; ++it) {
    const int u = tid + it * kThreads;
    if (kUnits % kThreads == 0 || u < kUnits) {
      const int row = u / kBlocksPerRow, blk = u % kBlocksPerRow;
      uint2 codes = make_uint2(0u, 0u);
      float scale = 0.0f;
      if (row < valid_rows) {
        codes = *reinterpret_cast<const uint2 *>(payload + row * row_stride + blk * 8);
        scale = ue4m3ToFloat(sf[static_cast<int>(scaleFactorOffset(row0 + row, blk, kBlocksPerRow))]);
      }
      if constexpr (kToBf16) {
        uint32_t w[8];
#pragma unroll
        for (int i = 0; i < 8; ++i) {
          const uint32_t word = i < 4 ? codes.x : codes.y;
          const uint32_t c0 = (word >> (8 * (i % 4))) & 0xFu, c1 = (word >> (8 * (i % 4) + 4)) & 0xFu;
          // E2M1 x UE4M3 has at most 6 significant bits: exact in BF16.
          const float v0 = e2m1MagnitudeToFloat(c0) * scale, v1 = e2m1MagnitudeToFloat(c1) * scale;
          w[i] = static_cast<uint32_t>(floatToBF16(c0 & 8u ? -v0 : v0)) |
                 (static_cast<uint32_t>(floatToBF16(c1 & 8u ? -v1 : v1)) << 16);
        }
        uint4 *dst = reinterpret_cast<uint4 *>(smem + row * kPitch + blk * 32);
        dst[0] = make_uint4(w[0], w[1], w[2], w[3]);
        dst[1] = make_uint4(w[4], w[5], w[6], w[7]);
      } else {
        const E2M1ToE4M3Table table = e2m1ToE4M3TableScaled(scale * pre_scale);
        const E4M3x8 a = widenE2M1x8(table, codes.x), b = widenE2M1x8(table, codes.y);
        *reinterpret_cast<uint4 *>(smem + row * kPitch + blk * 16) = make_uint4(a.lo, a.hi, b.lo, b.hi);
      }
    }
  }
}

// FP8 V^T tile: rows d = 0..kHeadDim-1 of keys [key0, key0 + kBlockN) (keys contiguous, padded
// with zeros to Skp in global memory; keys >= Skp read as zeros here).
template <int kHeadDim, int kBlockN, int kPitch, int kThreads, bool kPermuted>
FA4JIT_DEVICE void loadFp8Vt(uint8_t *smem, const uint8_t *vt, int row_stride, int key0, int keys_padded,
                             int tid) {
  constexpr int kVecsPerRow = kBlockN / 16;
  constexpr int kVecs = kHeadDim * kVecsPerRow;
#pragma unroll kLoadUnroll
  for (int it = 0; it < (kVecs + kThreads - 1) / kThreads; ++it) {
    const int u = tid + it * kThreads;
    if (kVecs % kThreads == 0 || u < kVecs) {
      const int d = u / kVecsPerRow, vec = u % kVecsPerRow;
      uint4 v = zeroVec();
      if (key0 + vec * 16 < keys_padded)
        v = *reinterpret_cast<const uint4 *>(vt + d * row_stride + key0 + vec * 16);
      if constexpr (!kPermuted)
        v = permuteKeys16(v);
      *reinterpret_cast<uint4 *>(smem + d * kPitch + vec * 16) = v;
    }
  }
}

// One 32-key MXFP4 block, from its 16 payload bytes and UE8M0 scale byte as loaded, widened to 32
// E4M3 bytes (lo: keys 0-15, hi: 16-31) in the register-P key order: E4M3(E2M1[c] * 2^(E_b -
// v_shift)), exact while E_b - v_shift >= -8.
template <bool kPermuted>
FA4JIT_DEVICE void widenMxfp4Codes(uint4 codes, uint8_t scale, int v_shift, uint4 &lo, uint4 &hi) {
  const E2M1ToE4M3Table table = e2m1ToE4M3TablePow2(ue8m0Exponent(scale) - v_shift);
  const E4M3x8 w0 = widenE2M1x8(table, codes.x), w1 = widenE2M1x8(table, codes.y);
  const E4M3x8 w2 = widenE2M1x8(table, codes.z), w3 = widenE2M1x8(table, codes.w);
  lo = make_uint4(w0.lo, w0.hi, w1.lo, w1.hi);
  hi = make_uint4(w2.lo, w2.hi, w3.lo, w3.hi);
  if constexpr (!kPermuted) {
    lo = permuteKeys16(lo);
    hi = permuteKeys16(hi);
  }
}

// The same for block key / 32 of V^T row d in memory; zeros at and past keys_padded. Shared by the
// mma.sync loads and the sm90 producer.
template <bool kPermuted>
FA4JIT_DEVICE void widenMxfp4Block(const uint8_t *vt, int row_stride, const uint8_t *sf, int d, int key,
                                   int keys_padded, int scale_cols, int v_shift, uint4 &lo, uint4 &hi) {
  lo = zeroVec(), hi = zeroVec();
  if (key >= keys_padded)
    return;
  widenMxfp4Codes<kPermuted>(*reinterpret_cast<const uint4 *>(vt + d * row_stride + key / 2),
                             sf[static_cast<int>(scaleFactorOffset(d, key / 32, scale_cols))], v_shift, lo, hi);
}

// MXFP4 V^T tile widened to E4M3: v = E4M3(E2M1[c] * 2^(E_b - v_shift)) (NUMERICS.md §2.3), one
// table per (d, 32-key block), exact while E_b - v_shift >= -8.
template <int kHeadDim, int kBlockN, int kPitch, int kThreads, bool kPermuted>
FA4JIT_DEVICE void loadMxfp4Vt(uint8_t *smem, const uint8_t *vt, int row_stride, const uint8_t *sf,
                               int key0, int keys_padded, int v_shift, int tid) {
  constexpr int kBlocksPerRow = kBlockN / 32; // 16 payload bytes + one UE8M0 scale each
  constexpr int kUnits = kHeadDim * kBlocksPerRow;
  const int scale_cols = keys_padded / 32;
#pragma unroll kLoadUnroll / 2 // 32 output bytes per unit
  for (int it = 0; it < (kUnits + kThreads - 1) / kThreads; ++it) {
    const int u = tid + it * kThreads;
    if (kUnits % kThreads == 0 || u < kUnits) {
      const int d = u / kBlocksPerRow, blk = u % kBlocksPerRow;
      const int key = key0 + blk * 32;
      uint4 lo, hi;
      widenMxfp4Block<kPermuted>(vt, row_stride, sf, d, key, keys_padded, scale_cols, v_shift, lo, hi);
      uint4 *dst = reinterpret_cast<uint4 *>(smem + d * kPitch + blk * 32);
      dst[0] = lo;
      dst[1] = hi;
    }
  }
}

} // namespace fa4jit::device::attention
