// The affine classifier's evaluated form (templates/fa4jit/directp.cuh, NUMERICS.md §2.3) and the
// instruction-level identities the kernels build on it (attention/p_directp.cuh).
#include "fa4jit/directp.cuh"
#include "fa4jit/codegen/classifier_fit.h"
#include "fa4jit/codegen/spec.h"

#include <catch2/catch.hpp>

#include <cfenv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace {

using fa4jit::device::DirectPCoefficients;

uint32_t bitsOf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

DirectPCoefficients coefficients(fa4jit::ClassifierKind kind, float alpha, float beta) {
  fa4jit::ClassifierSpec c;
  c.kind = kind;
  c.alpha = alpha;
  c.beta = beta;
  return fa4jit::fit::directpCoefficients(c);
}

// One row block as the kernels see it: accumulators acc and the score multiplier mul (t = acc *
// mul), the row max in use m (>= the block's max of t up to the guard), the block exponent from
// the block max of t - m (NUMERICS.md §2.3).
struct Block {
  float acc[32];
  float mul;
  float m;
  float e_f;
};

float blockExponentOf(const Block &b) {
  float bmax = -INFINITY;
  for (float a : b.acc)
    bmax = std::max(bmax, a);
  return static_cast<float>(fa4jit::device::directpBlockExponent(bmax * b.mul - b.m));
}

// unit_mul: mul = 1, so that acc is t (the test that places t exactly needs it).
Block randomBlock(std::mt19937 &rng, bool unit_mul = false) {
  std::normal_distribution<float> score(0.0f, 3.0f);
  std::uniform_real_distribution<float> below(0.0f, 12.0f);
  std::uniform_real_distribution<float> log_mul(-6.0f, 3.0f);
  Block b;
  b.mul = unit_mul ? 1.0f : std::exp2(log_mul(rng));
  b.m = score(rng) * 10.0f;
  for (float &a : b.acc)
    a = (b.m - below(rng) * below(rng) / 3.0f) / b.mul;
  b.e_f = blockExponentOf(b);
  return b;
}

} // namespace

TEST_CASE("directpClassify is directpCode of y = fma(acc, mul, -(m + e_b)) for threshold and mixed",
          "[directp][affine]") {
  std::mt19937 rng(7);
  const DirectPCoefficients kinds[] = {coefficients(fa4jit::ClassifierKind::Threshold, 2, 0),
                                       coefficients(fa4jit::ClassifierKind::Mixed, 2, 1)};
  for (const DirectPCoefficients &k : kinds)
    for (int n = 0; n < 2000; ++n) {
      const Block b = randomBlock(rng);
      for (float a : b.acc)
        REQUIRE(fa4jit::device::directpClassify(k, a, b.mul, b.m, b.e_f) ==
                fa4jit::device::directpCode(k, std::fma(a, b.mul, -(b.m + b.e_f))));
      CHECK(fa4jit::device::directpClassify(k, -INFINITY, b.mul, b.m, b.e_f) == 0); // a masked key
    }
}

// What the kernels' folding rests on (score_terms.cuh): for mul > 0 the maxima of t = acc * mul
// and of x = fma(acc, mul, -m) are the maxima of acc carried through, bit for bit; and
// scoreMultiplier keeps a masked key's -inf from becoming NaN.
TEST_CASE("maxima commute with the positive score multiplier", "[directp][scores]") {
  std::mt19937 rng(3);
  for (int n = 0; n < 20000; ++n) {
    const Block b = randomBlock(rng);
    float max_acc = -INFINITY, max_t = -INFINITY, max_x = -INFINITY;
    for (float a : b.acc) {
      max_acc = std::max(max_acc, a);
      max_t = std::max(max_t, a * b.mul);
      max_x = std::max(max_x, fa4jit::device::scoreExponent(a, b.mul, -b.m));
    }
    REQUIRE(bitsOf(max_t) == bitsOf(max_acc * b.mul));
    REQUIRE(bitsOf(max_x) == bitsOf(fa4jit::device::scoreExponent(max_acc, b.mul, -b.m)));
  }
  for (float mul : {0.0f, -0.0f, -1.0f, std::nanf(""), 1e-45f}) {
    const float m = fa4jit::device::scoreMultiplier(mul);
    CHECK(m == std::ldexp(1.0f, -126));
    CHECK(fa4jit::device::scoreExponent(-INFINITY, m, 3.0f) == -INFINITY);
  }
  CHECK(fa4jit::device::scoreMultiplier(0.125f) == 0.125f);
}

