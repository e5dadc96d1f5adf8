#pragma once
// Direct-P classifiers (DESIGN.md §1.2, docs/NUMERICS.md §2.3): map y = x - e_b straight to an
// E2M1 magnitude code without computing exp2. Host-compilable: the CPU models call these same
// functions, so kernel and model agree on every code for equal inputs.
#include "fa4jit/common.cuh"

#if !defined(__CUDACC_RTC__)
#include <cmath>
#endif

namespace fa4jit::device {

// The classifier's constants, baked into a kernel by the code generator.
struct DirectPCoefficients {
  int kind;           // 0 threshold, 1 affine, 2 mixed (== fa4jit::ClassifierKind)
  float alpha, beta;  // affine: c = clamp(floor(alpha*y + beta), 0, 7)
  float theta[7];     // threshold: c = #{k : y >= theta[k]}
  float y_split;      // mixed: y >= y_split uses exp2 + round-to-nearest
};

FA4JIT_HD float directpFloor(float v) {
#if defined(__CUDA_ARCH__)
  return floorf(v);
#else
  return std::floor(v);
#endif
}

FA4JIT_HD float directpExp2(float v) {
#if defined(__CUDA_ARCH__)
  return exp2f(v);
#else
  return std::exp2(v);
#endif
}

// Block exponent of a 32-key block from the block max of x (NUMERICS.md §2.3).
FA4JIT_HD int directpBlockExponent(float block_max_x) {
  return static_cast<int>(directpFloor(block_max_x)) - 2;
}

FA4JIT_HD int directpThresholdCode(const DirectPCoefficients &k, float y) {
  int c = 0;
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#pragma unroll
#endif
  for (int i = 0; i < 7; ++i)
    c += (y >= k.theta[i]) ? 1 : 0;
  return c;
}

FA4JIT_HD int directpAffineCode(const DirectPCoefficients &k, float y) {
#if defined(__CUDA_ARCH__)
  float z = floorf(fmaf(k.alpha, y, k.beta));
#else
  float z = std::floor(std::fma(k.alpha, y, k.beta));
#endif
  z = z < 0.0f ? 0.0f : (z > 7.0f ? 7.0f : z);
  return static_cast<int>(z);
}

// Round-to-nearest E2M1 magnitude code of p >= 0, ties to the even code, saturating at 6.
FA4JIT_HD int e2m1NearestCode(float p) {
  // Boundaries between consecutive magnitudes {0,.5,1,1.5,2,3,4,6}; at a tie the even code wins.
  const float mid[7] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f};
  int c = 0;
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#pragma unroll
#endif
  for (int i = 0; i < 7; ++i) {
    // Above the midpoint: next code. Exactly at it: the even one of (i, i+1).
    const bool up = p > mid[i] || (p == mid[i] && ((i + 1) % 2 == 0));
    c += up ? 1 : 0;
  }
  return c;
}

FA4JIT_HD int directpCode(const DirectPCoefficients &k, float y) {
  if (k.kind == 0)
    return directpThresholdCode(k, y);
  if (k.kind == 2 && y >= k.y_split)
    return e2m1NearestCode(directpExp2(y));
  return directpAffineCode(k, y);
}

} // namespace fa4jit::device
