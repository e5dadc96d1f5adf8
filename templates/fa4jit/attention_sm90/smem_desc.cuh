#pragma once
// Shared-memory operand tiles of the wgmma path and their matrix descriptors.
//
// Layout of one K-major operand tile (E4M3 or BF16) of R rows (R % 8 == 0) by Kb bytes along the reduction
// dimension (Q [rows][D], K [keys][D], V^T [D][keys]): column blocks of 128 bytes, block c holding
// bytes 128c..128c+127 of every row, R * 128 bytes each, 1024-byte aligned. Inside a block, row r
// sits at r * 128 and its 16-byte chunk n at chunk position n ^ (r % 8): the 128-byte swizzle of
// the wgmma (address bits 4..6 XOR bits 7..9), which spreads the 8 rows of one core matrix over
// all 32 banks. A reduction extent below 128 bytes (D = 64, 64 keys) keeps the 128-byte row pitch
// and leaves the upper chunks unused: one swizzle mode for every shape.
#include "fa4jit/common.cuh"

namespace fa4jit::device::attention_sm90 {

constexpr int kSwizzleBytes = 128; // row pitch of a column block
constexpr int kSwizzleAtom = 1024; // 8 rows: the descriptor's stride between 8-row groups

FA4JIT_HD constexpr int operandColumnBlocks(int k_bytes) { return (k_bytes + kSwizzleBytes - 1) / kSwizzleBytes; }
FA4JIT_HD constexpr int operandTileBytes(int rows, int k_bytes) {
  return operandColumnBlocks(k_bytes) * rows * kSwizzleBytes;
}

#if defined(__CUDACC__) || defined(__CUDACC_RTC__) // (the layout arithmetic above is host-compilable too)
// Byte offset of the 16-byte chunk holding bytes [k_byte, k_byte + 16) of row `row` (k_byte % 16 == 0).
template <int kRows> FA4JIT_DEVICE uint32_t swizzledOffset(int row, int k_byte) {
  const int block = k_byte / kSwizzleBytes;
  const int chunk = (k_byte % kSwizzleBytes) / 16;
  return static_cast<uint32_t>(block * kRows * kSwizzleBytes + row * kSwizzleBytes + ((chunk ^ (row % 8)) * 16));
}

// sm_90 matrix descriptor (PTX ISA "Matrix Descriptor Format"; CUTLASS cute GmmaDescriptor):
//   bits  0..13 start address >> 4
//   bits 16..29 leading byte offset >> 4 (unused by the swizzled K-major layouts; 1 by convention)
//   bits 32..45 stride byte offset >> 4 (8-row groups: 1024 bytes)
//   bits 49..51 base offset (0: every tile is 1024-byte aligned)
//   bits 62..63 layout: 1 = 128-byte swizzle
// The high word is the same for every operand of this path. Shared-memory addresses lie below
// 2^18 (228 KiB), so the start field of the low word never carries into the leading byte offset:
// an operand at `offset` bytes from a tile is the tile's low word plus offset >> 4, one integer add.
// (Masking the address per k-step, as a direct encoding does, cost ~5 uniform instructions per
// wgmma, ~75 issue slots per tile between the consumer's barrier and its last wgmma.)
#endif

constexpr uint32_t kSw128DescriptorHi = static_cast<uint32_t>(kSwizzleAtom >> 4) | (1u << 30);
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
FA4JIT_DEVICE uint32_t sw128DescriptorLo(uint32_t smem_addr) { return (smem_addr >> 4) | (1u << 16); }
FA4JIT_DEVICE uint64_t sw128Descriptor(uint32_t desc_lo) {
  uint64_t d;
  asm("mov.b64 %0, {%1, %2};" : "=l"(d) : "r"(desc_lo), "r"(kSw128DescriptorHi));
  return d;
}

#endif

// Byte offset, from its tile, of k-step `kk` (32 bytes of the reduction dimension each: FP8 k32 or
// BF16 k16) of a tile of kRows rows, starting at row `row0` (a multiple of 8). Inside a 128-byte
// block the step advances the start address by 32 bytes: the hardware applies the swizzle to the
// full address, which is why tiles must be 1024-byte aligned.
template <int kRows> FA4JIT_HD constexpr uint32_t operandStepOffset(int row0, int kk) {
  return static_cast<uint32_t>((kk * 32 / kSwizzleBytes) * kRows * kSwizzleBytes + row0 * kSwizzleBytes +
                               (kk * 32) % kSwizzleBytes);
}

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
// Descriptor of k-step `kk` of the tile whose low descriptor word is `tile_lo` (sw128DescriptorLo).
template <int kRows> FA4JIT_DEVICE uint64_t operandDescriptor(uint32_t tile_lo, int row0, int kk) {
  return sw128Descriptor(tile_lo + (operandStepOffset<kRows>(row0, kk) >> 4));
}
#endif

} // namespace fa4jit::device::attention_sm90
