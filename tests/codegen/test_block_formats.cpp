// Host block quantizers (block_formats.h) against NUMERICS.md §1: SF layout, hand-computed
// examples, an independent re-derivation of every code and scale, error bounds and errors.
#include "fa4jit/codegen/block_formats.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <random>
#include <set>
#include <string>

#include "fa4jit/codegen/formats.h"
#include "format_reference.h"

using namespace fa4jit::formats;

namespace {

// A row-major matrix that owns its storage.
struct Dense {
  int rows, cols;
  std::vector<float> v;
  Dense(int r, int c, float fill = 0.0f) : rows(r), cols(c), v(static_cast<std::size_t>(r) * c, fill) {}
  float &at(int r, int c) { return v[static_cast<std::size_t>(r) * cols + c]; }
  MatrixView view() const { return {v.data(), rows, cols, cols, 1}; }
  // The same storage seen transposed (cols x rows), as the quantizer sees V^T.
  MatrixView transposedView() const { return {v.data(), cols, rows, 1, cols}; }
};

Dense gaussian(int rows, int cols, unsigned seed, float sigma = 1.0f) {
  Dense d(rows, cols);
  std::mt19937 rng(seed);
  std::normal_distribution<float> n(0.0f, sigma);
  for (float &x : d.v)
    x = n(rng);
  return d;
}

std::string message(llvm::Error e) { return llvm::toString(std::move(e)); }

// UE4M3 of a positive float by the nearest-value reference.
uint8_t refUE4M3(float x) { return fa4jit::test::refE4M3(x); }

} // namespace

TEST_CASE("SF layout offsets: known positions", "[block_formats]") {
  CHECK(scaleFactorOffset(0, 0, 4) == 0);
  CHECK(scaleFactorOffset(0, 1, 4) == 1);
  CHECK(scaleFactorOffset(0, 3, 4) == 3);
  CHECK(scaleFactorOffset(1, 0, 4) == 16);
  CHECK(scaleFactorOffset(31, 0, 4) == 31 * 16);
  CHECK(scaleFactorOffset(32, 0, 4) == 4);
  CHECK(scaleFactorOffset(33, 2, 4) == 16 + 4 + 2);
  CHECK(scaleFactorOffset(96, 0, 4) == 12);
  CHECK(scaleFactorOffset(127, 3, 4) == 511);
  CHECK(scaleFactorOffset(0, 4, 8) == 512);      // next atom along the scale columns
  CHECK(scaleFactorOffset(128, 0, 8) == 1024);   // next row block after ceil(8/4) atoms
  CHECK(scaleFactorOffset(128, 0, 5) == 1024);   // 5 scale columns pad to 8: 2 atoms per row block
  CHECK(scaleFactorOffset(130, 6, 8) == 3 * 512 + 2 * 16 + 2);
  CHECK(scaleFactorBytes(1, 1) == 512);
  CHECK(scaleFactorBytes(128, 4) == 512);
  CHECK(scaleFactorBytes(129, 5) == 4 * 512);
  CHECK(scaleFactorBytes(256, 8) == 4 * 512);
}

TEST_CASE("SF layout is a bijection onto the atom bytes", "[block_formats]") {
  const int shapes[][2] = {{128, 4}, {256, 8}, {130, 5}, {1, 1}, {384, 2}};
  for (const auto &s : shapes) {
    const int rows = s[0], kb = s[1];
    const int prow = (rows + 127) / 128 * 128, pkb = (kb + 3) / 4 * 4;
    const std::size_t bytes = scaleFactorBytes(rows, kb);
    REQUIRE(bytes == static_cast<std::size_t>(prow) * pkb);
    std::set<std::size_t> seen;
    for (int r = 0; r < prow; ++r)
      for (int j = 0; j < pkb; ++j) {
        // Padded scale columns beyond kb still have a place in the last atom.
        const std::size_t off = scaleFactorOffset(r, j, pkb);
        CHECK(off < bytes);
        seen.insert(off);
        if (j < kb)
          CHECK(scaleFactorOffset(r, j, kb) == off);
      }
    CHECK(seen.size() == bytes);
  }
}