TEST_CASE("the fused affine form is clamp(floor(alpha*y + beta)) up to roundings", "[directp][affine]") {
  std::mt19937 rng(11);
  const DirectPCoefficients k = coefficients(fa4jit::ClassifierKind::Affine, 2.0f, 1.125f);
  long total = 0, differ = 0;
  for (int n = 0; n < 4000; ++n) {
    const Block b = randomBlock(rng);
    for (float a : b.acc) {
      const int fused = fa4jit::device::directpClassify(k, a, b.mul, b.m, b.e_f);
      const double y = static_cast<double>(a) * b.mul - b.m - b.e_f;
      const int direct = fa4jit::device::directpAffineCode(k, static_cast<float>(y));
      ++total;
      if (fused != direct) {
        ++differ;
        // Only at a code boundary, by one code.
        const double z = 2.0 * y + 1.125;
        CHECK(std::fabs(z - std::round(z)) < 1e-4 * std::max(1.0, std::fabs(static_cast<double>(b.m))));
        CHECK(std::abs(fused - direct) == 1);
      }
    }
    CHECK(fa4jit::device::directpClassify(k, -INFINITY, b.mul, b.m, b.e_f) == 0);
  }
  CHECK(differ * 1000 < total);
}

TEST_CASE("alpha*3 + beta <= 7.5 keeps 8z below 8: no upper clamp needed", "[directp][affine]") {
  std::mt19937 rng(13);
  const DirectPCoefficients k = coefficients(fa4jit::ClassifierKind::Affine, 2.0f, 1.5f);
  for (int n = 0; n < 8000; ++n) {
    const bool unit_mul = n % 2 == 0;
    Block b = randomBlock(rng, unit_mul);
    if (unit_mul) {
      // Put the block max right below an integer step of x, where y is largest (just under 3).
      const float bump = std::nextafter(std::ceil(b.acc[0] - b.m), -INFINITY) - (b.acc[0] - b.m);
      b.acc[0] += bump;
      b.e_f = blockExponentOf(b);
    }
    const float slope = fa4jit::device::directpAffineSlope(k, b.mul);
    const float addend = fa4jit::device::directpAffineAddend(k, b.m, b.e_f);
    for (float a : b.acc)
      REQUIRE(8.0f * fa4jit::device::directpAffineSaturated(slope, a, addend) < 8.0f);
  }
}

TEST_CASE("magic-number rounding gives the code in the low bits and the selector nibbles", "[directp][affine]") {
  // The kernel: bits(fma_rd(z, 8, 2^23)) = 0x4B000000 | floor(8z) for z in [0, 1), then
  // sel += bits << 4i; PRMT reads the low 16 bits only.
  const int saved = std::fegetround();
  REQUIRE(std::fesetround(FE_DOWNWARD) == 0);
  std::mt19937 rng(17);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  std::vector<float> zs = {0.0f, 1e-30f, 0.125f, std::nextafter(0.125f, 0.0f), 0.5f, 0.875f,
                           std::nextafter(1.0f, 0.0f)};
  for (int n = 0; n < 100000; ++n)
    zs.push_back(unit(rng));
  for (std::size_t n = 0; n + 4 <= zs.size(); ++n) {
    uint32_t sel = 0;
    int codes[4];
    for (int i = 0; i < 4; ++i) {
      const float z = std::min(zs[n + i], std::nextafter(1.0f, 0.0f));
      volatile float eight = 8.0f, magic = 8388608.0f; // computed at run time, in FE_DOWNWARD
      const uint32_t bits = bitsOf(std::fma(z, eight, magic));
      codes[i] = static_cast<int>(std::floor(8.0 * z));
      REQUIRE(bits == (0x4B000000u | static_cast<uint32_t>(codes[i])));
      sel += bits << (4 * i);
    }
    for (int i = 0; i < 4; ++i)
      REQUIRE(((sel >> (4 * i)) & 0xFu) == static_cast<uint32_t>(codes[i]));
  }
  std::fesetround(saved);
}

namespace {

// Strictly increasing thresholds on the validator's grid (multiples of 2^-7 in [-4, 4]).
std::vector<DirectPCoefficients> gridThresholdSets(std::mt19937 &rng, int n) {
  std::uniform_int_distribution<int> gap(1, 160); // steps of 2^-7
  std::vector<DirectPCoefficients> sets{coefficients(fa4jit::ClassifierKind::Threshold, 0.0f, 0.0f)};
  while (static_cast<int>(sets.size()) < n) {
    fa4jit::ClassifierSpec c;
    c.kind = fa4jit::ClassifierKind::Threshold;
    int k = -512 + gap(rng);
    bool fits = true;
    for (int i = 0; i < 7; ++i, k += gap(rng)) {
      c.thresholds[i] = std::ldexp(static_cast<float>(k), -7);
      fits = fits && k <= 512;
    }
    if (fits)
      sets.push_back(fa4jit::fit::directpCoefficients(c));
  }
  return sets;
}

// A value the FP16 arithmetic would hold: each operation is done in FP32 and must come out exactly
// representable in FP16 (so that FP16 hardware, which rounds to 11 bits, would give the same).
struct CheckedHalf {
  float v;
};
bool halfExact(float v) { return std::isnan(v) || static_cast<float>(static_cast<_Float16>(v)) == v; }
CheckedHalf directpGeq(CheckedHalf a, CheckedHalf b) { return {a.v >= b.v ? 1.0f : 0.0f}; }
CheckedHalf directpFmaV(CheckedHalf a, CheckedHalf b, CheckedHalf c) {
  const float r = std::fma(a.v, b.v, c.v);
  REQUIRE(halfExact(r));
  return {r};
}
CheckedHalf directpAddV(CheckedHalf a, CheckedHalf b) {
  const float r = a.v + b.v;
  REQUIRE(halfExact(r));
  return {r};
}

} // namespace

