// The piecewise Direct-P classifier (templates/fa4jit/directp.cuh, NUMERICS.md §2.3): its host
// evaluation against an independent FP16 emulation (the compiler's _Float16), where its default
// pieces put the code boundaries, and the integer identities the sm_90a kernel's packed form relies
// on (attention/p_directp.cuh piecewiseSelectors).
#include "fa4jit/codegen/classifier_fit.h"
#include "fa4jit/codegen/spec.h"
#include "fa4jit/directp.cuh"
#include "fa4jit/formats.cuh"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace {

using fa4jit::device::DirectPCoefficients;

DirectPCoefficients piecewise(const std::array<float, 4> &pieces) {
  fa4jit::ClassifierSpec c;
  c.kind = fa4jit::ClassifierKind::Piecewise;
  c.pieces = pieces;
  return fa4jit::fit::directpCoefficients(c);
}

DirectPCoefficients defaults() { return piecewise(fa4jit::ClassifierSpec{}.pieces); }

// The definition, evaluated with the compiler's FP16 type: every operation's exact value in double
// (FP16 products and sums are exact there), converted to _Float16 once (round to nearest even).
int referenceCode(const DirectPCoefficients &k, float y) {
  const double yh = static_cast<double>(static_cast<_Float16>(y));
  auto fma16 = [](double a, double b, double c) { return static_cast<double>(static_cast<_Float16>(a * b + c)); };
  auto sat = [](double v) { return std::isnan(v) ? 0.0 : std::fmin(std::fmax(v, 0.0), 1.0); };
  const double lo = sat(fma16(k.piece[0], yh, k.piece[1]));
  const double hi = sat(fma16(k.piece[2], yh, k.piece[3]));
  return static_cast<int>(fma16(std::fmax(lo, hi), 7.0, 1024.0) - 1024.0);
}

float halfFromBits(uint16_t bits) {
  _Float16 h;
  std::memcpy(&h, &bits, 2);
  return static_cast<float>(h);
}

// Random valid pieces: FP16 values, slopes > 0.
std::array<float, 4> randomPieces(std::mt19937 &rng) {
  std::uniform_real_distribution<float> slope(0.02f, 1.0f), offset(-0.5f, 1.5f);
  auto h = [](float v) { return static_cast<float>(static_cast<_Float16>(v)); };
  return {h(slope(rng)), h(offset(rng)), h(slope(rng)), h(offset(rng))};
}

} // namespace

TEST_CASE("piecewise code equals its FP16 definition on every FP16 input and around them", "[codegen][directp]") {
  std::mt19937 rng(20261201);
  std::vector<DirectPCoefficients> sets{defaults()};
  for (int i = 0; i < 40; ++i)
    sets.push_back(piecewise(randomPieces(rng)));
  std::uniform_int_distribution<uint32_t> any;
  int checked = 0;
  for (const DirectPCoefficients &k : sets) {
    std::vector<float> ys;
    for (uint32_t b = 0; b < 0x10000u; b += (&k == &sets.front() ? 1u : 7u)) { // every FP16 (every 7th)
      const float v = halfFromBits(static_cast<uint16_t>(b));
      ys.push_back(v);
      ys.push_back(std::nextafter(v, 0.0f)); // FP32 inputs between FP16 values round like the cvt
    }
    for (int n = 0; n < 2000; ++n) {
      const uint32_t u = any(rng);
      float f;
      std::memcpy(&f, &u, 4);
      ys.push_back(f);
    }
    for (float y : ys) {
      INFO("y " << y << " pieces " << k.piece[0] << " " << k.piece[1] << " " << k.piece[2] << " " << k.piece[3]);
      const int want = std::isnan(y) ? 0 : referenceCode(k, y);
      const int got = fa4jit::device::directpPiecewiseCode(k, y);
      REQUIRE(got == want);
      REQUIRE(got >= 0);
      REQUIRE(got <= 7);
      REQUIRE(fa4jit::device::directpCode(k, y) == got);
      ++checked;
    }
  }
  CHECK(checked > 400000);
}

TEST_CASE("piecewise code: masked keys, NaN and infinities", "[codegen][directp]") {
  const DirectPCoefficients k = defaults();
  const float inf = std::numeric_limits<float>::infinity();
  CHECK(fa4jit::device::directpPiecewiseCode(k, -inf) == 0); // a masked key
  CHECK(fa4jit::device::directpPiecewiseCode(k, std::nanf("")) == 0);
  CHECK(fa4jit::device::directpPiecewiseCode(k, inf) == 7);
  CHECK(fa4jit::device::directpPiecewiseCode(k, 1e30f) == 7);
  CHECK(fa4jit::device::directpPiecewiseCode(k, -1e30f) == 0);
}

TEST_CASE("piecewise code is non-decreasing in y", "[codegen][directp]") {
  std::mt19937 rng(11);
  std::vector<DirectPCoefficients> sets{defaults()};
  for (int i = 0; i < 40; ++i)
    sets.push_back(piecewise(randomPieces(rng)));
  for (const DirectPCoefficients &k : sets) {
    int last = 0;
    for (int i = -8 * 4096; i <= 4 * 4096; ++i) {
      const int c = fa4jit::device::directpPiecewiseCode(k, std::ldexp(static_cast<float>(i), -12));
      REQUIRE(c >= last);
      last = c;
    }
  }
}

