#pragma once
// Shared device definitions for every fa4jit kernel. Compiled by NVRTC (embedded) and by nvcc.
#ifndef __CUDACC_RTC__
#include <cstdint>
#endif

namespace fa4jit::device {
#ifdef __CUDACC_RTC__
using uint8_t = unsigned char;
using uint16_t = unsigned short;
using uint32_t = unsigned int;
using int32_t = int;
using uint64_t = unsigned long long;
using int64_t = long long;
#else
using std::int32_t;
using std::int64_t;
using std::uint16_t;
using std::uint32_t;
using std::uint64_t;
using std::uint8_t;
#endif
} // namespace fa4jit::device

// Functions marked FA4JIT_HD compile for the device and, when a host test or a CPU model
// includes the header with a plain C++ compiler, for the host: one implementation, two users.
// FA4JIT_UNROLL unrolls the loop after it on the device, where indexing a small array by the loop
// counter would otherwise put the array in local memory; host compilers do without.
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define FA4JIT_HD __host__ __device__ __forceinline__
#define FA4JIT_DEVICE __device__ __forceinline__
#define FA4JIT_UNROLL _Pragma("unroll")
#else
#define FA4JIT_HD inline
#define FA4JIT_UNROLL
#endif

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
namespace fa4jit::device {
// exp2 on the special-function unit (MUFU.EX2, the instruction inside exp2f), results below 2^-126
// flushed to zero. exp2f wraps the same instruction in range scaling (a compare and two FMULs per
// call) only to return FP32 subnormals, which no fed P keeps: E4M3's least value is 2^-9, and a
// BF16 or FP32 subnormal p moves l by less than 2^-126 (NUMERICS.md §2.3). The softmax runs one
// per score, so those three instructions are a sixth of its per-score work.
// sm_80 and sm_89 (the mma.sync kernels only) keep exp2f: there the opaque asm made NVRTC's sm_80
// bf16 D = 128 causal kernel spill 8 bytes, and those targets are not the fast path.
__device__ __forceinline__ float exp2Hw(float x) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
#else
  return exp2f(x);
#endif
}
} // namespace fa4jit::device
#endif
