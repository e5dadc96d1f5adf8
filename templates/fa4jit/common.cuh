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