// Where the default pieces switch codes, against log2 of E2M1's round-to-nearest midpoints (the
// exact classifier): within 0.01 in y, 0.7% of P, and every code 0..7 is reached in [-4, 3).
TEST_CASE("default pieces: every code boundary within 0.01 of exp2 + round to nearest", "[codegen][directp]") {
  const DirectPCoefficients k = defaults();
  const double mid[7] = {0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0};
  int last = fa4jit::device::directpPiecewiseCode(k, -4.0f);
  CHECK(last == 0);
  std::vector<std::pair<int, float>> steps; // (new code, first y with it)
  for (int i = -4 * 8192; i < 3 * 8192; ++i) {
    const float y = std::ldexp(static_cast<float>(i), -13);
    const int c = fa4jit::device::directpPiecewiseCode(k, y);
    if (c != last)
      steps.emplace_back(c, y);
    last = c;
  }
  REQUIRE(steps.size() == 7);
  for (int i = 0; i < 7; ++i) {
    INFO("boundary " << i << " at y = " << steps[i].second);
    CHECK(steps[i].first == i + 1); // one code at a time
    CHECK(std::fabs(steps[i].second - std::log2(mid[i])) <= 0.01);
  }
  // The defaults are the documented derivation, rounded to FP16.
  const std::array<float, 4> p = fa4jit::ClassifierSpec{}.pieces;
  CHECK(p[0] == static_cast<float>(static_cast<_Float16>(1.0 / (7.0 * 1.5859375))));
  CHECK(p[1] == static_cast<float>(static_cast<_Float16>(0.5 / 7.0 + 2.0 / (7.0 * 1.5859375))));
  CHECK(p[2] == static_cast<float>(static_cast<_Float16>(2.0 / 7.0)));
}

// The packed kernel form: each lane's 7 z + 1024 has the code in bits 0..2 of its half (FP16 1024
// has zero low bits and unit ulp), one PRMT (0x6240) gathers four pairs' low bytes as c00, c10, c01,
// c11 and t + (t >> 12) moves them into the PRMT selector nibbles c00, c01, c10, c11 with no carry,
// for every combination of four codes; the selector then picks the table bytes of those codes.
TEST_CASE("piecewise selectors: magic-number codes to PRMT nibbles", "[codegen][directp]") {
  using fa4jit::device::bytePerm;
  for (int c = 0; c <= 7; ++c) {
    const _Float16 v = static_cast<_Float16>(7.0 * (c / 7.0) + 1024.0);
    uint16_t bits;
    std::memcpy(&bits, &v, 2);
    CHECK(bits == (0x6400u | static_cast<unsigned>(c)));
  }
  const fa4jit::device::E2M1ToE4M3Table fed = fa4jit::device::e2m1ToE4M3TablePow2Normal(3);
  for (uint32_t combo = 0; combo < 4096; ++combo) {
    const uint32_t c00 = combo & 7, c01 = (combo >> 3) & 7, c10 = (combo >> 6) & 7, c11 = (combo >> 9) & 7;
    const uint32_t v0 = (0x6400u | c00) | ((0x6400u | c01) << 16); // pair 0: lanes 0, 1
    const uint32_t v1 = (0x6400u | c10) | ((0x6400u | c11) << 16); // pair 1
    const uint32_t t = bytePerm(v0, v1, 0x6240u);
    const uint32_t sel = t + (t >> 12);
    INFO("codes " << c00 << c01 << c10 << c11);
    REQUIRE((sel & 0xFFFFu) == (c00 | c01 << 4 | c10 << 8 | c11 << 12));
    const uint32_t bytes = bytePerm(fed.lo, fed.hi, sel);
    const uint32_t want = fa4jit::device::e2m1ToE4M3Byte(fed, static_cast<uint8_t>(c00)) |
                          fa4jit::device::e2m1ToE4M3Byte(fed, static_cast<uint8_t>(c01)) << 8 |
                          fa4jit::device::e2m1ToE4M3Byte(fed, static_cast<uint8_t>(c10)) << 16 |
                          static_cast<uint32_t>(fa4jit::device::e2m1ToE4M3Byte(fed, static_cast<uint8_t>(c11))) << 24;
    REQUIRE(bytes == want);
  }
}

TEST_CASE("piecewise coefficients bake as exact FP16 bits", "[codegen][directp]") {
  for (float v : fa4jit::ClassifierSpec{}.pieces) {
    const _Float16 h = static_cast<_Float16>(v);
    uint16_t bits;
    std::memcpy(&bits, &h, 2);
    CHECK(static_cast<float>(h) == v);
    CHECK(fa4jit::device::directpHalfBits(v) == bits);
  }
  static_assert(fa4jit::device::directpHalfBits(0.25146484375f) == 0x3406u);
  static_assert(fa4jit::device::directpHalfBits(7.0f) == 0x4700u);
}
