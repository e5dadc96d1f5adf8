// The device header templates/fa4jit/formats.cuh compiled for the host, checked against the host
// library (formats.h, block_formats.h) and against value-table references: the software paths a
// kernel takes where no PTX conversion exists, the pair packing order, and the E2M1 -> E4M3
// widening tables Hopper kernels use. (The PTX paths were compared with these software paths for
// all 2^32 FP32 inputs on an H200; see the formats engineer's report.)
#include "fa4jit/formats.cuh"

#include <catch2/catch.hpp>
#include <cmath>

#include "fa4jit/codegen/block_formats.h"
#include "fa4jit/codegen/formats.h"
#include "format_reference.h"

namespace dev = fa4jit::device;
namespace host = fa4jit::formats;

TEST_CASE("Device software encoders equal the host library and the references", "[formats][twin]") {
  long bad = 0, visited = 0;
  fa4jit::test::forEachStructuredFloat([&](float x) {
    ++visited;
    const uint8_t e2 = dev::floatToE2M1Soft(x), e4 = dev::floatToE4M3Soft(x);
    const uint16_t b16 = dev::floatToBF16Soft(x);
    bad += e2 != host::floatToE2M1(x) || e2 != fa4jit::test::refE2M1(x);
    bad += e4 != host::floatToE4M3(x) || e4 != fa4jit::test::refE4M3(x);
    bad += b16 != host::floatToBF16(x) || b16 != fa4jit::test::refBF16(x);
    bad += dev::floatToUE4M3(x) != host::floatToUE4M3(x);
  });
  CHECK(visited > 5000000);
  CHECK(bad == 0);
}

TEST_CASE("The quantizers' E2M1 pair encoder equals the general one on every non-NaN input", "[formats][twin]") {
  long bad = 0, visited = 0;
  float previous = 0.0f;
  fa4jit::test::forEachStructuredFloat([&](float x) {
    if (std::isnan(x))
      return;
    ++visited;
    // Each value beside the previous one, in both nibbles, so both signs meet in one byte.
    bad += dev::finiteFloatsToE2M1x2(x, previous) != dev::floatsToE2M1x2(x, previous);
    bad += dev::finiteFloatsToE2M1x2(previous, x) != dev::floatsToE2M1x2(previous, x);
    bad += dev::e2m1MagnitudeCode(x) != (fa4jit::test::refE2M1(x) & 0x7u);
    previous = -x;
  });
  CHECK(visited > 5000000);
  CHECK(bad == 0);
}

TEST_CASE("E2M1 magnitude codes equal the reference for every FP32 value from 2^-4 to 8", "[formats][twin]") {
  // Every rounding midpoint of the grid (0.25 to 5) and the saturation at 6 lie in this range;
  // below it every code is 0, above it 7 (the structured inputs above cover both).
  long bad = 0;
  for (uint32_t u = 0x3D800000u; u < 0x41000000u; ++u) {
    const float x = fa4jit::test::floatOf(u);
    bad += dev::e2m1MagnitudeCode(x) != (fa4jit::test::refE2M1(x) & 0x7u);
    bad += dev::e2m1MagnitudeCode(-x) != (fa4jit::test::refE2M1(x) & 0x7u);
    // the packing form: the code alone in bits 0..22, exponent bits above
    bad += (fa4jit::test::bitsOf(dev::e2m1MagnitudeCodeField(-x)) & 0x7FFFFFu) != (fa4jit::test::refE2M1(x) & 0x7u);
  }
  CHECK(bad == 0);
}

namespace {
// Eight reference codes, code n in bits 4n..4n+3.
uint32_t refE2M1x8(const float (&x)[8]) {
  uint32_t w = 0u;
  for (int n = 0; n < 8; ++n)
    w |= static_cast<uint32_t>(fa4jit::test::refE2M1(x[n])) << (4 * n);
  return w;
}

// An FP16 pattern's value (not NaN).
float fp16ToFloat(uint32_t bits) {
  const int e = static_cast<int>((bits >> 10) & 31u), m = static_cast<int>(bits & 1023u);
  const double v = e == 31 ? HUGE_VAL : (e == 0 ? std::ldexp(m, -24) : std::ldexp(1024 + m, e - 25));
  return static_cast<float>((bits & 0x8000u) ? -v : v);
}
} // namespace

