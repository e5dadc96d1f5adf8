#pragma once
// Independent references for the format tests: formats are defined here from their value tables
// (every representable magnitude listed, computed with ldexp in double) and rounding is a search
// for the nearest table entry, ties to the even code. Nothing is shared with formats.cuh.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace fa4jit::test {

// Magnitudes of the 8 E2M1 codes, from sign/exponent/mantissa fields (bias 1).
inline std::vector<double> e2m1Magnitudes() {
  std::vector<double> v;
  for (int code = 0; code < 8; ++code) {
    const int e = code >> 1, m = code & 1;
    v.push_back(e == 0 ? std::ldexp(m / 2.0, 0) : std::ldexp(1.0 + m / 2.0, e - 1));
  }
  return v;
}

// Magnitudes of the finite E4M3FN codes 0x00..0x7E (bias 7, subnormals, 0x7F is NaN).
inline std::vector<double> e4m3Magnitudes() {
  std::vector<double> v;
  for (int code = 0; code < 0x7F; ++code) {
    const int e = code >> 3, m = code & 7;
    v.push_back(e == 0 ? std::ldexp(m / 8.0, -6) : std::ldexp(1.0 + m / 8.0, e - 7));
  }
  return v;
}

// Index of the entry of `mags` (ascending) nearest to a >= 0, ties to the even index, saturating at
// the last entry (satfinite).
inline int nearestEvenIndex(double a, const std::vector<double> &mags) {
  const int n = static_cast<int>(mags.size());
  const int hi = static_cast<int>(std::lower_bound(mags.begin(), mags.end(), a) - mags.begin());
  if (hi == 0)
    return 0;
  if (hi == n)
    return n - 1;
  const int lo = hi - 1;
  const double dlo = a - mags[lo], dhi = mags[hi] - a;
  if (dlo != dhi)
    return dlo < dhi ? lo : hi;
  return lo % 2 == 0 ? lo : hi;
}

inline uint32_t bitsOf(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}

inline float floatOf(uint32_t u) {
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

// Reference encoders with the PTX conventions documented in formats.h.
inline uint8_t refE2M1(float x) {
  static const std::vector<double> mags = e2m1Magnitudes();
  if (std::isnan(x))
    return 0x7;
  const uint8_t sign = std::signbit(x) ? 0x8 : 0x0;
  return static_cast<uint8_t>(sign | nearestEvenIndex(std::fabs(static_cast<double>(x)), mags));
}

inline uint8_t refE4M3(float x) {
  static const std::vector<double> mags = e4m3Magnitudes();
  if (std::isnan(x))
    return 0x7F;
  const uint8_t sign = std::signbit(x) ? 0x80 : 0x00;
  return static_cast<uint8_t>(sign | nearestEvenIndex(std::fabs(static_cast<double>(x)), mags));
}

// BF16 by the definition: the two BF16 neighbours of x (the truncated pattern and the next one
// up in magnitude), the nearer one, ties to the even pattern. The pattern after the largest finite
// one is Inf, which counts as 2^128 here, so rounding past FLT_MAX's half ulp gives Inf.
inline uint16_t refBF16(float x) {
  if (std::isnan(x))
    return 0x7FFF;
  const uint16_t lo = static_cast<uint16_t>(bitsOf(x) >> 16);
  if (std::isinf(x))
    return lo;
  const uint16_t hi = static_cast<uint16_t>(lo + 1);
  const double a = std::fabs(static_cast<double>(x));
  const double vlo = std::fabs(static_cast<double>(floatOf(static_cast<uint32_t>(lo) << 16)));
  const float fhi = floatOf(static_cast<uint32_t>(hi) << 16);
  const double vhi = std::isinf(fhi) ? std::ldexp(1.0, 128) : std::fabs(static_cast<double>(fhi));
  const double dlo = a - vlo, dhi = vhi - a;
  if (dlo != dhi)
    return dlo < dhi ? lo : hi;
  return lo % 2 == 0 ? lo : hi;
}

// A deterministic, structured sweep of FP32 bit patterns that covers every rounding class of a
// format keeping at most 10 mantissa bits: every sign and exponent, the top 11 mantissa bits
// exhaustively, and low bits {0, 1, half-minus-one, all ones, a pseudo-random value}.
template <class F> void forEachStructuredFloat(F &&f) {
  const uint32_t lows[] = {0u, 1u, 0x1FFu, 0xFFFu, 0x5A5u};
  for (uint32_t sign = 0; sign < 2; ++sign)
    for (uint32_t e = 0; e < 256; ++e)
      for (uint32_t top = 0; top < (1u << 11); ++top)
        for (uint32_t low : lows)
          f(floatOf((sign << 31) | (e << 23) | (top << 12) | low));
}

} // namespace fa4jit::test
