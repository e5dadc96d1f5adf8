// Decode's exact widening (templates/fa4jit/paged/widen.cuh) over every code and scale: E2M1 x
// UE4M3 and E2M1 x 2^E equal their products, E4M3 equals its value, and bytes that no finite row
// holds (NaN codes, NaN or oversized scales) widen to finite values.
#include "fa4jit/paged/widen.cuh"

#include <catch2/catch.hpp>
#include <cmath>

using namespace fa4jit::device;
using namespace fa4jit::device::paged;

namespace {
float lowHalf(uint32_t w) { return bf16ToFloat(static_cast<uint16_t>(w & 0xFFFFu)); }
float highHalf(uint32_t w) { return bf16ToFloat(static_cast<uint16_t>(w >> 16)); }
} // namespace

TEST_CASE("E2M1 codes times a UE4M3 scale widen to BF16 exactly, all codes and scales", "[cpu][paged][widen]") {
  int checked = 0;
  for (uint32_t scale_byte = 0; scale_byte < 0x80; ++scale_byte) {
    const uint32_t scale = ue4m3ToBf16x2(scale_byte);
    // (0x7F, UE4M3's NaN, never stored for a finite row, reads as 480)
    const float s = scale_byte == 0x7F ? 480.0f : ue4m3ToFloat(static_cast<uint8_t>(scale_byte));
    REQUIRE(lowHalf(scale) == s);
    REQUIRE(highHalf(scale) == s);
    for (uint32_t codes = 0; codes < 0x10000; codes += 0x0123) { // (every nibble value in every place)
      uint32_t p01, p23;
      e2m1x4ToBf16(codes, scale, p01, p23);
      const float want[4] = {e2m1ToFloat(codes & 0xF) * s, e2m1ToFloat((codes >> 4) & 0xF) * s,
                             e2m1ToFloat((codes >> 8) & 0xF) * s, e2m1ToFloat((codes >> 12) & 0xF) * s};
      REQUIRE(lowHalf(p01) == want[0]);
      REQUIRE(highHalf(p01) == want[1]);
      REQUIRE(lowHalf(p23) == want[2]);
      REQUIRE(highHalf(p23) == want[3]);
      REQUIRE(std::signbit(lowHalf(p01)) == bool(codes & 0x8)); // (-0 for the negative zero code)
      ++checked;
    }
  }
  CHECK(checked == 128 * 226);
}

TEST_CASE("E2M1 codes times an MXFP4 block's power of two widen exactly; bad bytes stay finite",
          "[cpu][paged][widen]") {
  for (uint32_t byte = 0; byte < 256; ++byte) {
    const uint32_t scale = ue8m0ToBf16x2(byte);
    const float s = lowHalf(scale);
    if (byte == kMxNaNScale)
      CHECK(s == 0.0f);
    else
      CHECK(s == exp2Int(static_cast<int>(std::min(byte, 252u)) - 127));
    uint32_t p01, p23;
    e2m1x4ToBf16(0x7F7Fu, scale, p01, p23); // the largest magnitudes, +-6
    CHECK(std::isfinite(lowHalf(p01)));
    CHECK(std::isfinite(highHalf(p23)));
    CHECK(lowHalf(p01) == -6.0f * s); // (nibbles 0xF, 0x7: -6, +6)
    CHECK(highHalf(p01) == 6.0f * s);
  }
}

TEST_CASE("E4M3 codes widen to their values; the NaN codes to a finite value", "[cpu][paged][widen]") {
  for (uint32_t a = 0; a < 256; ++a) {
    const uint32_t b = a ^ 0x5A;
    const uint32_t wa = a << 8, wb = b << 8; // byte 1 of each word
    const uint32_t pair = e4m3PairToBf16<1>(wa | 0x11u, wb | 0x22u);
    const auto expect = [](uint32_t code) {
      const bool nan = (code & 0x7F) == 0x7F;
      return nan ? ((code & 0x80) ? -480.0f : 480.0f) : e4m3ToFloat(static_cast<uint8_t>(code));
    };
    REQUIRE(lowHalf(pair) == expect(a));
    REQUIRE(highHalf(pair) == expect(b));
  }
  // every byte position
  CHECK(lowHalf(e4m3PairToBf16<0>(0x38u, 0u)) == 1.0f);
  CHECK(lowHalf(e4m3PairToBf16<2>(0x380000u, 0u)) == 1.0f);
  CHECK(highHalf(e4m3PairToBf16<3>(0u, 0xB8000000u)) == -1.0f);
}
