// The nvfp8 model on FP16 scores (TileSpec::scores_fp16, NUMERICS.md §2.2-§2.3): the row max on
// the FP16 exponents' grid, P from x_h = FP16(acc_h * FP16(mul) + (off - m)) and 2^x_h in FP16
// where a row's exponents fit FP16, from FP32 exponents elsewhere, and the accuracy against FP32
// scores.
#include <catch2/catch.hpp>
#include <cmath>

#include "cpu_model_fixtures.h"
#include "fa4jit/codegen/formats.h"
#include "fa4jit/directp.cuh"
#include "fa4jit/cpu/model.h"
#include "fa4jit/cpu/reference.h"

using namespace fa4jit;
using namespace fa4jit::cpu;
using namespace fa4jit::cpu::testing;

namespace {

AttentionSpec nvfp8Spec(int d, bool fp16) {
  AttentionSpec s;
  s.route = Route::Nvfp8;
  s.head_dim = d;
  s.tile.shape.block_n = 128;
  s.tile.softmax.scores_fp16 = fp16;
  s.operands.qk_widen_shift = fp16 ? (d <= 128 ? 7 : 8) : 3;
  s.operands.p_offset_log2 = 5;
  s.guard.kind = GuardKind::SampledAnchor;
  s.guard.slack_log2 = 3.0f;
  return s;
}

float e4m3Round(double v) { return formats::e4m3ToFloat(formats::floatToE4M3(static_cast<float>(v))); }

// What the kernel feeds for key j of a tile whose row max is m: the FP16 form (HFMA2, MUFU.EX2.F16)
// or the FP32 one (FFMA, MUFU.EX2, rounded to FP16), both then E4M3.
float fedFp16Form(const RowTrace &t, int j, float m) {
  const double x_h = device::roundToHalf(static_cast<double>(t.acc[j]) * device::roundToHalf(t.score_mul) + (5.0f - m));
  return e4m3Round(device::roundToHalf(std::exp2(x_h)));
}
float fedFp32Form(const RowTrace &t, int j, float m) {
  return e4m3Round(device::roundToHalf(std::exp2(std::fma(t.acc[j], t.score_mul, 5.0f - m))));
}

double meanCosineVsFp64(const AttentionSpec &spec, const OwnedProblem &p, const std::vector<int> &rows) {
  ModelOptions o;
  o.selection.rows = rows;
  auto m = runRouteModel(spec, p.problem, o);
  REQUIRE_OK(m);
  ReferenceOptions ro;
  ro.selection = o.selection;
  auto ref = referenceAttention(p.problem, ro);
  REQUIRE_OK(ref);
  double sum = 0;
  int n = 0;
  for (int h = 0; h < p.problem.shape.heads_q; ++h)
    for (std::size_t r = 0; r < rows.size(); ++r, ++n)
      sum += cosine(m->result.oRow(0, h, static_cast<int>(r)), ref->oRow(0, h, static_cast<int>(r)),
                    p.problem.shape.head_dim);
  return sum / n;
}

} // namespace

