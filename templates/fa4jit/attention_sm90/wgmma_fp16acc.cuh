#pragma once
// FP8 QK^T wgmmas of sm_90a with FP16 accumulators (wgmma.mma_async ... .f16.e4m3.e4m3): S as
// FP16 pairs, half the registers of FP32 S, for the directp route's scores_fp16 (NUMERICS.md §2.1).
// Accumulator D of m64nN (FP16), held as d[N/8][2], (thread, j, i) -> (row, cols):
//   row = 16w + g + 8i, cols 8j + 2q (low half) and 8j + 2q + 1 (high half)
// the FP32 layout of wgmma.cuh with each row's two adjacent columns in one register. A (Q) and B
// (K) from shared memory (smem_desc.cuh descriptors). The product of one k-step is rounded to
// FP16 once it is added to D; |D| stays below 65504 by the widening shift (spec validator).
#include "fa4jit/common.cuh"
#include "fa4jit/attention_sm90/wgmma.cuh"

namespace fa4jit::device::attention_sm90 {

// D[64x64] (+)= A[64x32] * B[32x64], E4M3 inputs, FP16 accumulate.
FA4JIT_DEVICE void sm90_wgmma_m64n64k32_f16_e4m3_ss(uint32_t (&d)[8][2], uint64_t a_desc, uint64_t b_desc, int scale_d) {
#if defined(FA4JIT_SM90A)
  asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %18, 0;\n"
               " wgmma.mma_async.sync.aligned.m64n64k32.f16.e4m3.e4m3 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, %16, %17, p, 1, 1;\n}\n"
               : "+r"(d[0][0]), "+r"(d[0][1]), "+r"(d[1][0]), "+r"(d[1][1]), "+r"(d[2][0]), "+r"(d[2][1]), "+r"(d[3][0]), "+r"(d[3][1]), "+r"(d[4][0]), "+r"(d[4][1]), "+r"(d[5][0]), "+r"(d[5][1]), "+r"(d[6][0]), "+r"(d[6][1]), "+r"(d[7][0]), "+r"(d[7][1])
               : "l"(a_desc), "l"(b_desc), "r"(scale_d));
#else
  (void)d, (void)a_desc, (void)b_desc; (void)scale_d;
#endif
}

// D[64x64] = A[64x32] * B[32x64], E4M3 inputs, FP16 accumulate.
FA4JIT_DEVICE void sm90_wgmma_m64n64k32_f16_e4m3_ss_zero(uint32_t (&d)[8][2], uint64_t a_desc, uint64_t b_desc) {
#if defined(FA4JIT_SM90A)
  asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %18, 0;\n"
               " wgmma.mma_async.sync.aligned.m64n64k32.f16.e4m3.e4m3 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, %16, %17, p, 1, 1;\n}\n"
               : "=r"(d[0][0]), "=r"(d[0][1]), "=r"(d[1][0]), "=r"(d[1][1]), "=r"(d[2][0]), "=r"(d[2][1]), "=r"(d[3][0]), "=r"(d[3][1]), "=r"(d[4][0]), "=r"(d[4][1]), "=r"(d[5][0]), "=r"(d[5][1]), "=r"(d[6][0]), "=r"(d[6][1]), "=r"(d[7][0]), "=r"(d[7][1])
               : "l"(a_desc), "l"(b_desc), "n"(0));
#else
  (void)d, (void)a_desc, (void)b_desc;
#endif
}

// D[64x96] (+)= A[64x32] * B[32x96], E4M3 inputs, FP16 accumulate.
FA4JIT_DEVICE void sm90_wgmma_m64n96k32_f16_e4m3_ss(uint32_t (&d)[12][2], uint64_t a_desc, uint64_t b_desc, int scale_d) {
#if defined(FA4JIT_SM90A)
  asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %26, 0;\n"
               " wgmma.mma_async.sync.aligned.m64n96k32.f16.e4m3.e4m3 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23}, %24, %25, p, 1, 1;\n}\n"
               : "+r"(d[0][0]), "+r"(d[0][1]), "+r"(d[1][0]), "+r"(d[1][1]), "+r"(d[2][0]), "+r"(d[2][1]), "+r"(d[3][0]), "+r"(d[3][1]), "+r"(d[4][0]), "+r"(d[4][1]), "+r"(d[5][0]), "+r"(d[5][1]), "+r"(d[6][0]), "+r"(d[6][1]), "+r"(d[7][0]), "+r"(d[7][1]), "+r"(d[8][0]), "+r"(d[8][1]), "+r"(d[9][0]), "+r"(d[9][1]), "+r"(d[10][0]), "+r"(d[10][1]), "+r"(d[11][0]), "+r"(d[11][1])
               : "l"(a_desc), "l"(b_desc), "r"(scale_d));
