#pragma once
// Tiles of the backward: V^T transposed into key rows, dO quantized to E4M3 (rows and the
// transposed, query-permuted view dV = P^T dO reads), and the asynchronous copies of the staged
// query operands. Every CTA thread takes part; rows and keys out of range are written as zeros.
#include "fa4jit/attention/mma.cuh"
#include "fa4jit/attention/tile_load.cuh"
#include "fa4jit/attention_backward/config.cuh"
#include "fa4jit/formats.cuh"

namespace fa4jit::device::attention_backward {

// FP8 V^T [D][Skp] (keys contiguous) of keys [key0, key0 + kBlockN) into E4M3 rows [key][D]: the
// CTA's V block is loaded once, so the byte transpose costs nothing that repeats.
template <int kHeadDim, int kBlockN, int kPitch, int kThreads>
FA4JIT_DEVICE void loadFp8VtAsRows(uint8_t *smem, const uint8_t *vt, int64_t row_bytes, int key0, int keys_padded,
                                   int tid) {
  constexpr int kVecsPerRow = kBlockN / 16;
  constexpr int kVecs = kHeadDim * kVecsPerRow;
  for (int u = tid; u < kVecs; u += kThreads) {
    const int d = u / kVecsPerRow, vec = u % kVecsPerRow;
    uint4 v = attention::zeroVec();
    if (key0 + vec * 16 < keys_padded)
      v = *reinterpret_cast<const uint4 *>(vt + d * row_bytes + key0 + vec * 16);
    const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int i = 0; i < 16; ++i)
      smem[(vec * 16 + i) * kPitch + d] = static_cast<uint8_t>(w[i / 4] >> (8 * (i % 4)));
  }
}

// MXFP4 V^T [D][Skp/2] with UE8M0 scales per 32 keys, widened exactly to E4M3 as directp's forward
// widens it (E2M1 * 2^(E_b - v_shift)), into E4M3 rows [key][D].
template <int kHeadDim, int kBlockN, int kPitch, int kThreads>
FA4JIT_DEVICE void loadMxfp4VtAsRows(uint8_t *smem, const uint8_t *vt, int64_t row_bytes, const uint8_t *sf, int key0,
                                     int keys_padded, int v_shift, int tid) {
  constexpr int kBlocksPerRow = kBlockN / 32;
  constexpr int kUnits = kHeadDim * kBlocksPerRow;
  for (int u = tid; u < kUnits; u += kThreads) {
    const int d = u / kBlocksPerRow, blk = u % kBlocksPerRow;
    uint4 lo, hi;
    attention::widenMxfp4Block<true>(vt, static_cast<int>(row_bytes), sf, d, key0 + blk * 32, keys_padded,
                                     keys_padded / 32, v_shift, lo, hi);
    const uint32_t w[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
#pragma unroll
    for (int i = 0; i < 32; ++i)
      smem[(blk * 32 + i) * kPitch + d] = static_cast<uint8_t>(w[i / 4] >> (8 * (i % 4)));
  }
}

// dO of queries [q0, q0 + kBlockM) as E4M3(dO / s_dO) rows [query][D] (s_dO the head's scale,
// r_dO = RN(1 / s_dO); the quotient is the correctly rounded one, NUMERICS.md §1).
template <int kHeadDim, int kBlockM, int kPitch, int kThreads>
FA4JIT_DEVICE void loadQuantizedDo(uint8_t *smem, const uint16_t *d_o, int64_t row_stride, int valid_rows, float s_do,
                                   float r_do, int tid) {
  constexpr int kVecsPerRow = kHeadDim / 8; // 8 BF16 in, 8 E4M3 out
  constexpr int kVecs = kBlockM * kVecsPerRow;
  const bool by_reciprocal = quotientByReciprocalOk(s_do);
  for (int u = tid; u < kVecs; u += kThreads) {
    const int row = u / kVecsPerRow, vec = u % kVecsPerRow;
    uint2 out = make_uint2(0u, 0u);
    if (row < valid_rows) {
      const uint4 v = *reinterpret_cast<const uint4 *>(d_o + row * row_stride + vec * 8);
      const uint32_t w[4] = {v.x, v.y, v.z, v.w};
      uint32_t packed[2] = {0u, 0u};
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        float x0 = bf16ToFloat(static_cast<uint16_t>(w[i])), x1 = bf16ToFloat(static_cast<uint16_t>(w[i] >> 16));
        x0 = by_reciprocal ? quotientByReciprocal(x0, s_do, r_do) : __fdiv_rn(x0, s_do);
        x1 = by_reciprocal ? quotientByReciprocal(x1, s_do, r_do) : __fdiv_rn(x1, s_do);
        packed[i / 2] |= static_cast<uint32_t>(floatsToE4M3x2(x0, x1)) << (16 * (i % 2));
      }
      out = make_uint2(packed[0], packed[1]);
    }
    *reinterpret_cast<uint2 *>(smem + row * kPitch + vec * 8) = out;
  }
}

// The transposed view of kRows E4M3 dO rows: [d][query] (`dst_pitch` bytes per d), queries
// permuted within each 16 as attention::permuteKeys16 orders keys, so that a thread's P^T
// accumulator values form its A fragment of dV = P^T dO without shuffles (mma.cuh layouts).
template <int kHeadDim, int kRows, int kRowPitch, int kThreads>
FA4JIT_DEVICE void transposeDo(uint8_t *dst, int64_t dst_pitch, const uint8_t *rows, int tid) {
  constexpr int kUnits = kHeadDim * (kRows / 16);
  for (int u = tid; u < kUnits; u += kThreads) {
    const int d = u % kHeadDim, group = u / kHeadDim;
    uint32_t w[4] = {0u, 0u, 0u, 0u};
#pragma unroll
    for (int i = 0; i < 16; ++i)
      w[i / 4] |= static_cast<uint32_t>(rows[(group * 16 + i) * kRowPitch + d]) << (8 * (i % 4));
    *reinterpret_cast<uint4 *>(dst + d * dst_pitch + group * 16) =
        attention::permuteKeys16(make_uint4(w[0], w[1], w[2], w[3]));
  }
}

// ---- asynchronous copies of the staged operands (cp.async, 16 bytes each) -------------------
FA4JIT_DEVICE void copyAsync16(uint8_t *smem, const uint8_t *gmem) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(attention::sharedAddress(smem)), "l"(gmem) : "memory");
}
FA4JIT_DEVICE void commitAsyncCopies() { asm volatile("cp.async.commit_group;" ::: "memory"); }
// Waits until at most kPending of this thread's committed groups are still in flight.
template <int kPending> FA4JIT_DEVICE void waitAsyncCopies() {
  asm volatile("cp.async.wait_group %0;" ::"n"(kPending) : "memory");
}

// kRows rows of kRowBytes (a multiple of 16) from global rows `gmem_pitch` bytes apart into shared
// rows kPitch bytes apart.
template <int kRows, int kRowBytes, int kPitch, int kThreads>
FA4JIT_DEVICE void copyRowsAsync(uint8_t *smem, const uint8_t *gmem, int64_t gmem_pitch, int tid) {
  static_assert(kRowBytes % 16 == 0, "whole 16-byte vectors");
  constexpr int kVecsPerRow = kRowBytes / 16, kVecs = kRows * kVecsPerRow;
#pragma unroll 1
  for (int u = tid; u < kVecs; u += kThreads) {
    const int row = u / kVecsPerRow, vec = u % kVecsPerRow;
    copyAsync16(smem + row * kPitch + vec * 16, gmem + row * gmem_pitch + vec * 16);
  }
}

} // namespace fa4jit::device::attention_backward
