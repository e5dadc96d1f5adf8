#pragma once
// The producer warpgroup: reads FP4/FP8 tiles from global memory with 16-byte (or 8-byte) loads,
// widens FP4 to E4M3 (docs/ARCHITECTURE.md §6: Hopper has no FP4 tensor cores) and writes the
// swizzled K-major tiles of smem_desc.cuh; the bf16 route's tiles are copied as they are (V
// transposed). Numerics are those of attention/tile_load.cuh (docs/NUMERICS.md §2.1, §2.3), only
// the destination layout differs. Out-of-range rows and keys are zeros.
#include "fa4jit/attention/config.cuh"
#include "fa4jit/attention/key_order.cuh"
#include "fa4jit/attention/params.cuh"
#include "fa4jit/attention/tile_load.cuh"
#include "fa4jit/attention_sm90/layout.cuh"
#include "fa4jit/attention_sm90/smem_desc.cuh"
#include "fa4jit/formats.cuh"

namespace fa4jit::device::attention_sm90 {

// Loads in flight per producer thread (registers are scarce after setmaxnreg.dec).
constexpr int kProducerUnroll = 4;

// zeroVec and permuteKeys16 (the register-P key order) are the mma.sync path's, so both
// schedules read V in the order the quantizer wrote it.
using attention::permuteKeys16;
using attention::zeroVec;

// 16 NVFP4 codes (8 payload bytes) and their UE4M3 scale byte, as loaded, widened to E4M3.
FA4JIT_DEVICE uint4 widenNvfp4Codes(uint2 codes, uint8_t scale, float pre_scale) {
  const E2M1ToE4M3Table table = e2m1ToE4M3TableScaled(ue4m3ToFloat(scale) * pre_scale);
  const E4M3x8 a = widenE2M1x8(table, codes.x), b = widenE2M1x8(table, codes.y);
  return make_uint4(a.lo, a.hi, b.lo, b.hi);
}

// Where unit (row, blk) of a [kRows][kHeadDim] tile lies in its swizzled image. kThreadKeyBlocks
// (K tiles of thread key blocks): row r lands in tile row threadBlockColumn(r)
// (attention/key_order.cuh).
template <int kRows, bool kThreadKeyBlocks> FA4JIT_DEVICE uint32_t nvfp4UnitOffset(int row, int blk) {
  const int tile_row = kThreadKeyBlocks ? attention::threadBlockColumn<kRows>(row) : row;
  return swizzledOffset<kRows>(tile_row, blk * 16);
}

// NVFP4 rows [kRows][kHeadDim/2] (UE4M3 per 16 along D, SF layout indexed by absolute row) to
// E4M3(E2M1[c] * s_b * pre_scale) in a swizzled [kRows][kHeadDim] tile. One unit = 16 elements.
template <int kHeadDim, int kRows, bool kThreadKeyBlocks = false>
FA4JIT_DEVICE void produceNvfp4Rows(uint8_t *tile, const uint8_t *payload, int row_stride, const uint8_t *sf,
                                    int row0, int valid_rows, float pre_scale, int ptid) {
  constexpr int kBlocksPerRow = kHeadDim / 16;
  constexpr int kUnits = kRows * kBlocksPerRow;
  static_assert(kUnits % kWarpgroupThreads == 0, "whole units per producer thread");
#pragma unroll kProducerUnroll
  for (int it = 0; it < kUnits / kWarpgroupThreads; ++it) {
    const int u = ptid + it * kWarpgroupThreads;
    const int row = u / kBlocksPerRow, blk = u % kBlocksPerRow;
    uint4 out = zeroVec();
    if (row < valid_rows)
      out = widenNvfp4Codes(*reinterpret_cast<const uint2 *>(payload + row * row_stride + blk * 8),
                            sf[static_cast<int>(scaleFactorOffset(row0 + row, blk, kBlocksPerRow))], pre_scale);
    *reinterpret_cast<uint4 *>(tile + nvfp4UnitOffset<kRows, kThreadKeyBlocks>(row, blk)) = out;
  }
}

// Rows of kUnitsPerRow 16-byte units (`row_bytes` apart in global memory) copied as they are into
// their swizzled tile (unit `unit` of row `row` at nvfp4UnitOffset(row, unit): 16-byte columns);
// rows >= valid_rows become zeros. The E4M3 Q/K rows and the bf16 route's rows.
template <int kUnitsPerRow, int kRows, bool kThreadKeyBlocks = false>
FA4JIT_DEVICE void copyRowUnits(uint8_t *tile, const uint8_t *rows, int row_bytes, int valid_rows, int ptid) {
  constexpr int kUnits = kRows * kUnitsPerRow;
  static_assert(kUnits % kWarpgroupThreads == 0, "whole units per producer thread");
#pragma unroll kProducerUnroll
  for (int it = 0; it < kUnits / kWarpgroupThreads; ++it) {
    const int u = ptid + it * kWarpgroupThreads;
    const int row = u / kUnitsPerRow, unit = u % kUnitsPerRow;
    uint4 v = zeroVec();
    if (row < valid_rows)
      v = *reinterpret_cast<const uint4 *>(rows + row * row_bytes + unit * 16);
    *reinterpret_cast<uint4 *>(tile + nvfp4UnitOffset<kRows, kThreadKeyBlocks>(row, unit)) = v;
  }
}

// E4M3 rows [kRows][kHeadDim] (Q/K stored as E4M3, NUMERICS.md §1.4: the codes are already the
// image's values) copied into the swizzled tile in produceNvfp4Rows' unit order (16 elements a unit).
template <int kHeadDim, int kRows, bool kThreadKeyBlocks = false>
FA4JIT_DEVICE void produceE4m3Rows(uint8_t *tile, const uint8_t *payload, int row_stride, int valid_rows, int ptid) {
  copyRowUnits<kHeadDim / 16, kRows, kThreadKeyBlocks>(tile, payload, row_stride, valid_rows, ptid);
}

// FP8 V^T [kHeadDim][keys] (padded with zeros to keys_padded in global memory) into a swizzled
// [kHeadDim][kBlockN] tile, keys permuted within each 16 unless the quantizer did it already.
template <int kHeadDim, int kBlockN, bool kPermuted>
FA4JIT_DEVICE void produceFp8Vt(uint8_t *tile, const uint8_t *vt, int row_stride, int key0, int keys_padded,
                                int ptid) {
  constexpr int kVecsPerRow = kBlockN / 16;
  constexpr int kUnits = kHeadDim * kVecsPerRow;
  static_assert(kUnits % kWarpgroupThreads == 0, "whole units per producer thread");
#pragma unroll kProducerUnroll
  for (int it = 0; it < kUnits / kWarpgroupThreads; ++it) {
    const int u = ptid + it * kWarpgroupThreads;
    const int d = u / kVecsPerRow, vec = u % kVecsPerRow;
    uint4 v = zeroVec();
    if (key0 + vec * 16 < keys_padded)
      v = *reinterpret_cast<const uint4 *>(vt + d * row_stride + key0 + vec * 16);
    if constexpr (!kPermuted)
      v = permuteKeys16(v);
    *reinterpret_cast<uint4 *>(tile + swizzledOffset<kHeadDim>(d, vec * 16)) = v;
  }
}

// MXFP4 V^T [kHeadDim][keys/2] (UE8M0 per 32 keys) widened to E4M3(E2M1[c] * 2^(E_b - v_shift)).
// kThreadKeyBlocks: PV's k position p holds key threadBlockVtKey(p) (attention/key_order.cuh),
// and every 4 positions from a multiple of 4 hold 4 consecutive keys: one unit (a V^T row of the
// tile) widens its blocks in key order, then each 16-byte vector gathers four of their words
// (16-byte stores; widen_staged.cuh stores word by word, in fewer registers).
template <int kHeadDim, int kBlockN, bool kPermuted, bool kThreadKeyBlocks = false>
FA4JIT_DEVICE void produceMxfp4Vt(uint8_t *tile, const uint8_t *vt, int row_stride, const uint8_t *sf, int key0,
                                  int keys_padded, int v_shift, int ptid) {
  if constexpr (kThreadKeyBlocks) {
    static_assert(attention::threadKeyBlocksTile(kBlockN) && !kPermuted, "thread key blocks: V^T in key order");
    constexpr int kBlocks = kBlockN / 32;
    const int scale_cols = keys_padded / 32;
    for (int d = ptid; d < kHeadDim; d += kWarpgroupThreads) {
      uint32_t w[kBlocks * 8]; // word m: keys 4 m .. 4 m + 3 of the tile
#pragma unroll
      for (int b = 0; b < kBlocks; ++b) {
        uint4 lo, hi;
        attention::widenMxfp4Block<true>(vt, row_stride, sf, d, key0 + b * 32, keys_padded, scale_cols, v_shift, lo,
                                         hi);
        w[8 * b + 0] = lo.x, w[8 * b + 1] = lo.y, w[8 * b + 2] = lo.z, w[8 * b + 3] = lo.w;
        w[8 * b + 4] = hi.x, w[8 * b + 5] = hi.y, w[8 * b + 6] = hi.z, w[8 * b + 7] = hi.w;
      }
#pragma unroll
      for (int j = 0; j < kBlockN / 16; ++j)
        *reinterpret_cast<uint4 *>(tile + swizzledOffset<kHeadDim>(d, j * 16)) =
            make_uint4(w[attention::threadBlockVtKey<kBlockN>(16 * j) / 4],
                       w[attention::threadBlockVtKey<kBlockN>(16 * j + 4) / 4],
                       w[attention::threadBlockVtKey<kBlockN>(16 * j + 8) / 4],
                       w[attention::threadBlockVtKey<kBlockN>(16 * j + 12) / 4]);
    }
  } else {
    constexpr int kBlocksPerRow = kBlockN / 32;
    constexpr int kUnits = kHeadDim * kBlocksPerRow;
    static_assert(kUnits % kWarpgroupThreads == 0, "whole units per producer thread");
    const int scale_cols = keys_padded / 32;
#pragma unroll kProducerUnroll / 2
    for (int it = 0; it < kUnits / kWarpgroupThreads; ++it) {
      const int u = ptid + it * kWarpgroupThreads;
      const int d = u / kBlocksPerRow, blk = u % kBlocksPerRow;
      const int key = key0 + blk * 32;
      uint4 lo, hi;
      attention::widenMxfp4Block<kPermuted>(vt, row_stride, sf, d, key, keys_padded, scale_cols, v_shift, lo, hi);
      *reinterpret_cast<uint4 *>(tile + swizzledOffset<kHeadDim>(d, blk * 32)) = lo;
      *reinterpret_cast<uint4 *>(tile + swizzledOffset<kHeadDim>(d, blk * 32 + 16)) = hi;
    }
  }
}

// BF16 rows [kRows][kHeadDim] (`row_stride` elements apart) into a swizzled [kRows][2 * kHeadDim
// bytes] tile; rows >= valid_rows become zeros (8 elements a unit).
template <int kHeadDim, int kRows>
FA4JIT_DEVICE void produceBf16Rows(uint8_t *tile, const uint16_t *rows, int row_stride, int valid_rows, int ptid) {
  copyRowUnits<kHeadDim / 8, kRows>(tile, reinterpret_cast<const uint8_t *>(rows), 2 * row_stride, valid_rows, ptid);
}

// BF16 V [keys][kHeadDim] (`row_stride` elements apart) transposed into a swizzled V^T
// [kHeadDim][2 * kBlockN bytes] tile (the K-major B operand of PV); keys >= valid_keys become
// zeros (P is 0 there, and 0 * garbage could be NaN). One unit = 8 keys of one head-dim column;
// the threads of a warp take consecutive columns, so each of the 8 loads reads 64 contiguous bytes.
template <int kHeadDim, int kBlockN>
FA4JIT_DEVICE void produceBf16Vt(uint8_t *tile, const uint16_t *v, int row_stride, int valid_keys, int ptid) {
  constexpr int kUnits = kHeadDim * (kBlockN / 8);
  static_assert(kUnits % kWarpgroupThreads == 0, "whole units per producer thread");
#pragma unroll 2
  for (int it = 0; it < kUnits / kWarpgroupThreads; ++it) {
    const int u = ptid + it * kWarpgroupThreads;
    const int d = u % kHeadDim, vec = u / kHeadDim;
    uint32_t w[4];
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int key = vec * 8 + 2 * e;
      const uint32_t lo = key < valid_keys ? v[key * row_stride + d] : 0u;
      const uint32_t hi = key + 1 < valid_keys ? v[(key + 1) * row_stride + d] : 0u;
      w[e] = lo | (hi << 16);
    }
    *reinterpret_cast<uint4 *>(tile + swizzledOffset<kHeadDim>(d, vec * 16)) = make_uint4(w[0], w[1], w[2], w[3]);
  }
}