#else
  (void)d, (void)a_desc, (void)b_desc; (void)scale_d;
#endif
}

// D[64x96] = A[64x32] * B[32x96], E4M3 inputs, FP16 accumulate.
FA4JIT_DEVICE void sm90_wgmma_m64n96k32_f16_e4m3_ss_zero(uint32_t (&d)[12][2], uint64_t a_desc, uint64_t b_desc) {
#if defined(FA4JIT_SM90A)
  asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %26, 0;\n"
               " wgmma.mma_async.sync.aligned.m64n96k32.f16.e4m3.e4m3 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23}, %24, %25, p, 1, 1;\n}\n"
               : "=r"(d[0][0]), "=r"(d[0][1]), "=r"(d[1][0]), "=r"(d[1][1]), "=r"(d[2][0]), "=r"(d[2][1]), "=r"(d[3][0]), "=r"(d[3][1]), "=r"(d[4][0]), "=r"(d[4][1]), "=r"(d[5][0]), "=r"(d[5][1]), "=r"(d[6][0]), "=r"(d[6][1]), "=r"(d[7][0]), "=r"(d[7][1]), "=r"(d[8][0]), "=r"(d[8][1]), "=r"(d[9][0]), "=r"(d[9][1]), "=r"(d[10][0]), "=r"(d[10][1]), "=r"(d[11][0]), "=r"(d[11][1])
               : "l"(a_desc), "l"(b_desc), "n"(0));
#else
  (void)d, (void)a_desc, (void)b_desc;
#endif
}

// D[64x128] (+)= A[64x32] * B[32x128], E4M3 inputs, FP16 accumulate.
FA4JIT_DEVICE void sm90_wgmma_m64n128k32_f16_e4m3_ss(uint32_t (&d)[16][2], uint64_t a_desc, uint64_t b_desc, int scale_d) {
#if defined(FA4JIT_SM90A)
  asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %34, 0;\n"
               " wgmma.mma_async.sync.aligned.m64n128k32.f16.e4m3.e4m3 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1;\n}\n"
               : "+r"(d[0][0]), "+r"(d[0][1]), "+r"(d[1][0]), "+r"(d[1][1]), "+r"(d[2][0]), "+r"(d[2][1]), "+r"(d[3][0]), "+r"(d[3][1]), "+r"(d[4][0]), "+r"(d[4][1]), "+r"(d[5][0]), "+r"(d[5][1]), "+r"(d[6][0]), "+r"(d[6][1]), "+r"(d[7][0]), "+r"(d[7][1]), "+r"(d[8][0]), "+r"(d[8][1]), "+r"(d[9][0]), "+r"(d[9][1]), "+r"(d[10][0]), "+r"(d[10][1]), "+r"(d[11][0]), "+r"(d[11][1]), "+r"(d[12][0]), "+r"(d[12][1]), "+r"(d[13][0]), "+r"(d[13][1]), "+r"(d[14][0]), "+r"(d[14][1]), "+r"(d[15][0]), "+r"(d[15][1])
               : "l"(a_desc), "l"(b_desc), "r"(scale_d));
#else
  (void)d, (void)a_desc, (void)b_desc; (void)scale_d;
#endif
}

// D[64x128] = A[64x32] * B[32x128], E4M3 inputs, FP16 accumulate.
FA4JIT_DEVICE void sm90_wgmma_m64n128k32_f16_e4m3_ss_zero(uint32_t (&d)[16][2], uint64_t a_desc, uint64_t b_desc) {
#if defined(FA4JIT_SM90A)
  asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %34, 0;\n"
               " wgmma.mma_async.sync.aligned.m64n128k32.f16.e4m3.e4m3 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1;\n}\n"
               : "=r"(d[0][0]), "=r"(d[0][1]), "=r"(d[1][0]), "=r"(d[1][1]), "=r"(d[2][0]), "=r"(d[2][1]), "=r"(d[3][0]), "=r"(d[3][1]), "=r"(d[4][0]), "=r"(d[4][1]), "=r"(d[5][0]), "=r"(d[5][1]), "=r"(d[6][0]), "=r"(d[6][1]), "=r"(d[7][0]), "=r"(d[7][1]), "=r"(d[8][0]), "=r"(d[8][1]), "=r"(d[9][0]), "=r"(d[9][1]), "=r"(d[10][0]), "=r"(d[10][1]), "=r"(d[11][0]), "=r"(d[11][1]), "=r"(d[12][0]), "=r"(d[12][1]), "=r"(d[13][0]), "=r"(d[13][1]), "=r"(d[14][0]), "=r"(d[14][1]), "=r"(d[15][0]), "=r"(d[15][1])
               : "l"(a_desc), "l"(b_desc), "n"(0));