TEST_CASE("Eight-code packing equals eight single encodes on every non-NaN input", "[formats][twin]") {
  // A window of the last eight structured values, every other one negated, so each value meets
  // both signs and every nibble position.
  long bad = 0, visited = 0;
  float window[8] = {};
  fa4jit::test::forEachStructuredFloat([&](float x) {
    if (std::isnan(x))
      return;
    ++visited;
    for (int n = 7; n > 0; --n)
      window[n] = window[n - 1];
    window[0] = visited % 2 ? x : -x;
    bad += dev::finiteFloatsToE2M1x8(window) != refE2M1x8(window);
  });
  CHECK(visited > 5000000);
  CHECK(bad == 0);
}

TEST_CASE("Eight-code packing takes the signs of 16-bit inputs from their words", "[formats][twin]") {
  // Every BF16 and every FP16 magnitude but NaN, eight consecutive ones per word group with every
  // pattern of signs; a quotient by a positive scale has its input's sign, so the words' signs are
  // the codes' signs.
  for (const bool fp16 : {false, true}) {
    INFO((fp16 ? "fp16" : "bf16"));
    long bad = 0, visited = 0;
    for (uint32_t first = 0; first < 0x10000u; first += 8) {
      uint32_t words[4];
      float x[8];
      for (int n = 0; n < 8; ++n) {
        // (the group's index bits pick the signs: every sign pattern over the eight elements)
        const uint32_t bits = (first + n) ^ ((((first / 8) >> n) & 1u) << 15);
        const bool nan = fp16 ? (bits & 0x7FFFu) > 0x7C00u : (bits & 0x7FFFu) > 0x7F80u;
        const uint32_t use = nan ? bits & 0x8000u : bits; // (NaN never reaches the encoder: a signed 0)
        x[n] = fp16 ? fp16ToFloat(use) : dev::bf16ToFloat(static_cast<uint16_t>(use));
        if (n % 2 == 0)
          words[n / 2] = use;
        else
          words[n / 2] |= use << 16;
      }
      ++visited;
      const uint32_t signs = dev::e2m1SignsOfHalves8(words[0], words[1], words[2], words[3]);
      bad += signs != dev::e2m1SignsOfFloats8(x);
      bad += dev::finiteFloatsToE2M1x8(x, signs) != refE2M1x8(x);
    }
    CHECK(visited == 0x2000);
    CHECK(bad == 0);
  }
}

TEST_CASE("Device decoders equal the host library for every pattern", "[formats][twin]") {
  const auto same = [](float a, float b) {
    return (std::isnan(a) && std::isnan(b)) || fa4jit::test::bitsOf(a) == fa4jit::test::bitsOf(b);
  };
  long bad = 0;
  for (int b = 0; b < 256; ++b) {
    const auto u8 = static_cast<uint8_t>(b);
    bad += !same(dev::e4m3ToFloat(u8), host::e4m3ToFloat(u8));
    bad += !same(dev::ue4m3ToFloat(u8), host::ue4m3ToFloat(u8));
    bad += !same(dev::ue8m0ToFloat(u8), host::ue8m0ToFloat(u8));
    bad += !same(dev::e2m1ToFloat(u8), host::e2m1ToFloat(u8));
    bad += dev::ue8m0Exponent(u8) != host::ue8m0Exponent(u8);
  }
  for (uint32_t b = 0; b < 0x10000u; ++b)
    bad += !same(dev::bf16ToFloat(static_cast<uint16_t>(b)), host::bf16ToFloat(static_cast<uint16_t>(b)));
  for (int e = -300; e <= 300; ++e)
    bad += dev::exponentToUE8M0(e) != host::exponentToUE8M0(e);
  CHECK(bad == 0);
}

TEST_CASE("Pair packing puts the first (lower-index) value in the low bits", "[formats][twin]") {
  CHECK(dev::floatsToE2M1x2(1.0f, -6.0f) == (0x2 | (0xF << 4)));
  CHECK(dev::floatsToE2M1x2(0.5f, 0.0f) == 0x01);
  CHECK(dev::floatsToE4M3x2(448.0f, -1.0f) == (0x7E | (host::floatToE4M3(-1.0f) << 8)));
  CHECK(dev::floatToE2M1(3.0f) == 0x5);
  CHECK(dev::floatToE4M3(-448.0f) == 0xFE);
  CHECK(dev::floatToBF16(1.0f) == 0x3F80);
}

