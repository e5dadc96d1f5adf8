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

// v rounded to FP16 (to nearest, ties to even; overflow to +-inf, NaN stays NaN), as a double:
// the host's twin of the kernels' FP16 conversions and of each FP16 operation's single rounding.
// Exact for any double input (it rounds the double once, never through float).
#if !defined(__CUDA_ARCH__)
inline double roundToHalf(double v) {
  if (!std::isfinite(v))
    return v;
  const double a = std::fabs(v);
  if (a >= 65520.0) // half-way above FP16's largest finite value 65504, and beyond: infinity
    return std::copysign(static_cast<double>(INFINITY), v);
  int e;
  std::frexp(a, &e);                              // a = f * 2^e, f in [0.5, 1)
  const int q = (e - 1 < -14 ? -14 : e - 1) - 10; // the FP16 quantum at a (subnormal: 2^-24)
  const double w = std::ldexp(a, -q);             // exact, < 2^11
  double r = std::floor(w);
  const double frac = w - r;
  if (frac > 0.5 || (frac == 0.5 && std::fmod(r, 2.0) != 0.0))
    r += 1.0;
  return std::copysign(std::ldexp(r, q), v);
}
#endif

// nvfp8's exp2 of x_h on the FMA and integer pipes instead of the MUFU (TileSpec::exp2_poly_tiles,
// NUMERICS.md §2.3), in FP16 steps, each rounded once:
//   xc = max(x_h, -14)               (E4M3 flushes 2^x below 2^-10 to 0 anyway; NaN stays NaN)
//   s  = FP16(xc + 1551)             (1551 + round(xc): FP16's quantum is 1 on [1024, 2048))
//   j  = s - 1551, f = xc - j        (both exact, |f| <= 1/2)
//   q  = ((c3 f + c2) f + c1) f + c0 (Horner, three HFMA2)
//   P  = FP16(q * 2^j)               (2^j from s's bits: its low five are j + 15)
// The FP16 coefficients minimize the largest relative error of the whole evaluation over every FP16
// f in [-1/2, 1/2]: 5.6e-4, against 4.8e-4 for 2^f correctly rounded to FP16 and ~1e-3
// (2^-9.9) for the MUFU's ex2.approx.f16. The kernel's x <= off + slack <= 8 (the validator's
// bound) keeps j + 15 <= 24, below FP16's infinity.
// (c_k's FP16 bits, c0..c3: a function, since device code cannot index a host constexpr array)
FA4JIT_HD constexpr uint32_t exp2PolyCoefficientBits(int k) {
  return k == 0 ? 0x3C00u : k == 1 ? 0x398Cu : k == 2 ? 0x33C1u : 0x2B0Au;
}
constexpr uint32_t kExp2PolyMagicBits = 0x660Fu;                                        // 1551
constexpr uint32_t kExp2PolyFloorBits = 0xCB00u;                                        // -14
// Keys whose exp2 the polynomial takes: the first exp2_poly_tiles n8 tiles of each tile's 8-key
// tiles (key mod block_n < 8 exp2_poly_tiles), where the rest take the MUFU.
FA4JIT_HD constexpr bool exp2PolyKey(int key_in_tile, int poly_tiles) { return key_in_tile < 8 * poly_tiles; }

#if !defined(__CUDA_ARCH__)
// The host's twin, exactly (every step an FP16 operation with one rounding, roundToHalf).
inline double halfFromBits(uint32_t b) {
  const int e = static_cast<int>((b >> 10) & 31u), m = static_cast<int>(b & 1023u);
  const double v = e == 0 ? std::ldexp(m, -24) : std::ldexp(1024 + m, e - 25);
  return (b & 0x8000u) ? -v : v;
}
inline double exp2PolyHalf(double x_h) {
  if (std::isnan(x_h))
    return x_h;
  const double xc = std::fmax(x_h, halfFromBits(kExp2PolyFloorBits));
  const double magic = halfFromBits(kExp2PolyMagicBits);
  const double s = roundToHalf(xc + magic);
  const double j = s - magic, f = xc - j;
  double q = halfFromBits(exp2PolyCoefficientBits(3));
  for (int k = 2; k >= 0; --k)
    q = roundToHalf(q * f + halfFromBits(exp2PolyCoefficientBits(k)));
  return roundToHalf(std::ldexp(q, static_cast<int>(j)));
}
#endif

} // namespace fa4jit::device
