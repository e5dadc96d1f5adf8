#pragma once
// The merge-states kernel (params.cuh has the rule). The code generator emits a struct with exactly
// these static constexpr members and instantiates mergeStates with it; the enum carries the
// numeric values of fa4jit::StateType in codegen/spec.h.
//
//   struct MyConfig {
//     static constexpr StateType value; // Bf16, F16 or F32: O in and out
//     static constexpr int head_dim;    // 64, 128, 256
//     static constexpr int threads;     // CTA size
//   };
//
// head_dim / 8 threads per row, 8 values each (one 16-byte load per part for 16-bit O): the kernel
// moves each part's O once and is bound by memory.
#include "fa4jit/common.cuh"
#include "fa4jit/merge/params.cuh"

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
namespace fa4jit::device::merge {

enum class StateType : int { Bf16 = 0, F16 = 1, F32 = 2 };

template <class C> struct MergeTraits {
  static constexpr StateType kValue = C::value;
  static constexpr int kHeadDim = C::head_dim;
  static constexpr int kThreads = C::threads;
  static_assert(kHeadDim == 64 || kHeadDim == 128 || kHeadDim == 256, "head_dim must be 64, 128 or 256");
  static_assert(kThreads >= 64 && kThreads <= 512 && (kThreads & (kThreads - 1)) == 0,
                "threads must be a power of two in [64, 512]");
  static constexpr int kLanesPerRow = kHeadDim / 8;
  static constexpr int kRowsPerCta = mergeRowsPerCta(kThreads, kHeadDim);
  static constexpr int kElementBytes = kValue == StateType::F32 ? 4 : 2;
};

// Two 16-bit values of one word (low half first) as floats, and back (round to nearest even).
template <StateType kType> FA4JIT_DEVICE float2 unpackPair(uint32_t w) {
  if constexpr (kType == StateType::Bf16)
    return make_float2(bitsAsFloat(w << 16), bitsAsFloat(w & 0xFFFF0000u));
  float lo, hi;
  asm("{\n .reg .b16 l, h;\n mov.b32 {l, h}, %2;\n cvt.f32.f16 %0, l;\n cvt.f32.f16 %1, h;\n}"
      : "=f"(lo), "=f"(hi)
      : "r"(w));
  return make_float2(lo, hi);
}
template <StateType kType> FA4JIT_DEVICE uint32_t packPair(float lo, float hi) {
  uint32_t w;
  if constexpr (kType == StateType::Bf16)
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(w) : "f"(hi), "f"(lo));
  else
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(w) : "f"(hi), "f"(lo));
  return w;
}

template <class C> FA4JIT_DEVICE void loadEight(uint64_t address, float (&v)[8]) {
  if constexpr (C::value == StateType::F32) {
    const float4 a = *reinterpret_cast<const float4 *>(address), b = *reinterpret_cast<const float4 *>(address + 16);
    v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
  } else {
    const uint4 w = *reinterpret_cast<const uint4 *>(address);
    const uint32_t words[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float2 f = unpackPair<C::value>(words[i]);
      v[2 * i] = f.x, v[2 * i + 1] = f.y;
    }
  }
}

template <class C> FA4JIT_DEVICE void storeEight(uint64_t address, const float (&v)[8]) {
  if constexpr (C::value == StateType::F32) {
    *reinterpret_cast<float4 *>(address) = make_float4(v[0], v[1], v[2], v[3]);
    *reinterpret_cast<float4 *>(address + 16) = make_float4(v[4], v[5], v[6], v[7]);
  } else {
    *reinterpret_cast<uint4 *>(address) =
        make_uint4(packPair<C::value>(v[0], v[1]), packPair<C::value>(v[2], v[3]), packPair<C::value>(v[4], v[5]),
                   packPair<C::value>(v[6], v[7]));
  }
}

// Rows [blockIdx.x * kRowsPerCta, + kRowsPerCta): one row per kLanesPerRow threads of one warp.
template <class C> FA4JIT_DEVICE void mergeStates(const MergeParams &p) {
  using T = MergeTraits<C>;
  const int lane = threadIdx.x % T::kLanesPerRow;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * T::kRowsPerCta + threadIdx.x / T::kLanesPerRow;
  const bool active = row < static_cast<int64_t>(p.batch) * p.heads * p.seqlen;
  const int64_t s = active ? row % p.seqlen : 0, head_row = active ? row / p.seqlen : 0;
  const int64_t h = head_row % p.heads, b = head_row / p.heads;
  float lse[kMaxMergeParts], scale[kMaxMergeParts];
#pragma unroll
  for (int i = 0; i < kMaxMergeParts; ++i)
    lse[i] = active && i < p.num_parts ? reinterpret_cast<const float *>(p.parts[i].lse)[row] : 0.0f;
  const float merged_lse = mergeRowScales(lse, active ? p.num_parts : 0, scale);
  float acc[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
  for (int i = 0; i < kMaxMergeParts; ++i)
    if (scale[i] != 0.0f) { // (0 past num_parts and for empty parts; a NaN reads on to make the row NaN)
      const MergePart &part = p.parts[i];
      float v[8];
      loadEight<C>(part.o + (b * part.batch_stride + h * part.head_stride + s * part.row_stride + lane * 8) *
                                T::kElementBytes,
                   v);
#pragma unroll
      for (int e = 0; e < 8; ++e)
        acc[e] = fmaf(scale[i], v[e], acc[e]);
    }
  // Every lane of the row has read the parts' LSEs before one of them writes the merged one (the
  // output may be a part's, in place).
  __syncwarp();
  if (!active)
    return;
  storeEight<C>(p.o + (b * p.o_batch_stride + h * p.o_head_stride + s * p.o_row_stride + lane * 8) * T::kElementBytes,
                acc);
  if (p.lse != 0 && lane == 0)
    reinterpret_cast<float *>(p.lse)[row] = merged_lse;
}

} // namespace fa4jit::device::merge
#endif
