#pragma once
// The widener warps' unit loops (fused widening, widen_ahead.cuh): a batch of units' source bytes
// goes into the warp's staging area in shared memory by cp.async, all in flight at once, then each
// lane widens its own units from there into the global image (the bytes of widen_kv.cuh and
// widen_q.cuh: producer.cuh's widenNvfp4Codes and tile_load.cuh's widenMxfp4Codes on the loaded
// values). With one global load in flight per lane (the widener warps have 32 registers) they
// would widen at a small fraction of the memory's rate, and the causal grid's groups of heads
// would wait on them.
#include "fa4jit/attention/key_order.cuh"
#include "fa4jit/attention/tile_load.cuh"
#include "fa4jit/attention_sm90/layout.cuh"
#include "fa4jit/attention_sm90/producer.cuh"
#include "fa4jit/formats.cuh"

namespace fa4jit::device::attention_sm90 {

// A widener warp's staging area: 512 NVFP4 units (8 payload bytes, then a 4-byte scale word each),
// or 256 MXFP4 blocks (16 payload bytes, then a scale word) or FP8 16-key vectors (16 bytes).
constexpr int kStageBytes = 6144;
constexpr int kStageNvfp4Units = 512;
constexpr int kStageBlockUnits = 256;
constexpr int kStageScalesAt = 4096; // the scale words, after the payload bytes

template <int kBytes> FA4JIT_DEVICE void cpAsyncToShared(uint32_t dst, const void *src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(dst), "l"(src), "n"(kBytes) : "memory");
}
// This lane's copies have landed (each lane reads back only what it copied itself).
FA4JIT_DEVICE void cpAsyncWaitAll() { asm volatile("cp.async.commit_group;\ncp.async.wait_group 0;\n" ::: "memory"); }

FA4JIT_DEVICE uint32_t sharedU32(uint32_t addr) {
  uint32_t v;
  asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(v) : "r"(addr) : "memory");
  return v;
}
FA4JIT_DEVICE uint2 sharedU64(uint32_t addr) {
  uint2 v;
  asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];\n" : "=r"(v.x), "=r"(v.y) : "r"(addr) : "memory");
  return v;
}
FA4JIT_DEVICE uint4 sharedU128(uint32_t addr) {
  uint4 v;
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(addr)
               : "memory");
  return v;
}

// The 4-byte word of a scale-factor tensor that holds byte `offset` (a head's scales start on a
// 512-byte atom), and the byte's place in it.
FA4JIT_DEVICE const uint8_t *scaleWord(const uint8_t *sf, int64_t offset) { return sf + (offset & ~int64_t(3)); }
FA4JIT_DEVICE uint8_t scaleByte(uint32_t word, int64_t offset) {
  return static_cast<uint8_t>(word >> (8 * static_cast<int>(offset & 3)));
}

// Units [first, end) (at most kStageNvfp4Units) of NVFP4 rows [kRows][kHeadDim / 2] (row r's scales
// at absolute row row0 + r of the SF layout), widened into their swizzled [kRows][kHeadDim] tile
// (produceNvfp4Rows' bytes); unit u is 16 elements, row u / (kHeadDim / 16); rows past valid_rows
// are zeros.
template <int kHeadDim, int kRows, bool kThreadKeyBlocks>
FA4JIT_DEVICE void widenNvfp4RowsStaged(uint8_t *tile, const uint8_t *payload, int row_stride, const uint8_t *sf,
                                        int row0, int valid_rows, float pre_scale, int first, int end, uint32_t stage,
                                        int lane) {
  constexpr int kPerRow = kHeadDim / 16;
#pragma unroll 1
  for (int u = first + lane; u < end; u += 32) {
    const int row = u / kPerRow, blk = u % kPerRow, i = u - first;
    if (row < valid_rows) {
      cpAsyncToShared<8>(stage + 8 * i, payload + row * row_stride + blk * 8);
      cpAsyncToShared<4>(stage + kStageScalesAt + 4 * i, scaleWord(sf, scaleFactorOffset(row0 + row, blk, kPerRow)));
    }
  }
  cpAsyncWaitAll();
#pragma unroll 1
  for (int u = first + lane; u < end; u += 32) {
    const int row = u / kPerRow, blk = u % kPerRow, i = u - first;
    uint4 out = zeroVec();
    if (row < valid_rows)
      out = widenNvfp4Codes(sharedU64(stage + 8 * i),
                            scaleByte(sharedU32(stage + kStageScalesAt + 4 * i), blk), // (the offset is blk mod 4)
                            pre_scale);
    *reinterpret_cast<uint4 *>(tile + nvfp4UnitOffset<kRows, kThreadKeyBlocks>(row, blk)) = out;
  }
}