TEST_CASE("nvfp8 FP16 scores: m on the FP16 grid, P from FP16 exponents, l from the fed values", "[cpu_model]") {
  OwnedProblem p = gaussianProblem({1, 2, 1, 64, 700, 128}, 1.5, 57);
  const AttentionSpec spec = nvfp8Spec(128, true);
  int forms_differ = 0;
  for (int row : {3, 30, 63}) {
    const RowTrace t = traceRow(spec, p, {0, 1, row});
    REQUIRE(t.tile_m.size() == 6); // 700 keys in tiles of 128
    double l = 0;
    for (int tile = 0; tile < 6; ++tile) {
      const float m = t.tile_m[tile];
      // off - m a multiple of 2^-4, at most 2^-4 above the largest t seen so far
      const float v = 5.0f - m;
      CHECK(v * 16.0f == std::floor(v * 16.0f));
      float seen = -INFINITY;
      for (int j = 0; j < std::min(700, tile * 128 + 128); ++j)
        seen = std::max(seen, t.t[j]);
      CHECK(m >= seen - 3.0f); // (the guard's slack)
      CHECK(std::fabs(v) < device::kHalfExponentAddendLimit);
      double tile_sum = 0;
      for (int j = tile * 128; j < std::min(700, tile * 128 + 128); ++j) {
        CHECK(device::roundToHalf(t.acc[j]) == t.acc[j]);
        CHECK(t.p_fed[j] == fedFp16Form(t, j, m));
        forms_differ += fedFp16Form(t, j, m) != fedFp32Form(t, j, m) ? 1 : 0;
        tile_sum += t.p_fed[j];
      }
      l += tile_sum * std::exp2(static_cast<double>(m) - t.m);
    }
    CHECK(t.l == Approx(l).epsilon(1e-5));
  }
  CHECK(forms_differ > 0); // (so the checks above tell the two forms apart)
}

// Logits of ~|1000| put |off - m| beyond 128: those rows take FP32 exponents (rounded to FP16
// before E4M3), and m stays on the grid (v < 2^17).
TEST_CASE("nvfp8 FP16 scores: rows beyond FP16's exponent range take FP32 exponents", "[cpu_model]") {
  OwnedProblem p = gaussianProblem({1, 1, 1, 32, 300, 128}, 17.0, 58);
  const AttentionSpec spec = nvfp8Spec(128, true);
  int fp32_rows = 0;
  for (int row = 0; row < 32; row += 4) {
    const RowTrace t = traceRow(spec, p, {0, 0, row});
    for (int tile = 0; tile < 3; ++tile) {
      const float m = t.tile_m[tile];
      const bool half = std::fabs(5.0f - m) < device::kHalfExponentAddendLimit;
      fp32_rows += half ? 0 : 1;
      for (int j = tile * 128; j < std::min(300, tile * 128 + 128); ++j)
        CHECK(t.p_fed[j] == (half ? fedFp16Form(t, j, m) : fedFp32Form(t, j, m)));
    }
    for (float v : t.o)
      CHECK(std::isfinite(v));
  }
  CHECK(fp32_rows > 0);
}

// FP16 scores move nvfp8's accuracy against FP64 by less than its E4M3 noise (measured -1e-5 to
// +1.6e-3): the exponents'
// roundings (x_h to 2^-7 near the row max, FP16(mul)'s 2^-12) are below P's E4M3 step of 2^-3.
TEST_CASE("nvfp8 FP16 scores: accuracy against FP64 as with FP32 scores", "[cpu_model]") {
  for (int d : {64, 128, 256}) {
    for (double sigma : {1.0, 2.0}) {
      OwnedProblem p = gaussianProblem({1, 2, 1, 128, 600, d}, sigma, 59 + d);
      const double cos_half = meanCosineVsFp64(nvfp8Spec(d, true), p, evenRows(128, 16));
      const double cos_full = meanCosineVsFp64(nvfp8Spec(d, false), p, evenRows(128, 16));
      INFO("D" << d << " sigma " << sigma << ": cosine vs FP64, FP16 scores " << cos_half << ", FP32 " << cos_full);
      CHECK(cos_half > (sigma == 1.0 ? 0.985 : 0.91)); // (measured 0.9898-0.9906, 0.9201-0.9489 at sigma 2)
      CHECK(std::fabs(cos_half - cos_full) < 3e-3);
    }
  }
}

