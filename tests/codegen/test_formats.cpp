// Scalar formats (codegen/include/fa4jit/codegen/formats.h) against independent references built
// from the formats' value tables (format_reference.h): exhaustive where the domain is small.
#include "fa4jit/codegen/formats.h"
#include "fa4jit/formats.cuh"

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <random>

#include "format_reference.h"

using namespace fa4jit::formats;
using fa4jit::test::bitsOf;
using fa4jit::test::floatOf;

namespace {
const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();
const float kDenormMin = std::numeric_limits<float>::denorm_min();
} // namespace

TEST_CASE("E2M1 decodes the 16 codes and every code round-trips", "[formats]") {
  const float mags[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  for (int c = 0; c < 16; ++c) {
    const float v = e2m1ToFloat(static_cast<uint8_t>(c));
    CHECK(std::fabs(v) == mags[c & 7]);
    CHECK(kE2M1Magnitude[c & 7] == mags[c & 7]);
    CHECK(std::signbit(v) == (c >= 8));
    CHECK(floatToE2M1(v) == c);
  }
  CHECK(e2m1ToFloat(0x7F) == -6.0f); // only the low 4 bits count
  CHECK(e2m1ToFloat(0xF7) == 6.0f);
}

TEST_CASE("E2M1 rounds every tie to the even code", "[formats]") {
  struct Tie {
    float x;
    uint8_t code;
  };
  // Midpoints between consecutive magnitudes and the even code each must pick.
  const Tie ties[] = {{0.25f, 0}, {0.75f, 2}, {1.25f, 2}, {1.75f, 4},
                      {2.5f, 4},  {3.5f, 6},  {5.0f, 6}};
  for (const Tie &t : ties) {
    INFO("x = " << t.x);
    CHECK(floatToE2M1(t.x) == t.code);
    CHECK(floatToE2M1(-t.x) == (t.code | 0x8));
    // Just off the tie, the nearer code wins on either side.
    const uint8_t below = floatToE2M1(std::nextafter(t.x, 0.0f));
    const uint8_t above = floatToE2M1(std::nextafter(t.x, 100.0f));
    CHECK(above == below + 1);
    CHECK((below == t.code || above == t.code));
  }
}

TEST_CASE("E2M1 saturates, and handles NaN, Inf and signed zero as the PTX cvt does", "[formats]") {
  CHECK(floatToE2M1(6.0f) == 0x7);
  CHECK(floatToE2M1(std::nextafter(6.0f, 7.0f)) == 0x7);
  CHECK(floatToE2M1(1e30f) == 0x7);
  CHECK(floatToE2M1(-1e30f) == 0xF);
  CHECK(floatToE2M1(kInf) == 0x7);
  CHECK(floatToE2M1(-kInf) == 0xF);
  CHECK(floatToE2M1(kNaN) == 0x7);
  CHECK(floatToE2M1(-kNaN) == 0x7);
  CHECK(floatToE2M1(0.0f) == 0x0);
  CHECK(floatToE2M1(-0.0f) == 0x8);
  CHECK(floatToE2M1(-0.1f) == 0x8);
  CHECK(floatToE2M1(kDenormMin) == 0x0);
  CHECK(floatToE2M1(std::nextafter(0.25f, 1.0f)) == 0x1);
}

TEST_CASE("E2M1 equals the nearest-value reference on a structured sweep of FP32", "[formats]") {
  long mismatches = 0, visited = 0;
  fa4jit::test::forEachStructuredFloat([&](float x) {
    ++visited;
    if (floatToE2M1(x) != fa4jit::test::refE2M1(x))
      ++mismatches;
  });
  CHECK(visited == 2L * 256 * 2048 * 5);
  CHECK(mismatches == 0);
}

TEST_CASE("E4M3 decodes all 256 patterns and every finite one round-trips", "[formats]") {
  const auto mags = fa4jit::test::e4m3Magnitudes();
  for (int b = 0; b < 256; ++b) {
    INFO("bits = " << b);
    const float v = e4m3ToFloat(static_cast<uint8_t>(b));
    if ((b & 0x7F) == 0x7F) {
      CHECK(std::isnan(v));
      CHECK(floatToE4M3(v) == 0x7F);
      continue;
    }
    CHECK(static_cast<double>(std::fabs(v)) == mags[b & 0x7F]);
    CHECK(std::signbit(v) == (b >= 0x80));
    CHECK(floatToE4M3(v) == b);
  }
  CHECK(e4m3ToFloat(0x7E) == kE4M3Max);
  CHECK(e4m3ToFloat(0x01) == std::ldexp(1.0f, -9));
  CHECK(e4m3ToFloat(0x08) == std::ldexp(1.0f, -6));
}

TEST_CASE("E4M3 rounds every midpoint between neighbours to the even pattern", "[formats]") {
  const auto mags = fa4jit::test::e4m3Magnitudes();
  for (int b = 0; b + 1 < 0x7F; ++b) {
    // Neighbours differ in at most 5 significant bits, so the midpoint is exact in FP32.
    const float mid = static_cast<float>((mags[b] + mags[b + 1]) / 2);
    REQUIRE(static_cast<double>(mid) == (mags[b] + mags[b + 1]) / 2);
    const int even = (b % 2 == 0) ? b : b + 1;
    INFO("between " << b << " and " << b + 1);
    CHECK(floatToE4M3(mid) == even);
    CHECK(floatToE4M3(-mid) == (even | 0x80));
    CHECK(floatToE4M3(std::nextafter(mid, 0.0f)) == b);
    CHECK(floatToE4M3(std::nextafter(mid, 1000.0f)) == b + 1);
  }
}

TEST_CASE("E4M3 subnormals, saturation, NaN, Inf and signed zero", "[formats]") {
  CHECK(floatToE4M3(std::ldexp(1.0f, -10)) == 0x00);     // tie with 0: even
  CHECK(floatToE4M3(std::ldexp(3.0f, -10)) == 0x02);     // tie 1|2: even
  CHECK(floatToE4M3(std::ldexp(1.0f, -9)) == 0x01);      // smallest subnormal
  CHECK(floatToE4M3(std::ldexp(15.0f, -10)) == 0x08);    // tie 7|8 rounds into the normals
  CHECK(floatToE4M3(std::nextafter(std::ldexp(1.0f, -10), 1.0f)) == 0x01);
  CHECK(floatToE4M3(kDenormMin) == 0x00);
  CHECK(floatToE4M3(-kDenormMin) == 0x80);
  CHECK(floatToE4M3(-0.0f) == 0x80);
  CHECK(std::signbit(e4m3ToFloat(0x80)));
  CHECK(floatToE4M3(448.0f) == 0x7E);
  CHECK(floatToE4M3(464.0f) == 0x7E);  // tie 448|480 (480 would be the NaN pattern)
  CHECK(floatToE4M3(465.0f) == 0x7E);  // satfinite
  CHECK(floatToE4M3(1e38f) == 0x7E);
  CHECK(floatToE4M3(-1e38f) == 0xFE);
  CHECK(floatToE4M3(kInf) == 0x7E);
  CHECK(floatToE4M3(-kInf) == 0xFE);
  CHECK(floatToE4M3(kNaN) == 0x7F);
  CHECK(floatToE4M3(-kNaN) == 0x7F);
  CHECK(std::isnan(e4m3ToFloat(0xFF)));
}

TEST_CASE("E4M3 equals the nearest-value reference on a structured sweep of FP32", "[formats]") {
  long mismatches = 0;
  fa4jit::test::forEachStructuredFloat([&](float x) {
    if (floatToE4M3(x) != fa4jit::test::refE4M3(x))
      ++mismatches;
  });
  CHECK(mismatches == 0);
}

TEST_CASE("UE4M3 is E4M3 without a sign", "[formats]") {
  for (int b = 0; b < 0x7F; ++b) {
    const float v = ue4m3ToFloat(static_cast<uint8_t>(b));
    CHECK(v == e4m3ToFloat(static_cast<uint8_t>(b)));
    CHECK(ue4m3ToFloat(static_cast<uint8_t>(b | 0x80)) == v);
    CHECK(floatToUE4M3(v) == b);
  }
  CHECK(floatToUE4M3(0.3f) == floatToE4M3(0.3f));
  CHECK(floatToUE4M3(-3.0f) == 0);
  CHECK(floatToUE4M3(-0.0f) == 0);
  CHECK(floatToUE4M3(-kInf) == 0);
  CHECK(floatToUE4M3(kInf) == 0x7E);
  CHECK(floatToUE4M3(1000.0f) == 0x7E);
  CHECK(floatToUE4M3(kNaN) == 0x7F);
  CHECK(std::isnan(ue4m3ToFloat(0x7F)));
}

TEST_CASE("UE8M0: all 256 patterns", "[formats]") {
  for (int b = 0; b < 256; ++b) {
    INFO("bits = " << b);
    CHECK(ue8m0Exponent(static_cast<uint8_t>(b)) == b - 127);
    const float v = ue8m0ToFloat(static_cast<uint8_t>(b));
    if (b == 255) {
      CHECK(std::isnan(v));
      continue;
    }
    CHECK(static_cast<double>(v) == std::ldexp(1.0, b - 127));
    CHECK(exponentToUE8M0(b - 127) == b);
  }
  CHECK(ue8m0ToFloat(0) > 0.0f); // 2^-127 is an FP32 subnormal, not flushed
  CHECK(exponentToUE8M0(-128) == 0);
  CHECK(exponentToUE8M0(-1000) == 0);
  CHECK(exponentToUE8M0(128) == 254);
  CHECK(exponentToUE8M0(1000) == 254);
}

TEST_CASE("BF16 rounds to nearest even and keeps NaN and Inf", "[formats]") {
  CHECK(floatToBF16(1.0f) == 0x3F80);
  CHECK(floatToBF16(1.0f + std::ldexp(1.0f, -8)) == 0x3F80);     // tie: mantissa 0 is even
  CHECK(floatToBF16(1.0f + std::ldexp(3.0f, -8)) == 0x3F82);     // tie: 1 -> 2
  CHECK(floatToBF16(1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20)) == 0x3F81);
  CHECK(floatToBF16(-1.0f - std::ldexp(1.0f, -8)) == 0xBF80);
  CHECK(floatToBF16(std::numeric_limits<float>::max()) == 0x7F80); // rounds up to Inf
  CHECK(floatToBF16(kInf) == 0x7F80);
  CHECK(floatToBF16(-kInf) == 0xFF80);
  CHECK(floatToBF16(kNaN) == 0x7FFF);
  CHECK(floatToBF16(-kNaN) == 0x7FFF);
  CHECK(floatToBF16(floatOf(0x7F800001u)) == 0x7FFF); // signalling NaN stays NaN
  CHECK(std::isnan(bf16ToFloat(floatToBF16(kNaN))));
  CHECK(floatToBF16(-0.0f) == 0x8000);
  CHECK(floatToBF16(kDenormMin) == 0x0000);
  CHECK(roundToBF16(3.14159265f) == 3.140625f);
  long bad = 0;
  for (uint32_t b = 0; b < 0x10000u; ++b) {
    const float v = bf16ToFloat(static_cast<uint16_t>(b));
    bad += bitsOf(v) != b << 16;
    bad += !std::isnan(v) && floatToBF16(v) != b;
  }
  CHECK(bad == 0);
}