// Units [first, end) (at most kStageBlockUnits) of MXFP4 V^T [kHeadDim][keys / 2] for the tile of
// kBlockN keys from key0: unit u is the 32-key block u % (kBlockN / 32) of row u / (kBlockN / 32),
// widened as producer.cuh's produceMxfp4Vt does, or with thread key blocks word by word
// (each 4-key word at its own place, attention/key_order.cuh's vtWordPosition).
template <int kHeadDim, int kBlockN, bool kPermuted, bool kThreadKeyBlocks>
FA4JIT_DEVICE void widenMxfp4VtStaged(uint8_t *tile, const uint8_t *vt, int row_stride, const uint8_t *sf, int key0,
                                      int keys_padded, int v_shift, int first, int end, uint32_t stage, int lane) {
  constexpr int kPerRow = kBlockN / 32;
  const int scale_cols = keys_padded / 32;
#pragma unroll 1
  for (int u = first + lane; u < end; u += 32) {
    const int d = u / kPerRow, key = key0 + (u % kPerRow) * 32, i = u - first;
    if (key < keys_padded) {
      cpAsyncToShared<16>(stage + 16 * i, vt + d * row_stride + key / 2);
      cpAsyncToShared<4>(stage + kStageScalesAt + 4 * i, scaleWord(sf, scaleFactorOffset(d, key / 32, scale_cols)));
    }
  }
  cpAsyncWaitAll();
#pragma unroll 1
  for (int u = first + lane; u < end; u += 32) {
    const int d = u / kPerRow, blk = u % kPerRow, key = key0 + blk * 32, i = u - first;
    uint4 lo = zeroVec(), hi = zeroVec();
    if (key < keys_padded)
      attention::widenMxfp4Codes<kPermuted || kThreadKeyBlocks>(
          sharedU128(stage + 16 * i), scaleByte(sharedU32(stage + kStageScalesAt + 4 * i), key / 32), v_shift, lo,
          hi);
    if constexpr (kThreadKeyBlocks) {
      static_assert(!kPermuted, "thread key blocks: V^T in key order");
      const uint32_t w[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
#pragma unroll
      for (int m = 0; m < 8; ++m) {
        const int pos = attention::vtWordPosition<kBlockN>(blk, m);
        *reinterpret_cast<uint32_t *>(tile + swizzledOffset<kHeadDim>(d, pos & ~15) + (pos & 15)) = w[m];
      }
    } else {
      *reinterpret_cast<uint4 *>(tile + swizzledOffset<kHeadDim>(d, blk * 32)) = lo;
      *reinterpret_cast<uint4 *>(tile + swizzledOffset<kHeadDim>(d, blk * 32 + 16)) = hi;
    }
  }
}

// Units [first, end) (at most kStageBlockUnits) of E4M3 rows [kRows][kHeadDim] (Q/K stored as E4M3)
// copied into their swizzled tile (producer.cuh's produceE4m3Rows bytes); unit u is 16 elements of
// row u / (kHeadDim / 16); rows past valid_rows are zeros.
template <int kHeadDim, int kRows, bool kThreadKeyBlocks>
FA4JIT_DEVICE void copyE4m3RowsStaged(uint8_t *tile, const uint8_t *payload, int row_stride, int valid_rows, int first,
                                      int end, uint32_t stage, int lane) {
  constexpr int kPerRow = kHeadDim / 16;
#pragma unroll 1
  for (int u = first + lane; u < end; u += 32) {
    const int row = u / kPerRow, blk = u % kPerRow, i = u - first;
    if (row < valid_rows)
      cpAsyncToShared<16>(stage + 16 * i, payload + row * row_stride + blk * 16);
  }
  cpAsyncWaitAll();
#pragma unroll 1
  for (int u = first + lane; u < end; u += 32) {
    const int row = u / kPerRow, blk = u % kPerRow, i = u - first;
    uint4 out = zeroVec();
    if (row < valid_rows)
      out = sharedU128(stage + 16 * i);
    *reinterpret_cast<uint4 *>(tile + nvfp4UnitOffset<kRows, kThreadKeyBlocks>(row, blk)) = out;
  }
}

// Units [first, end) (at most kStageBlockUnits) of FP8 V^T [kHeadDim][keys] for the tile of kBlockN
// keys from key0: unit u is the 16-key vector u % (kBlockN / 16) of row u / (kBlockN / 16)
// (producer.cuh's produceFp8Vt bytes).
template <int kHeadDim, int kBlockN, bool kPermuted>
FA4JIT_DEVICE void copyFp8VtStaged(uint8_t *tile, const uint8_t *vt, int row_stride, int key0, int keys_padded,
                                   int first, int end, uint32_t stage, int lane) {
  constexpr int kPerRow = kBlockN / 16;
#pragma unroll 1
  for (int u = first + lane; u < end; u += 32) {
    const int d = u / kPerRow, vec = u % kPerRow, i = u - first;
    if (key0 + vec * 16 < keys_padded)
      cpAsyncToShared<16>(stage + 16 * i, vt + d * row_stride + key0 + vec * 16);
  }
  cpAsyncWaitAll();
#pragma unroll 1
  for (int u = first + lane; u < end; u += 32) {
    const int d = u / kPerRow, vec = u % kPerRow, i = u - first;
    uint4 v = zeroVec();
    if (key0 + vec * 16 < keys_padded)
      v = sharedU128(stage + 16 * i);
    if constexpr (!kPermuted)
      v = permuteKeys16(v);
    *reinterpret_cast<uint4 *>(tile + swizzledOffset<kHeadDim>(d, vec * 16)) = v;
  }
}

} // namespace fa4jit::device::attention_sm90