TEST_CASE("y rounds to FP16 as the hardware conversion does", "[codegen][directp]") {
  std::mt19937 rng(5);
  std::uniform_int_distribution<uint32_t> any;
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> ys{0.0f, -0.0f, inf, -inf, 65504.0f, 65519.99f, 65520.0f, -65520.0f, 1e30f,
                        std::ldexp(1.0f, -24), std::ldexp(1.0f, -25), std::ldexp(1.5f, -25), std::ldexp(1.0f, -14),
                        std::ldexp(1.0f, -30), 2.0009765625f, 2.00146484375f};
  for (int n = 0; n < 200000; ++n) {
    const float f = [&] { const uint32_t u = any(rng); float x; std::memcpy(&x, &u, 4); return x; }();
    ys.push_back(f);
    ys.push_back(std::ldexp(static_cast<float>(static_cast<int>(any(rng) % 8192)) + 0.5f, -12)); // FP16 ties
  }
  for (float y : ys) {
    if (std::isnan(y))
      continue;
    INFO("y " << y);
    const float want = static_cast<float>(static_cast<_Float16>(y)); // the compiler's RNE conversion
    const float got = fa4jit::device::directpThresholdInput(y);
    REQUIRE((got == want && std::signbit(got) == std::signbit(want)));
  }
  CHECK(std::isnan(fa4jit::device::directpThresholdInput(std::nanf(""))));
}

TEST_CASE("FP16 bits of grid values are computed at compile time", "[codegen][directp]") {
  static_assert(fa4jit::device::directpHalfBits(1024.0f) == 0x6400u);
  static_assert(fa4jit::device::directpHalfBits(64.0f) == 0x5400u);
  static_assert(fa4jit::device::directpHalfBits(-2.0f) == 0xC000u);
  for (int k = -1024; k <= 1024; ++k) {
    const float v = std::ldexp(static_cast<float>(k), -7);
    const _Float16 h = static_cast<_Float16>(v);
    uint16_t bits;
    std::memcpy(&bits, &h, 2);
    INFO("v " << v);
    REQUIRE(fa4jit::device::directpHalfBits(v) == (k == 0 ? 0u : bits));
  }
}

// The threshold classifier's binary search (directpThresholdCode) against its definition, one
// compare per threshold, for the default thresholds and 300 random grid sets: at every threshold,
// one FP16 ulp and one FP32 ulp on either side, between them, far outside, at +-0, infinities and
// NaN. The same search on CheckedHalf proves that the kernel's FP16 evaluation never rounds.
TEST_CASE("threshold code: binary search equals the count of thresholds below y", "[codegen][directp]") {
  std::mt19937 rng(20261129);
  const std::vector<DirectPCoefficients> sets = gridThresholdSets(rng, 301);
  const float inf = std::numeric_limits<float>::infinity();
  int checked = 0;
  for (const DirectPCoefficients &k : sets) {
    std::vector<float> ys{0.0f, -0.0f, inf, -inf, std::nanf(""), -1e30f, 1e30f, -4.5f, 4.5f};
    for (int i = 0; i < 7; ++i) {
      const float t = k.theta[i], h_ulp = std::ldexp(1.0f, std::ilogb(t == 0.0f ? 1.0f : t) - 10);
      for (float y : {t, std::nextafter(t, -inf), std::nextafter(t, inf), t - h_ulp, t + h_ulp, t - 0.5f * h_ulp,
                      t + 0.5f * h_ulp})
        ys.push_back(y);
      if (i > 0)
        ys.push_back(0.5f * (t + k.theta[i - 1]));
    }
    const fa4jit::device::DirectPThresholdSteps st = fa4jit::device::directpThresholdSteps(k);
    for (float y : ys) {
      INFO("y " << y);
      const int want = fa4jit::device::directpThresholdCodeLinear(k, y);
      CHECK(fa4jit::device::directpThresholdCode(k, y) == want);
      const float h = fa4jit::device::directpThresholdInput(y);
      for (float magic : {1024.0f, 64.0f}) { // the two lanes of a pair
        const CheckedHalf v = fa4jit::device::directpThresholdSearch<CheckedHalf>(
            {h}, {st.th3}, {st.th1}, {st.d51}, {st.th0}, {st.d40}, {st.d20}, {st.dd}, {4.0f}, {2.0f}, {magic});
        CHECK(v.v == magic + static_cast<float>(want));
      }
      ++checked;
    }
  }
  CHECK(checked > 19000); // 301 sets of 64 inputs
  // The default thresholds cover every code.
  const DirectPCoefficients d = sets.front();
  for (int c = 0; c <= 7; ++c)
    CHECK(fa4jit::device::directpThresholdCode(d, c == 0 ? -inf : d.theta[c - 1]) == c);
}
