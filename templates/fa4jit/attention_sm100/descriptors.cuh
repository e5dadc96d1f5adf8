#pragma once
// Descriptors the sm_100a tensor core reads (host-compilable, so tests can pin their bits).
// Field positions from CUTLASS include/cute/arch/mma_sm100_desc.hpp (UMMA::SmemDescriptor,
// UMMA::InstrDescriptor, UMMA::InstrDescriptorBlockScaled) and the PTX ISA ("Shared memory
// descriptor", "Instruction descriptor" of tcgen05.mma); the values below are ours.
#include "fa4jit/common.cuh"

namespace fa4jit::device::sm100 {

// ---- shared-memory matrix descriptor (64 bit) --------------------------------------------------
//   bits  0-13 start address >> 4       bits 16-29 leading-dimension byte offset (LBO) >> 4
//   bits 32-45 stride-dimension byte offset (SBO) >> 4
//   bits 46-47 version: 1 on sm_100 (0 is the sm_90 wgmma descriptor)
//   bits 49-51 base offset (0: patterns start 1024-byte aligned), bit 52 LBO mode (0)
//   bits 61-63 layout: 0 no swizzle ("interleaved" 8-row x 16-byte core matrices), 2 = 128B, ...
// Every operand here uses the no-swizzle K-major layout: a core matrix is 8 rows x 16 bytes stored
// as 128 contiguous bytes; LBO steps to the next core matrix along K, SBO to the next 8 rows.
inline constexpr uint64_t kSmemDescVersionSm100 = 1;
inline constexpr uint64_t kSmemLayoutNoSwizzle = 0;

FA4JIT_HD constexpr uint64_t sm100SmemDescriptor(uint32_t smem_byte_address, uint32_t lbo_bytes, uint32_t sbo_bytes) {
  return (static_cast<uint64_t>((smem_byte_address >> 4) & 0x3FFFu)) |
         (static_cast<uint64_t>((lbo_bytes >> 4) & 0x3FFFu) << 16) |
         (static_cast<uint64_t>((sbo_bytes >> 4) & 0x3FFFu) << 32) | (kSmemDescVersionSm100 << 46) |
         (kSmemLayoutNoSwizzle << 61);
}

// Advancing a descriptor along K by `bytes` (a multiple of 16) moves only the start address.
FA4JIT_HD constexpr uint64_t sm100SmemDescriptorAdvance(uint64_t desc, uint32_t bytes) {
  return desc + static_cast<uint64_t>(bytes >> 4);
}

// A scale-factor atom (512 bytes: 32 lines of 16 bytes, NUMERICS.md §1.1) as tcgen05.cp
// .32x128b.warpx4 reads it: 4 core matrices of 8 lines, SBO 128, LBO unused (0), as DeepGEMM's
// make_sf_desc and CUTLASS's SM100_UTCCP_4x32dp128bit source layouts do.
FA4JIT_HD constexpr uint64_t sm100ScaleAtomDescriptor(uint32_t smem_byte_address) {
  return sm100SmemDescriptor(smem_byte_address, 0u, 128u);
}

// ---- instruction descriptors (32 bit) ----------------------------------------------------------
// Block-scaled kinds (kind::mxf4nvf4, kind::mxf4, kind::mxf8f6f4 .block_scale):
//   bits 0-1 sparse id2, bit 2 sparse, bits 4-5 B scale-factor id, bits 7-9 A format,
//   bits 10-12 B format, bit 13/14 negate A/B, bit 15/16 A/B major (0 = K-major),
//   bits 17-22 N >> 3, bit 23 scale format (0 UE4M3, 1 UE8M0), bits 24-28 M >> 4,
//   bits 29-30 A scale-factor id, bit 31 K size (0: K = 64 for the FP4 kinds).
// Plain kinds (kind::f16, kind::f8f6f4): bits 4-5 D format (1 = F32), formats, majors, N, M as above.
enum class Sm100ScaleFormat : uint32_t { Ue4m3 = 0, Ue8m0 = 1 };
inline constexpr uint32_t kSm100FormatE2m1Mxf4 = 1; // E2M1 in kind::mxf4 / kind::mxf4nvf4 (MXF4Format)
inline constexpr uint32_t kSm100FormatE4m3 = 0;     // E4M3 in kind::f8f6f4 / mxf8f6f4 (MXF8F6F4Format)
inline constexpr uint32_t kSm100DFormatF32 = 1;

FA4JIT_HD constexpr uint32_t sm100InstrDescBlockScaled(int m, int n, uint32_t a_format, uint32_t b_format,
                                                       Sm100ScaleFormat sf, uint32_t a_sf_id, uint32_t b_sf_id) {
  return ((b_sf_id & 3u) << 4) | ((a_format & 7u) << 7) | ((b_format & 7u) << 10) |
         ((static_cast<uint32_t>(n) >> 3) << 17) | (static_cast<uint32_t>(sf) << 23) |
         ((static_cast<uint32_t>(m) >> 4) << 24) | ((a_sf_id & 3u) << 29);
}

FA4JIT_HD constexpr uint32_t sm100InstrDescDense(int m, int n, uint32_t a_format, uint32_t b_format) {
  return (kSm100DFormatF32 << 4) | ((a_format & 7u) << 7) | ((b_format & 7u) << 10) |
         ((static_cast<uint32_t>(n) >> 3) << 17) | ((static_cast<uint32_t>(m) >> 4) << 24);
}

// Scale-factor ids: the byte of each 32-bit TMEM column where an MMA's scales start. A column holds
// four scales along K; scale_vec::4X (16-element blocks, K = 64) uses all four (id 0), scale_vec::2X
// (32-element blocks) two, so the second K = 64 step of a column reads bytes 2-3 (id 2). The id is
// also carried in bits 30-31 of the scale-factor TMEM address (CUTLASS
// make_runtime_instr_desc_block_scaled reads it back from there).
FA4JIT_HD constexpr uint32_t sm100ScaleTmemAddress(uint32_t tmem_column_address, uint32_t sf_id) {
  return tmem_column_address | (sf_id << 30);
}

// TMEM addresses: lane in bits 16-31, column in bits 0-15 (PTX ISA "Tensor Memory addressing").
FA4JIT_HD constexpr uint32_t sm100TmemAddress(uint32_t base, int lane, int column) {
  return base + (static_cast<uint32_t>(lane) << 16) + static_cast<uint32_t>(column);
}

} // namespace fa4jit::device::sm100
