#pragma once
// Warp-level tensor-core instructions of the mma.sync path and their register layouts.
// Notation (CuTe style): lane = threadIdx.x % 32, g = lane / 4 (groupID), q = lane % 4.
//
// Accumulator C/D of m16n8 (FP32), four registers:        (lane, i) -> (row, col)
//   c0, c1: (g,     2q + i)      c2, c3: (g + 8, 2q + i - 2)
// sm80_mma_m16n8k16_f32_bf16, A (row-major 16x16 BF16, 2 per register):
//   a0: (g, 2q..2q+1)  a1: (g+8, 2q..2q+1)  a2: (g, 8+2q..9+2q)  a3: (g+8, 8+2q..9+2q)
// B (16x8, "col": element (k, n) at B^T[n][k], 2 per register):
//   b0: (k = 2q..2q+1, n = g)   b1: (k = 8+2q..9+2q, n = g)
// sm89_mma_m16n8k32_f32_e4m3, A (16x32 E4M3, 4 per register, byte 0 = lowest k):
//   a0: (g, 4q..4q+3)  a1: (g+8, 4q..4q+3)  a2: (g, 16+4q..19+4q)  a3: (g+8, 16+4q..19+4q)
// B (32x8): b0: (k = 4q..4q+3, n = g)   b1: (k = 16+4q..19+4q, n = g)
// So both B operands want n-rows with k contiguous: K as stored ([key][d]) for S = Q K^T, and V^T
// ([d][key]) for O = P V; the bf16 route keeps V [key][d] and transposes it with ldmatrix.trans.
#include "fa4jit/common.cuh"

namespace fa4jit::device::attention {

FA4JIT_DEVICE void sm80_mma_m16n8k16_f32_bf16(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2,
                                              uint32_t a3, uint32_t b0, uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

FA4JIT_DEVICE void sm89_mma_m16n8k32_f32_e4m3(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2,
                                              uint32_t a3, uint32_t b0, uint32_t b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  asm("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
#else
  // FP8 mma.sync exists from sm_89; kernel.cuh rejects FP8 routes below it at compile time.
  (void)d, (void)a0, (void)a1, (void)a2, (void)a3, (void)b0, (void)b1;
#endif
}

// Four 8x8 BF16 matrices, transposed on the way into registers. Lane i gives the shared address of
// row (i % 8) of matrix (i / 8); lane (g, q) receives elements (rows 2q, 2q+1; column g) of each
// matrix, which is a B fragment (k = row, n = column) of m16n8k16 when rows are keys.
FA4JIT_DEVICE void sm75_ldmatrix_x4_trans_b16(uint32_t (&r)[4], uint32_t smem_addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr));
}

FA4JIT_DEVICE uint32_t sharedAddress(const void *p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// Two FP32 to a BF16 pair, RNE; `lo` (the lower column) in bits 0..15, as the A fragment wants.
FA4JIT_DEVICE uint32_t packBf16x2(float lo, float hi) {
  uint32_t r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

// The same pair as FP16 (RNE, overflow to Inf), or as BF16: the output's element type.
FA4JIT_DEVICE uint32_t packOutput2(float lo, float hi, bool fp16) {
  if (!fp16)
    return packBf16x2(lo, hi);
  uint32_t r;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

// Two E4M3 bytes (low byte first) to two FP32, exact (every E4M3 value is an FP16 value).
FA4JIT_DEVICE void unpackE4m3x2(uint32_t bytes16, float &lo, float &hi) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  uint32_t h2;
  const uint16_t b = static_cast<uint16_t>(bytes16);
  asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(h2) : "h"(b));
  asm("{\n .reg .f16 l, h;\n mov.b32 {l, h}, %2;\n cvt.f32.f16 %0, l;\n cvt.f32.f16 %1, h;\n}"
      : "=f"(lo), "=f"(hi)
      : "r"(h2));
#else
  (void)bytes16;
  lo = hi = 0.0f;
#endif
}

FA4JIT_DEVICE float warpQuadMax(float v) {
  v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1));
  return fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
}

FA4JIT_DEVICE float warpQuadSum(float v) {
  v += __shfl_xor_sync(0xffffffffu, v, 1);
  return v + __shfl_xor_sync(0xffffffffu, v, 2);
}

} // namespace fa4jit::device::attention