// The FP4/FP8 K and V of one (batch, kv head) as the FP8-fed routes' widening reads them.
struct KvHeadSources {
  const uint8_t *k, *v, *k_sf, *v_sf;
  int keys_padded; // V^T rows hold the keys padded to a multiple of 128
  int v_shift;     // directp: the head's MXFP4 V shift (NUMERICS.md §2.3)
};

template <class C>
FA4JIT_DEVICE KvHeadSources kvHeadSources(const attention::AttentionParams &p, int b, int hkv, int head_kv) {
  KvHeadSources s;
  s.k = reinterpret_cast<const uint8_t *>(p.k) + b * p.k_batch_stride + hkv * p.k_head_stride;
  s.v = reinterpret_cast<const uint8_t *>(p.v) + b * p.v_batch_stride + hkv * p.v_head_stride;
  s.k_sf = reinterpret_cast<const uint8_t *>(p.k_sf) + b * p.k_sf_batch_stride + hkv * p.k_sf_head_stride;
  s.v_sf = reinterpret_cast<const uint8_t *>(p.v_sf) + b * p.v_sf_batch_stride + hkv * p.v_sf_head_stride;
  s.keys_padded = (p.seqlen_k + 127) / 128 * 128;
  s.v_shift = 0;
  if constexpr (C::route == attention::Route::DirectP)
    s.v_shift = reinterpret_cast<const int32_t *>(p.v_shift)[head_kv];
  return s;
}