TEST_CASE("BF16 equals the two-neighbour reference on a structured sweep of FP32", "[formats]") {
  long mismatches = 0;
  fa4jit::test::forEachStructuredFloat([&](float x) {
    if (floatToBF16(x) != fa4jit::test::refBF16(x))
      ++mismatches;
  });
  CHECK(mismatches == 0);
}

TEST_CASE("division by reciprocal and correction gives the codes of the exact quotient", "[formats]") {
  // The device quantizers' x / s (templates/fa4jit/formats.cuh): across scales in its range and
  // values aimed at every E2M1 and E4M3 rounding midpoint (and their neighbours), plus random bits.
  namespace dev = fa4jit::device;
  std::mt19937_64 rng(42);
  long checked = 0, mismatches = 0;
  auto check = [&](float x, float s, float r) {
    const float exact = x / s;
    if (!std::isfinite(x) || !std::isfinite(exact))
      return;
    ++checked;
    const float q = dev::quotientByReciprocal(x, s, r);
    mismatches += floatToE2M1(q) != floatToE2M1(exact) || floatToE4M3(q) != floatToE4M3(exact);
  };
  const float midpoints[] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f, 6.0f, 0x1p-10f, 0x3p-10f, 0x1.1p-6f,
                             0x1.3p-3f, 1.0625f, 17.0f, 464.0f, 448.0f};
  for (int t = 0; t < 3000; ++t) {
    const float s = std::ldexp(1.0f + float(rng() % (1u << 23)) * 0x1p-23f, int(rng() % 216) - 90);
    REQUIRE(dev::quotientByReciprocalOk(s));
    const float r = 1.0f / s;
    for (float m : midpoints)
      for (float sign : {1.0f, -1.0f}) {
        float x = sign * m * s;
        for (int step = 0; step < 3; ++step) x = std::nextafter(x, 0.0f);
        for (int step = 0; step < 7; ++step, x = std::nextafter(x, sign * kInf))
          check(x, s, r);
      }
    for (int k = 0; k < 200; ++k)
      check(floatOf(uint32_t(rng())), s, r);
  }
  CHECK(checked > 500000);
  CHECK(mismatches == 0);
  CHECK_FALSE(dev::quotientByReciprocalOk(0x1p-91f));
  CHECK_FALSE(dev::quotientByReciprocalOk(0x1p127f));
}
