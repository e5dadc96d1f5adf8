#pragma once
// Global -> shared loads of the sm_100a attention kernel. Payload rows go through cp.async into the
// no-swizzle UMMA layout; the scale-factor atoms, already in tcgen05.cp's layout in global memory
// (NUMERICS.md §1.1), go through cp.async.bulk as whole 512-byte atoms.
#include "fa4jit/attention_sm100/async_copy.cuh"
#include "fa4jit/attention_sm100/config.cuh"

namespace fa4jit::device::attention {

// Byte offset of (row, 16-byte chunk) in the no-swizzle K-major layout with `chunks` chunks per row:
// (row, chunk) -> ((row / 8) * chunks + chunk) * 128 + (row % 8) * 16.
FA4JIT_DEVICE uint32_t sm100CoreMatrixOffset(int row, int chunk, int chunks) {
  return static_cast<uint32_t>(((row / 8) * chunks + chunk) * 128 + (row % 8) * 16);
}

// `rows` rows of `kRowBytes` bytes starting at `src` (row stride in bytes); rows >= valid_rows are
// zero-filled (queries or keys past the sequence end). Every thread issues its share.
template <int kRowBytes, int kRows, int kThreads>
FA4JIT_DEVICE void sm100LoadRows(uint32_t smem_dst, const uint8_t *src, int64_t row_stride, int valid_rows, int tid) {
  constexpr int kChunks = kRowBytes / 16;
  static_assert((kRows * kChunks) % kThreads == 0, "chunks must divide evenly among the threads");
#pragma unroll 4
  for (int c = tid; c < kRows * kChunks; c += kThreads) {
    const int row = c / kChunks, chunk = c % kChunks;
    const bool valid = row < valid_rows;
    const uint8_t *g = valid ? src + row * row_stride + chunk * 16 : src;
    sm100::cpAsync16(smem_dst + sm100CoreMatrixOffset(row, chunk, kChunks), g, valid);
  }
}

// Scale-factor atoms of rows [row0, row0 + 128) and scale columns [col0, col0 + 4 * atoms) of an SF
// tensor with `scale_cols` scale columns: atom (row0 / 128, col0 / 4 + a) is contiguous, 512 bytes.
FA4JIT_DEVICE const uint8_t *sm100SfAtom(const uint8_t *sf, int row0, int col0, int scale_cols) {
  const int64_t atoms_per_row_block = (scale_cols + 3) / 4;
  return sf + ((row0 / 128) * atoms_per_row_block + col0 / 4) * 512;
}

} // namespace fa4jit::device::attention