// The FP16 polynomial of exp2_poly_tiles (score_terms.cuh), over every FP16 exponent the kernels
// can form (x_h <= off + slack <= 8; below -14 the clamp): within 6e-4 of 2^x relative (the
// evaluation's own bound, measured 5.6e-4; 2^x correctly rounded to FP16 is within 4.9e-4) where
// 2^x is an FP16 normal, and E4M3 of it equal to E4M3 of 2^x except at a rounding boundary.
TEST_CASE("nvfp8 FP16 scores: 2^x as the FP16 polynomial", "[cpu_model]") {
  double worst = 0;
  int e4m3_differs = 0, n = 0;
  for (uint32_t bits = 0; bits < 0x10000u; ++bits) {
    const double x = device::halfFromBits(bits);
    if (!(x >= -14.0 && x <= 9.0))
      continue;
    const double p = device::exp2PolyHalf(x), ref = std::exp2(x);
    worst = std::max(worst, std::fabs(p - ref) / ref);
    e4m3_differs += e4m3Round(p) != e4m3Round(ref) ? 1 : 0;
    ++n;
  }
  INFO("largest relative error " << worst << ", E4M3 differs on " << e4m3_differs << " of " << n);
  CHECK(worst < 6e-4);
  CHECK(e4m3_differs < n / 50); // (one E4M3 step where the error crosses a rounding boundary: measured 0.2%)
  // Below the clamp: 2^-14, which E4M3 flushes to 0, as it flushes 2^x there; a masked key's -inf too.
  for (double x : {-14.5, -30.0, -1000.0, -65504.0, -HUGE_VAL}) {
    CHECK(device::exp2PolyHalf(x) == std::ldexp(1.0, -14));
    CHECK(e4m3Round(device::exp2PolyHalf(x)) == 0.0f);
  }
  CHECK(std::isnan(device::exp2PolyHalf(NAN)));
  CHECK(device::exp2PolyHalf(0.0) == 1.0);
  CHECK(device::exp2PolyHalf(8.0) == 256.0); // (j = 8, f = 0: c0 = 1 exactly)
}

// The model takes the polynomial for exactly the keys exp2_poly_tiles names (the first 8 n of each
// tile), the MUFU's form for the rest, and its accuracy against FP64 moves by less than E4M3's noise.
TEST_CASE("nvfp8 FP16 scores: the polynomial's keys, and its accuracy", "[cpu_model]") {
  OwnedProblem p = gaussianProblem({1, 2, 1, 64, 700, 128}, 1.5, 61);
  AttentionSpec spec = nvfp8Spec(128, true);
  spec.tile.softmax.exp2_poly_tiles = 5; // keys 0..39 of each tile of 128
  int poly_differs = 0;
  for (int row = 0; row < 64; row += 3) {
    const RowTrace t = traceRow(spec, p, {0, 1, row});
    for (int tile = 0; tile < 6; ++tile) {
      const float m = t.tile_m[tile];
      for (int j = tile * 128; j < std::min(700, tile * 128 + 128); ++j) {
        const double x_h =
            device::roundToHalf(static_cast<double>(t.acc[j]) * device::roundToHalf(t.score_mul) + (5.0f - m));
        const bool poly = j % 128 < 40;
        CHECK(t.p_fed[j] == (poly ? e4m3Round(device::exp2PolyHalf(x_h)) : fedFp16Form(t, j, m)));
        poly_differs += poly && e4m3Round(device::exp2PolyHalf(x_h)) != fedFp16Form(t, j, m) ? 1 : 0;
      }
    }
  }
  CHECK(poly_differs > 0); // (so the check tells the two forms apart)
  for (int d : {64, 128}) {
    OwnedProblem q = gaussianProblem({1, 2, 1, 128, 600, d}, 1.0, 62 + d);
    AttentionSpec all = nvfp8Spec(d, true);
    all.tile.softmax.exp2_poly_tiles = 16;
    const double cos_poly = meanCosineVsFp64(all, q, evenRows(128, 16));
    const double cos_mufu = meanCosineVsFp64(nvfp8Spec(d, true), q, evenRows(128, 16));
    INFO("D" << d << ": cosine vs FP64, polynomial " << cos_poly << ", MUFU form " << cos_mufu);
    CHECK(std::fabs(cos_poly - cos_mufu) < 5e-4);
  }
}