TEST_CASE("exp2Int and bytePerm behave as their definitions", "[formats][twin]") {
  for (int k = -160; k <= 140; ++k) {
    INFO("k = " << k);
    CHECK(static_cast<double>(dev::exp2Int(k)) ==
          (k > 127 ? HUGE_VAL : (k < -149 ? 0.0 : std::ldexp(1.0, k))));
  }
  const uint32_t x = 0x33221100u, y = 0x77665544u;
  CHECK(dev::bytePerm(x, y, 0x3210u) == x);
  CHECK(dev::bytePerm(x, y, 0x7654u) == y);
  CHECK(dev::bytePerm(x, y, 0x0415u) == 0x00441155u);
  CHECK(dev::bytePerm(x, y, 0xFFFF0000u) == 0x00000000u); // upper selector bits ignored
  // PRMT's sign-replicate flag: bit 7 of the selected byte fills the output byte
  const uint32_t a = 0x80017F81u, b = 0x00FF7E01u;
  CHECK(dev::bytePermSignReplicating(a, b, 0x3210u) == a);
  CHECK(dev::bytePermSignReplicating(a, b, 0xBA98u) == 0xFF0000FFu);
  CHECK(dev::bytePermSignReplicating(a, b, 0xFEDCu) == 0x00FF0000u);
  CHECK(dev::bytePermSignReplicating(a, b, 0x4C08u) == 0x010081FFu);
}

TEST_CASE("SF layout: device and host offsets agree", "[formats][twin]") {
  long bad = 0;
  for (int kb : {1, 3, 4, 8, 9})
    for (int r = 0; r < 300; ++r)
      for (int j = 0; j < kb; ++j)
        bad += static_cast<std::size_t>(dev::scaleFactorOffset(r, j, kb)) !=
               host::scaleFactorOffset(r, j, kb);
  CHECK(bad == 0);
  CHECK(dev::scaleFactorBytes(300, 9) == static_cast<int64_t>(host::scaleFactorBytes(300, 9)));
}

TEST_CASE("Widening table: E2M1 code x 2^k as E4M3 for every code and k", "[formats][twin]") {
  for (int k = -24; k <= 24; ++k) {
    INFO("k = " << k);
    const dev::E2M1ToE4M3Table t = dev::e2m1ToE4M3TablePow2(k);
    for (int c = 0; c < 16; ++c) {
      INFO("code = " << c);
      const double exact = std::ldexp(static_cast<double>(host::e2m1ToFloat(static_cast<uint8_t>(c))), k);
      const uint8_t byte = dev::e2m1ToE4M3Byte(t, static_cast<uint8_t>(c));
      CHECK(byte == fa4jit::test::refE4M3(static_cast<float>(exact)));
      // E2M1 values have 2 significant bits: exact in E4M3 from 2^-9 (half of 2^-8) to 6 * 2^6.
      if (k >= -8 && k <= 6)
        CHECK(static_cast<double>(host::e4m3ToFloat(byte)) == exact);
    }
    if (k >= -5 && k <= 6) {
      const dev::E2M1ToE4M3Table f = dev::e2m1ToE4M3TablePow2Normal(k);
      CHECK(f.lo == t.lo);
      CHECK(f.hi == t.hi);
    }
  }
  // Far outside the clamp used internally, results stay the limits.
  CHECK(dev::e2m1ToE4M3TablePow2(-1000).hi == 0u);
  CHECK(dev::e2m1ToE4M3TablePow2(1000).hi == 0x7E7E7E7Eu);
  CHECK(dev::e2m1ToE4M3TablePow2(1000).lo == 0x7E7E7E00u);
}

