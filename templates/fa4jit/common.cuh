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
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define FA4JIT_HD __host__ __device__ __forceinline__
#define FA4JIT_DEVICE __device__ __forceinline__
#else
#define FA4JIT_HD inline
#endif