// One K/V tile of an FP8-fed route (keys key0 .. key0 + k_valid - 1), widened: K [kBlockN][D] at
// k_dst, V^T [D][kBlockN] at v_dst, into shared memory (in-kernel producer) or into the tile's
// global image (widen_kv.cuh), the same bytes either way.
template <class C, int kHeadDim, int kBlockN>
FA4JIT_DEVICE void produceKvTile(uint8_t *k_dst, uint8_t *v_dst, const KvHeadSources &src,
                                 const attention::AttentionParams &p, int key0, int k_valid, float pre, int ptid) {
  constexpr bool kThreadKeyBlocks = attention::ThreadKeyBlocksOf<C>::value;
  if constexpr (attention::QkE4m3Of<C>::value)
    produceE4m3Rows<kHeadDim, kBlockN, kThreadKeyBlocks>(k_dst, src.k + key0 * p.k_row_stride,
                                                         static_cast<int>(p.k_row_stride), k_valid, ptid);
  else
    produceNvfp4Rows<kHeadDim, kBlockN, kThreadKeyBlocks>(k_dst, src.k + key0 * p.k_row_stride,
                                                          static_cast<int>(p.k_row_stride), src.k_sf, key0, k_valid,
                                                          pre, ptid);
  if constexpr (C::route == attention::Route::Nvfp8)
    produceFp8Vt<kHeadDim, kBlockN, C::v_keys_permuted16>(v_dst, src.v, static_cast<int>(p.v_row_stride), key0,
                                                          src.keys_padded, ptid);
  else
    produceMxfp4Vt<kHeadDim, kBlockN, C::v_keys_permuted16, kThreadKeyBlocks>(
        v_dst, src.v, static_cast<int>(p.v_row_stride), src.v_sf, key0, src.keys_padded, src.v_shift, ptid);
}