#else
  (void)d, (void)a_desc, (void)b_desc;
#endif
}

// D[64x192] (+)= A[64x32] * B[32x192], E4M3 inputs, FP16 accumulate.
FA4JIT_DEVICE void sm90_wgmma_m64n192k32_f16_e4m3_ss(uint32_t (&d)[24][2], uint64_t a_desc, uint64_t b_desc, int scale_d) {
#if defined(FA4JIT_SM90A)
  asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %50, 0;\n"
               " wgmma.mma_async.sync.aligned.m64n192k32.f16.e4m3.e4m3 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47}, %48, %49, p, 1, 1;\n}\n"
               : "+r"(d[0][0]), "+r"(d[0][1]), "+r"(d[1][0]), "+r"(d[1][1]), "+r"(d[2][0]), "+r"(d[2][1]), "+r"(d[3][0]), "+r"(d[3][1]), "+r"(d[4][0]), "+r"(d[4][1]), "+r"(d[5][0]), "+r"(d[5][1]), "+r"(d[6][0]), "+r"(d[6][1]), "+r"(d[7][0]), "+r"(d[7][1]), "+r"(d[8][0]), "+r"(d[8][1]), "+r"(d[9][0]), "+r"(d[9][1]), "+r"(d[10][0]), "+r"(d[10][1]), "+r"(d[11][0]), "+r"(d[11][1]), "+r"(d[12][0]), "+r"(d[12][1]), "+r"(d[13][0]), "+r"(d[13][1]), "+r"(d[14][0]), "+r"(d[14][1]), "+r"(d[15][0]), "+r"(d[15][1]), "+r"(d[16][0]), "+r"(d[16][1]), "+r"(d[17][0]), "+r"(d[17][1]), "+r"(d[18][0]), "+r"(d[18][1]), "+r"(d[19][0]), "+r"(d[19][1]), "+r"(d[20][0]), "+r"(d[20][1]), "+r"(d[21][0]), "+r"(d[21][1]), "+r"(d[22][0]), "+r"(d[22][1]), "+r"(d[23][0]), "+r"(d[23][1])
               : "l"(a_desc), "l"(b_desc), "r"(scale_d));
#else
  (void)d, (void)a_desc, (void)b_desc; (void)scale_d;
#endif
}

// D[64x192] = A[64x32] * B[32x192], E4M3 inputs, FP16 accumulate.
FA4JIT_DEVICE void sm90_wgmma_m64n192k32_f16_e4m3_ss_zero(uint32_t (&d)[24][2], uint64_t a_desc, uint64_t b_desc) {
#if defined(FA4JIT_SM90A)
  asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %50, 0;\n"
               " wgmma.mma_async.sync.aligned.m64n192k32.f16.e4m3.e4m3 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47}, %48, %49, p, 1, 1;\n}\n"
               : "=r"(d[0][0]), "=r"(d[0][1]), "=r"(d[1][0]), "=r"(d[1][1]), "=r"(d[2][0]), "=r"(d[2][1]), "=r"(d[3][0]), "=r"(d[3][1]), "=r"(d[4][0]), "=r"(d[4][1]), "=r"(d[5][0]), "=r"(d[5][1]), "=r"(d[6][0]), "=r"(d[6][1]), "=r"(d[7][0]), "=r"(d[7][1]), "=r"(d[8][0]), "=r"(d[8][1]), "=r"(d[9][0]), "=r"(d[9][1]), "=r"(d[10][0]), "=r"(d[10][1]), "=r"(d[11][0]), "=r"(d[11][1]), "=r"(d[12][0]), "=r"(d[12][1]), "=r"(d[13][0]), "=r"(d[13][1]), "=r"(d[14][0]), "=r"(d[14][1]), "=r"(d[15][0]), "=r"(d[15][1]), "=r"(d[16][0]), "=r"(d[16][1]), "=r"(d[17][0]), "=r"(d[17][1]), "=r"(d[18][0]), "=r"(d[18][1]), "=r"(d[19][0]), "=r"(d[19][1]), "=r"(d[20][0]), "=r"(d[20][1]), "=r"(d[21][0]), "=r"(d[21][1]), "=r"(d[22][0]), "=r"(d[22][1]), "=r"(d[23][0]), "=r"(d[23][1])
               : "l"(a_desc), "l"(b_desc), "n"(0));
#else
  (void)d, (void)a_desc, (void)b_desc;
#endif
}

} // namespace fa4jit::device::attention_sm90
