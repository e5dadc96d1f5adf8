#pragma once
// Direct-P classifiers (DESIGN.md §1.2, docs/NUMERICS.md §2.3): map y = x - e_b straight to an
// E2M1 magnitude code without computing exp2. Host-compilable: the CPU models call these same
// functions, so kernel and model agree on every code for equal inputs.
#include "fa4jit/common.cuh"
#include "fa4jit/score_terms.cuh"

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
  return exp2Hw(v);
#else
  return std::exp2(v);
#endif
}

// Block exponent of a 32-key block from the block max of x (NUMERICS.md §2.3).
FA4JIT_HD int directpBlockExponent(float block_max_x) {
  return static_cast<int>(directpFloor(block_max_x)) - 2;
}

// c = #{i : y >= theta[i]} for strictly increasing theta (the spec validator's rule), by binary
// search: three compares, each against a threshold chosen by the previous outcomes, instead of
// seven compares and seven adds (the sm_90a kernel spent ~20 instructions per score on those).
// Every outcome is an ordinary comparison of y with one theta, so the count is the same one for
// every y, NaN included (all comparisons false: code 0).
FA4JIT_HD int directpThresholdCode(const DirectPCoefficients &k, float y) {
  const bool ge3 = y >= k.theta[3];                          // c >= 4 ?
  const bool ge_mid = y >= (ge3 ? k.theta[5] : k.theta[1]);  // c >= 6 or c >= 2 ?
  const float last = ge3 ? (ge_mid ? k.theta[6] : k.theta[4]) : (ge_mid ? k.theta[2] : k.theta[0]);
  return (ge3 ? 4 : 0) + (ge_mid ? 2 : 0) + (y >= last ? 1 : 0);
}

// The definition, for the tests: one compare per threshold.
FA4JIT_HD int directpThresholdCodeLinear(const DirectPCoefficients &k, float y) {
  int c = 0;
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

FA4JIT_HD float directpFma(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  return fmaf(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}

// The classifier input of a key in block b, from its accumulator (NUMERICS.md §2.3):
//   y = fma(acc, mul, bias), bias = -(m + e_b)    (m + e_b rounded once per row and block)
// which is t - m - e_b with t = acc * mul, in one FFMA per key.
FA4JIT_HD float directpBias(float m_use, float e_f) { return -(m_use + e_f); }

// The affine classifier as kernels and models evaluate it (NUMERICS.md §2.3): the score
// multiplier, the row max m and the block exponent e_b are folded into one slope per launch and
// one addend per row and block, so that each element costs one FMA with saturation, one FMA that
// rounds down onto a magic number, and a shift-add:
//   s = (alpha / 8) * mul, a = fma(-alpha / 8, m + e_b, beta / 8)
//   z = sat(fma(s, acc, a)),  c = min(floor(8 z), 7)              (per element; sat(NaN) = 0)
// which is clamp(floor(alpha * y + beta), 0, 7) with y = acc * mul - m - e_b up to the roundings
// of s and a.
FA4JIT_HD float directpAffineSlope(const DirectPCoefficients &k, float mul) { return (k.alpha * 0.125f) * mul; }
FA4JIT_HD float directpAffineAddend(const DirectPCoefficients &k, float m_use, float e_f) {
  return directpFma(-(k.alpha * 0.125f), m_use + e_f, k.beta * 0.125f);
}
FA4JIT_HD float directpAffineSaturated(float slope, float acc, float addend) {
  const float z = directpFma(slope, acc, addend);
  return z > 0.0f ? (z < 1.0f ? z : 1.0f) : 0.0f; // == __saturatef, NaN -> 0
}
FA4JIT_HD int directpAffineFusedCode(float slope, float acc, float addend) {
  const int c = static_cast<int>(directpFloor(8.0f * directpAffineSaturated(slope, acc, addend)));
  return c < 7 ? c : 7;
}

// The code of a key with accumulator acc (-inf for a masked key, code 0 then) in a block with
// exponent e_b, in a row whose max in use is m_use, with the score multiplier mul (> 0,
// scoreMultiplier): the one entry point of kernels and models.
FA4JIT_HD int directpClassify(const DirectPCoefficients &k, float acc, float mul, float m_use, float e_f) {
  if (k.kind == 1)
    return directpAffineFusedCode(directpAffineSlope(k, mul), acc, directpAffineAddend(k, m_use, e_f));
  return directpCode(k, scoreExponent(acc, mul, directpBias(m_use, e_f)));
}

} // namespace fa4jit::device