// The 128-row Q tile from query row m0 of (batch b, query head hq), as its shared-memory image:
// BF16 rows repacked, or NVFP4 widened to E4M3 (times 2^-qk_widen_shift); rows past seqlen_q are
// zeros. Every producer thread (ptid < 128) writes its share; the caller fences and signals.
template <class C, int kHeadDim, int kRows>
FA4JIT_DEVICE void produceQTile(uint8_t *tile, const attention::AttentionParams &p, int m0, int hq, int b, int ptid) {
  const int q_valid = p.seqlen_q - m0 < kRows ? p.seqlen_q - m0 : kRows;
  if constexpr (C::route == attention::Route::Bf16) {
    const uint16_t *qg = reinterpret_cast<const uint16_t *>(p.q) + b * p.q_batch_stride + hq * p.q_head_stride;
    produceBf16Rows<kHeadDim, kRows>(tile, qg + m0 * p.q_row_stride, static_cast<int>(p.q_row_stride), q_valid, ptid);
  } else if constexpr (attention::QkE4m3Of<C>::value) {
    const uint8_t *qg = reinterpret_cast<const uint8_t *>(p.q) + b * p.q_batch_stride + hq * p.q_head_stride;
    produceE4m3Rows<kHeadDim, kRows>(tile, qg + m0 * p.q_row_stride, static_cast<int>(p.q_row_stride), q_valid, ptid);
  } else {
    const uint8_t *qg = reinterpret_cast<const uint8_t *>(p.q) + b * p.q_batch_stride + hq * p.q_head_stride;
    const uint8_t *qsf = reinterpret_cast<const uint8_t *>(p.q_sf) + b * p.q_sf_batch_stride + hq * p.q_sf_head_stride;
    produceNvfp4Rows<kHeadDim, kRows>(tile, qg + m0 * p.q_row_stride, static_cast<int>(p.q_row_stride), qsf, m0,
                                      q_valid, exp2Int(-C::qk_widen_shift), ptid);
  }
}

} // namespace fa4jit::device::attention_sm90
