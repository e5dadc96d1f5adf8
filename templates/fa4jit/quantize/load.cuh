#pragma once
// Device helpers shared by the quantizer passes: reading x (bf16, fp16 or fp32, strided) into FP32
// registers, CTA-wide reductions, and the exact floor(log2) of a block max.
#include "fa4jit/common.cuh"
#include "fa4jit/formats.cuh"
#include "fa4jit/quantize/config.cuh"
#include "fa4jit/quantize/params.cuh"

namespace fa4jit::device::quantize {

FA4JIT_HD bool isFiniteFloat(float v) { return (floatAsBits(v) & 0x7FFFFFFFu) < 0x7F800000u; }

// floor(log2(a)) for finite a > 0, exact for FP32 subnormals too (== std::ilogb, which the host
// reference uses).
FA4JIT_HD int floorLog2(float a) {
  const uint32_t u = floatAsBits(a) & 0x7FFFFFFFu;
  if (u >= 0x00800000u)
    return static_cast<int>(u >> 23) - 127;
#if defined(__CUDA_ARCH__)
  return (31 - __clz(static_cast<int>(u))) - 149;
#else
  return (31 - __builtin_clz(u)) - 149;
#endif
}

// MXFP4 block exponent of NUMERICS.md §1: floor(log2(amax)) - 2 clamped to [-127, 127], and -127
// for an all-zero block.
FA4JIT_HD int mxBlockExponent(float amax) {
  if (amax == 0.0f)
    return -127;
  const int e = floorLog2(amax) - 2;
  return e < -127 ? -127 : (e > 127 ? 127 : e);
}

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)

// One 16-bit element of x (BF16 or FP16 bits) as FP32, exactly.
template <class T> FA4JIT_DEVICE float elementToFloat(uint16_t bits) {
  if constexpr (T::kInputFp16) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(bits));
    return f;
  } else {
    return bf16ToFloat(bits);
  }
}

// The two 16-bit elements of a 32-bit word of x (the lower address first) as FP32.
template <class T> FA4JIT_DEVICE void wordToFloats(uint32_t w, float &lo, float &hi) {
  if constexpr (T::kInputFp16) {
    lo = elementToFloat<T>(static_cast<uint16_t>(w & 0xFFFFu));
    hi = elementToFloat<T>(static_cast<uint16_t>(w >> 16));
  } else {
    lo = bitsAsFloat(w << 16);
    hi = bitsAsFloat(w & 0xFFFF0000u);
  }
}

// How the 16-byte vector reads of x go: plain loads, or loads under an L2 eviction policy (the
// pipelined pass keeps what it reads first in L2 until its second read, then lets it go first).
struct PlainReads {
  FA4JIT_DEVICE uint4 operator()(const uint4 *src) const { return *src; }
};
struct L2PolicyReads {
  uint64_t policy; // from createpolicy
  FA4JIT_DEVICE uint4 operator()(const uint4 *src) const {
    uint4 v;
    asm volatile("ld.global.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(src), "l"(policy));
    return v;
  }
};
FA4JIT_DEVICE L2PolicyReads l2EvictLastReads() {
  L2PolicyReads r;
  asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(r.policy));
  return r;
}
FA4JIT_DEVICE L2PolicyReads l2EvictFirstReads() {
  L2PolicyReads r;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(r.policy));
  return r;
}

// Element offset of row 0, column 0 of head bh (= batch * heads + head) in x.
FA4JIT_DEVICE int64_t headOffset(const QuantizeParams &p, int bh) {
  return static_cast<int64_t>(bh / p.heads) * p.x_batch_stride + static_cast<int64_t>(bh % p.heads) * p.x_head_stride;
}

// Whether x allows 16-byte vector loads (params.cuh). Otherwise the scalar path runs: slower, same
// values.
template <class T> FA4JIT_DEVICE bool vectorLoadsOk(const QuantizeParams &p) {
  return quantizeVectorLoadsOk(p, T::kElemBytes);
}

// kN consecutive elements of x from element offset `off` (kN a multiple of the vector width).
template <class T, int kN> FA4JIT_DEVICE void loadRun(const QuantizeParams &p, int64_t off, bool vec_ok, float (&v)[kN]) {
  static_assert(kN % T::kVec == 0, "loads come in whole vectors");
  if constexpr (T::kInputFp32) {
    const float *src = reinterpret_cast<const float *>(p.x) + off;
    if (vec_ok) {
#pragma unroll
      for (int i = 0; i < kN / 4; ++i) {
        const float4 f = reinterpret_cast<const float4 *>(src)[i];
        v[4 * i] = f.x, v[4 * i + 1] = f.y, v[4 * i + 2] = f.z, v[4 * i + 3] = f.w;
      }
    } else {
#pragma unroll
      for (int i = 0; i < kN; ++i)
        v[i] = src[i];
    }
  } else {
    const uint16_t *src = reinterpret_cast<const uint16_t *>(p.x) + off;
    if (vec_ok) {
#pragma unroll
      for (int i = 0; i < kN / 8; ++i) {
        const uint4 u = reinterpret_cast<const uint4 *>(src)[i];
        const uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
        for (int j = 0; j < 4; ++j)
          wordToFloats<T>(w[j], v[8 * i + 2 * j], v[8 * i + 2 * j + 1]);
      }
    } else {
#pragma unroll
      for (int i = 0; i < kN; ++i)
        v[i] = elementToFloat<T>(src[i]);
    }
  }
}

// Max over the CTA, returned to every thread. The leading barrier lets a CTA call it twice.
template <int kThreads> FA4JIT_DEVICE float blockMax(float v) {
  __shared__ float warp_max[kThreads / 32];
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
    v = fmaxf(v, __shfl_xor_sync(0xFFFFFFFFu, v, o));
  __syncthreads();
  if (threadIdx.x % 32 == 0)
    warp_max[threadIdx.x / 32] = v;
  __syncthreads();
  float m = warp_max[0];
#pragma unroll
  for (int w = 1; w < kThreads / 32; ++w)
    m = fmaxf(m, warp_max[w]);
  return m;
}

#endif // CUDA compilers

} // namespace fa4jit::device::quantize
