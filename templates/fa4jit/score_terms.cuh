#pragma once
// The log2-domain score terms of NUMERICS.md §2.1-§2.3, shared by every kernel and the CPU models.
// A key's score is t = acc * mul, but no kernel forms t per key: the softmax needs t only through
// its maxima and through x = t - bias, and both come from acc directly:
//   - max_j(acc_j * mul) = max_j(acc_j) * mul, exactly, for mul > 0 (rounding is monotone), so the
//     maxima are taken over acc and scaled once per row;
//   - x_j = fma(acc_j, mul, -bias): the scale and the subtraction in one FFMA with one rounding
//     (FlashAttention-3's form) instead of an FMUL, an FADD and two roundings.
// Host-compilable, like directp.cuh.
#include "fa4jit/common.cuh"

#if !defined(__CUDACC_RTC__)
#include <cmath>
#endif

namespace fa4jit::device {

// The multiplier as the kernels use it: at least 2^-126. Positive, so maxima commute with it and a
// masked key's acc = -inf gives x = -inf (with mul = 0, -inf * 0 would be NaN); NaN becomes 2^-126
// too. A product of scales below 2^-126 makes every score 0 to within 2^-126 * |acc| either way.
FA4JIT_HD float scoreMultiplier(float mul) {
  constexpr float kMinNormal = 1.17549435e-38f; // 2^-126
#if defined(__CUDA_ARCH__)
  return fmaxf(mul, kMinNormal);
#else
  return std::fmax(mul, kMinNormal);
#endif
}

// t = acc * mul, rounded, never fused into a following add: only where t itself is defined to be
// compared (directp's block exponent: the row max's own block must see t - m = 0 exactly, at the
// step of floor(), where a fused residual of +-1 ulp would move e_b by one).
FA4JIT_HD float scoreOf(float acc, float mul) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(acc, mul);
#else
  return acc * mul;
#endif
}

// a * b + c with one rounding, on the device (FFMA) and on the host alike.
FA4JIT_HD float fusedMulAdd(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  return fmaf(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}

// x = acc * mul + addend with one rounding (the kernels' FFMA).
FA4JIT_HD float scoreExponent(float acc, float mul, float addend) { return fusedMulAdd(acc, mul, addend); }

// nvfp8 on FP16 scores (TileSpec::scores_fp16, NUMERICS.md §2.2-§2.3): a row's exponents
// x_h = FP16(fma(acc_h, FP16(mul), addend)) in one HFMA2 per pair of keys, with addend = off - m
// itself an FP16 value. So m moves on the grid where off - m is a multiple of 2^-4 (exact in FP16
// below 2^7): each new maximum t is raised to the next grid point, off - floor_16(off - t), at most
// 2^-4 above t (so x <= off + slack still). The O rescale then uses the same m as the exponents.
// Beyond |off - t| >= 2^17 the grid's magic number no longer rounds: t stays as it is (and the row
// takes the FP32 exponents, halfExponentsFit).
constexpr float kHalfExponentAddendLimit = 128.0f; // |addend| below it: a multiple of 2^-4 is FP16-exact
FA4JIT_HD float halfExponentRowMax(float t, float off) {
  const float v = off - t;
#if defined(__CUDA_ARCH__)
  if (!(fabsf(v) < 131072.0f)) // (also t = -inf)
    return t;
  // a round-down add onto 1.5 * 2^19, whose quantum is 2^-4: floor_16(v), exactly
  return off - (__fadd_rd(v, 786432.0f) - 786432.0f);
#else
  if (!(std::fabs(v) < 131072.0f))
    return t;
  return off - std::floor(v * 16.0f) * 0.0625f;
#endif
}
// Whether a row's exponents take the FP16 form: FP16(mul) normal and finite (relative rounding
// <= 2^-12, a temperature change of that much) and the addend off - m FP16-exact.
FA4JIT_HD bool halfExponentsFit(float mul, float addend) {
  constexpr float kHalfMinNormal = 6.10351562e-05f; // 2^-14
#if defined(__CUDA_ARCH__)
  return mul >= kHalfMinNormal && mul <= 65504.0f && fabsf(addend) < kHalfExponentAddendLimit;
#else
  return mul >= kHalfMinNormal && mul <= 65504.0f && std::fabs(addend) < kHalfExponentAddendLimit;
#endif
}

} // namespace fa4jit::device