TEST_CASE("NVFP4: a hand-computed row", "[block_formats]") {
  // amax 6 -> g = 6/2688, 6g = 1/74.67 and amax_b / (6g) = 448 -> s_b = 448, s_b*g = 1 (to an
  // ulp): codes are E2M1(x) itself. Block 1 has amax 3 -> s_b = 224, codes E2M1(2x). Block 2 is 0.
  Dense d(1, 48);
  const float b0[16] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6, -0.5f, -1, -6, 0.2f, 0.3f, 2.4f, 5.2f, -4.9f};
  const uint8_t c0[16] = {0, 1, 2, 3, 4, 5, 6, 7, 9, 10, 15, 0, 1, 4, 7, 14};
  for (int i = 0; i < 16; ++i) {
    d.at(0, i) = b0[i];
    d.at(0, 16 + i) = b0[i] / 2; // amax_b = 3
  }
  auto q = quantizeNvfp4(d.view());
  REQUIRE(static_cast<bool>(q));
  CHECK(q->global_scale == 6.0f / 2688.0f);
  CHECK(q->blockScale(0, 0) == 448.0f);
  CHECK(q->blockScale(0, 1) == 224.0f);
  CHECK(q->blockScale(0, 2) == 0.0f);
  CHECK(q->scales[scaleFactorOffset(0, 0, 3)] == 0x7E);
  CHECK(q->scales[scaleFactorOffset(0, 1, 3)] == floatToE4M3(224.0f));
  CHECK(q->scales.size() == 512);
  CHECK(q->payload.size() == 24);
  CHECK(q->payload[0] == (0 | (1 << 4))); // element 0 in the low nibble
  for (int i = 0; i < 16; ++i) {
    INFO("i = " << i);
    CHECK(q->code(0, i) == c0[i]);
    CHECK(q->code(0, 16 + i) == c0[i]);
    CHECK(q->code(0, 32 + i) == 0);
    CHECK(q->value(0, i) == Approx(e2m1ToFloat(c0[i])).epsilon(1e-6));
    CHECK(q->value(0, 32 + i) == 0.0f);
  }
}

TEST_CASE("NVFP4 equals an independent re-derivation of NUMERICS.md §1", "[block_formats]") {
  const Dense d = gaussian(70, 64, 1, 3.0f);
  auto q = quantizeNvfp4(d.view());
  REQUIRE(static_cast<bool>(q));
  double amax = 0;
  for (float x : d.v)
    amax = std::max(amax, std::fabs(static_cast<double>(x)));
  const float g = static_cast<float>(amax) / 2688.0f;
  CHECK(q->global_scale == g);
  long bad_scale = 0, bad_code = 0, bad_bound = 0;
  for (int r = 0; r < d.rows; ++r)
    for (int b = 0; b < 4; ++b) {
      float amax_b = 0;
      for (int c = 16 * b; c < 16 * b + 16; ++c)
        amax_b = std::max(amax_b, std::fabs(d.view().at(r, c)));
      const uint8_t s = refUE4M3(amax_b / (6.0f * g));
      bad_scale += q->scales[scaleFactorOffset(r, b, 4)] != s;
      const float sg = e4m3ToFloat(s) * g;
      for (int c = 16 * b; c < 16 * b + 16; ++c) {
        const float x = d.view().at(r, c);
        bad_code += q->code(r, c) != fa4jit::test::refE2M1(x / sg);
        // E2M1's widest gap is 2 (between 4 and 6) and UE4M3 rounds s_b by at most 1/16:
        // |x - x~| <= s_b*g <= amax_b * (1 + 1/16) / 6.
        bad_bound += std::fabs(x - q->value(r, c)) > amax_b * (17.0f / 16.0f) / 6.0f * 1.0001f;
      }
    }
  CHECK(bad_scale == 0);
  CHECK(bad_code == 0);
  CHECK(bad_bound == 0);
  // Padding rows of the SF tensor (70 -> 128) are zero.
  for (int r = d.rows; r < 128; ++r)
    for (int b = 0; b < 4; ++b)
      CHECK(q->scales[scaleFactorOffset(r, b, 4)] == 0);
}

TEST_CASE("MXFP4: hand-computed block exponents and codes", "[block_formats]") {
  Dense d(2, 128);
  for (int i = 0; i < 32; ++i) {
    d.at(0, i) = (i % 8) * 0.75f;       // amax 5.25 -> floor(log2) 2 -> E 0
    d.at(0, 32 + i) = (i % 2) ? 1.0f : 0.25f; // amax 1 -> E -2: codes of 4x
    d.at(0, 64 + i) = 0.75f;            // amax 0.75 -> floor(log2) -1 -> E -3: 6.0
    d.at(1, i) = std::ldexp(1.0f, 100); // E 98
  }
  auto q = quantizeMxfp4(d.view(), 128);
  REQUIRE(static_cast<bool>(q));
  CHECK(q->blockExponent(0, 0) == 0);
  CHECK(q->blockExponent(0, 1) == -2);
  CHECK(q->blockExponent(0, 2) == -3);
  CHECK(q->blockExponent(0, 3) == -127); // all zero
  CHECK(q->blockExponent(1, 0) == 98);
  CHECK(q->maxBlockExponent() == 98);
  CHECK(q->scales[scaleFactorOffset(0, 1, 4)] == 125);
  CHECK(q->scales[scaleFactorOffset(0, 3, 4)] == 0);
  CHECK(q->code(0, 1) == floatToE2M1(0.75f));
  CHECK(q->code(0, 7) == floatToE2M1(5.25f)); // 5.25 -> 6
  CHECK(q->value(0, 7) == 6.0f);
  CHECK(q->code(0, 32) == 2); // 0.25 * 4 = 1
  CHECK(q->code(0, 33) == 6); // 1 * 4 = 4
  CHECK(q->value(0, 33) == 1.0f);
  CHECK(q->code(0, 64) == 7); // 0.75 * 8 = 6
  CHECK(q->value(0, 64) == 0.75f);
  CHECK(q->value(1, 5) == std::ldexp(1.0f, 100));
}