TEST_CASE("Widening with an NVFP4 scale rounds once, like the CPU model", "[formats][twin]") {
  // NUMERICS.md §2.1: q~ = E4M3(E2M1[c] * s_b * 2^-sigma), the product exact in FP32.
  long bad = 0;
  for (int s = 1; s < 0x7F; ++s)
    for (int sigma = 0; sigma <= 4; ++sigma) {
      const float scale = std::ldexp(host::ue4m3ToFloat(static_cast<uint8_t>(s)), -sigma);
      const dev::E2M1ToE4M3Table t = dev::e2m1ToE4M3TableScaled(scale);
      for (int c = 0; c < 16; ++c) {
        const double exact = static_cast<double>(host::e2m1ToFloat(static_cast<uint8_t>(c))) * scale;
        bad += static_cast<double>(static_cast<float>(exact)) != exact; // the product is exact
        bad += dev::e2m1ToE4M3Byte(t, static_cast<uint8_t>(c)) !=
               fa4jit::test::refE4M3(static_cast<float>(exact));
      }
    }
  CHECK(bad == 0);
}

TEST_CASE("Packed widening (2 and 8 codes) equals the per-code table lookup", "[formats][twin]") {
  long bad = 0;
  const auto expect8 = [](const dev::E2M1ToE4M3Table &t, uint32_t codes) {
    dev::E4M3x8 e{0, 0};
    for (int n = 0; n < 8; ++n) {
      const uint32_t b = dev::e2m1ToE4M3Byte(t, static_cast<uint8_t>((codes >> (4 * n)) & 0xF));
      (n < 4 ? e.lo : e.hi) |= b << (8 * (n & 3));
    }
    return e;
  };
  for (int k = -10; k <= 8; ++k) {
    const dev::E2M1ToE4M3Table t = dev::e2m1ToE4M3TablePow2(k);
    for (uint32_t byte = 0; byte < 256; ++byte) {
      const uint16_t w = dev::widenE2M1x2(t, static_cast<uint8_t>(byte));
      bad += w != (dev::e2m1ToE4M3Byte(t, byte & 0xF) | (dev::e2m1ToE4M3Byte(t, byte >> 4) << 8));
    }
    // Every 16-bit pattern in each half, and a pseudo-random sweep of whole words.
    uint32_t rng = 0x12345678u + static_cast<uint32_t>(k);
    for (uint32_t i = 0; i < 0x10000u; ++i) {
      rng = rng * 1664525u + 1013904223u;
      for (uint32_t codes : {i, i << 16, rng}) {
        const dev::E4M3x8 got = dev::widenE2M1x8(t, codes), want = expect8(t, codes);
        bad += got.lo != want.lo || got.hi != want.hi;
      }
    }
  }
  CHECK(bad == 0);
}

TEST_CASE("Widening an MXFP4 payload reproduces its decoded values exactly", "[formats][twin]") {
  // A row spanning several binades; each block widens with k = E_b - v_shift as NUMERICS §2.3.
  std::vector<float> row(128);
  for (int i = 0; i < 128; ++i)
    row[i] = std::ldexp(std::sin(0.37f * i), (i / 32) * 3 - 4);
  const host::MatrixView view{row.data(), 1, 128, 128, 1};
  auto q = host::quantizeMxfp4(view, 128);
  REQUIRE(static_cast<bool>(q));
  const int v_shift = q->maxBlockExponent() - 6;
  long bad = 0;
  for (int b = 0; b < 4; ++b) {
    const int k = q->blockExponent(0, b) - v_shift;
    REQUIRE(k >= -8);
    const dev::E2M1ToE4M3Table t = dev::e2m1ToE4M3TablePow2(k);
    for (int w = 0; w < 4; ++w) {
      uint32_t codes = 0;
      for (int n = 0; n < 8; ++n)
        codes |= static_cast<uint32_t>(q->code(0, 32 * b + 8 * w + n)) << (4 * n);
      const dev::E4M3x8 e = dev::widenE2M1x8(t, codes);
      for (int n = 0; n < 8; ++n) {
        const uint8_t byte = static_cast<uint8_t>(((n < 4 ? e.lo : e.hi) >> (8 * (n & 3))) & 0xFF);
        const float fed = std::ldexp(host::e4m3ToFloat(byte), v_shift);
        bad += fed != q->value(0, 32 * b + 8 * w + n);
      }
    }
  }
  CHECK(bad == 0);
}