TEST_CASE("MXFP4 exponents clamp at -127 and the error bound holds", "[block_formats]") {
  Dense tiny(1, 32, std::numeric_limits<float>::denorm_min());
  auto qt = quantizeMxfp4(tiny.view(), 32);
  REQUIRE(static_cast<bool>(qt));
  CHECK(qt->blockExponent(0, 0) == -127);
  CHECK(qt->code(0, 0) == 0);

  const Dense d = gaussian(33, 96, 2);
  auto q = quantizeMxfp4(d.view(), 128);
  REQUIRE(static_cast<bool>(q));
  long bad = 0;
  for (int r = 0; r < d.rows; ++r)
    for (int c = 0; c < d.cols; ++c) {
      const int e = q->blockExponent(r, c / 32);
      const float x = d.view().at(r, c), y = std::ldexp(x, -e);
      bad += q->code(r, c) != fa4jit::test::refE2M1(y);
      // Gaps are at most 2 below 6 (error <= 2^E); [6, 8) saturates to 6 (error < 2^(E+1)).
      const float bound = std::ldexp(std::fabs(y) <= 6.0f ? 1.0f : 2.0f, e);
      bad += std::fabs(x - q->value(r, c)) > bound;
    }
  CHECK(bad == 0);
}

TEST_CASE("MXFP4 padding: zero codes, E = -127 blocks, zero SF padding", "[block_formats]") {
  Dense d = gaussian(3, 40, 3);
  auto q = quantizeMxfp4(d.view(), 96);
  REQUIRE(static_cast<bool>(q));
  CHECK(q->payload.size() == 3u * 48u);
  CHECK(q->scales.size() == 512u);
  for (int r = 0; r < 3; ++r) {
    for (int c = 40; c < 96; ++c)
      CHECK(q->code(r, c) == 0);
    float amax_b = 0;
    for (int c = 32; c < 40; ++c)
      amax_b = std::max(amax_b, std::fabs(d.at(r, c)));
    CHECK(q->blockExponent(r, 1) == std::ilogb(amax_b) - 2); // only real keys count
    CHECK(q->blockExponent(r, 2) == -127);
  }
  // Every byte outside the 3 x 2 real blocks is zero (the padding-only block 2 has byte 0 too).
  std::set<std::size_t> real;
  for (int r = 0; r < 3; ++r)
    for (int b = 0; b < 2; ++b)
      real.insert(scaleFactorOffset(r, b, 3));
  for (std::size_t i = 0; i < q->scales.size(); ++i)
    if (!real.count(i))
      CHECK(q->scales[i] == 0);
}

TEST_CASE("FP8 per tensor: scale, codes, padding and error bound", "[block_formats]") {
  Dense d = gaussian(5, 20, 4, 10.0f);
  d.at(2, 3) = -896.0f; // amax: s = 2
  auto q = quantizeFp8PerTensor(d.view(), 32);
  REQUIRE(static_cast<bool>(q));
  CHECK(q->scale == 2.0f);
  CHECK(q->payload.size() == 5u * 32u);
  CHECK(q->payload[2 * 32 + 3] == 0xFE); // -448
  CHECK(q->value(2, 3) == -896.0f);
  long bad = 0;
  for (int r = 0; r < 5; ++r) {
    for (int c = 20; c < 32; ++c)
      bad += q->payload[static_cast<std::size_t>(r) * 32 + c] != 0;
    for (int c = 0; c < 20; ++c) {
      const float x = d.at(r, c);
      bad += q->payload[static_cast<std::size_t>(r) * 32 + c] != fa4jit::test::refE4M3(x / 2.0f);
      // 3 mantissa bits: relative error <= 2^-4 for normals, absolute <= 2^-10 * s below.
      bad += std::fabs(x - q->value(r, c)) > std::max(std::fabs(x) / 16.0f, 2.0f * std::ldexp(1.0f, -10));
    }
  }
  CHECK(bad == 0);
}

TEST_CASE("An all-zero head quantizes to zeros with unit global scales", "[block_formats]") {
  const Dense z(4, 64);
  auto n = quantizeNvfp4(z.view());
  REQUIRE(static_cast<bool>(n));
  CHECK(n->global_scale == 1.0f);
  for (uint8_t b : n->scales)
    CHECK(b == 0);
  for (uint8_t b : n->payload)
    CHECK(b == 0);
  CHECK(n->value(3, 63) == 0.0f);
  auto m = quantizeMxfp4(z.view(), 64);
  REQUIRE(static_cast<bool>(m));
  CHECK(m->maxBlockExponent() == -127);
  CHECK(m->value(1, 2) == 0.0f);
  auto f = quantizeFp8PerTensor(z.view(), 64);
  REQUIRE(static_cast<bool>(f));
  CHECK(f->scale == 1.0f);
  CHECK(f->value(0, 0) == 0.0f);
  // A head of FP32 subnormals: the quotients underflow, the scale falls back to 1, codes are 0.
  const Dense t(1, 16, std::numeric_limits<float>::denorm_min());
  auto nt = quantizeNvfp4(t.view());
  REQUIRE(static_cast<bool>(nt));
  CHECK(nt->global_scale == 1.0f);
  CHECK(nt->value(0, 0) == 0.0f);
  auto ft = quantizeFp8PerTensor(t.view(), 16);
  REQUIRE(static_cast<bool>(ft));
  CHECK(ft->scale == 1.0f);
}

TEST_CASE("A transposed view quantizes like the explicit transpose", "[block_formats]") {
  const Dense d = gaussian(64, 32, 5); // [keys, D]
  Dense t(32, 64);
  for (int r = 0; r < 64; ++r)
    for (int c = 0; c < 32; ++c)
      t.at(c, r) = d.v[static_cast<std::size_t>(r) * 32 + c];
  auto a = quantizeMxfp4(d.transposedView(), 128);
  auto b = quantizeMxfp4(t.view(), 128);
  REQUIRE(static_cast<bool>(a));
  REQUIRE(static_cast<bool>(b));
  CHECK(a->payload == b->payload);
  CHECK(a->scales == b->scales);
  auto na = quantizeNvfp4(d.transposedView());
  auto nb = quantizeNvfp4(t.view());
  REQUIRE(static_cast<bool>(na));
  REQUIRE(static_cast<bool>(nb));
  CHECK(na->payload == nb->payload);
  CHECK(na->scales == nb->scales);
}

TEST_CASE("Quantizers reject non-finite inputs, naming the element", "[block_formats]") {
  const float bad_values[] = {std::numeric_limits<float>::quiet_NaN(),
                              std::numeric_limits<float>::infinity(),
                              -std::numeric_limits<float>::infinity()};
  for (float v : bad_values) {
    Dense d = gaussian(4, 64, 6);
    d.at(2, 37) = v;
    auto n = quantizeNvfp4(d.view());
    REQUIRE(!n);
    const std::string msg = message(n.takeError());
    CHECK(msg.find("row 2, column 37") != std::string::npos);
    CHECK(msg.find("non-finite") != std::string::npos);
    CHECK(msg.find("NVFP4") != std::string::npos);
    auto m = quantizeMxfp4(d.view(), 64);
    REQUIRE(!m);
    CHECK(message(m.takeError()).find("row 2, column 37") != std::string::npos);
    auto f = quantizeFp8PerTensor(d.view(), 64);
    REQUIRE(!f);
    CHECK(message(f.takeError()).find("row 2, column 37") != std::string::npos);
  }
}

TEST_CASE("Quantizers reject bad shapes with a reason", "[block_formats]") {
  const Dense d = gaussian(2, 40, 7);
  auto n = quantizeNvfp4(d.view()); // 40 is not a multiple of 16
  REQUIRE(!n);
  CHECK(message(n.takeError()).find("multiple of 16") != std::string::npos);
  auto m = quantizeMxfp4(d.view(), 48); // not a multiple of 32
  REQUIRE(!m);
  CHECK(message(m.takeError()).find("multiple of 32") != std::string::npos);
  auto m2 = quantizeMxfp4(d.view(), 32); // shorter than cols
  REQUIRE(!m2);
  CHECK(message(m2.takeError()).find("padded_cols 32") != std::string::npos);
  auto f = quantizeFp8PerTensor(d.view(), 39);
  REQUIRE(!f);
  CHECK(message(f.takeError()).find("padded_cols 39") != std::string::npos);
  const Dense empty(0, 16);
  auto e = quantizeNvfp4(empty.view());
  REQUIRE(!e);
  CHECK(message(e.takeError()).find("empty") != std::string::npos);
  auto e2 = quantizeMxfp4(Dense(3, 0).view(), 32);
  REQUIRE(!e2);
  CHECK(message(e2.takeError()).find("empty") != std::string::npos);
  auto e3 = quantizeFp8PerTensor(empty.view(), 16);
  REQUIRE(!e3);
}
