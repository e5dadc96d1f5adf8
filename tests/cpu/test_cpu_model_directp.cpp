#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>

#include "cpu_model_fixtures.h"
#include "fa4jit/codegen/classifier_fit.h"
#include "fa4jit/codegen/formats.h"
#include "fa4jit/cpu/model.h"
#include "fa4jit/cpu/reference.h"

using namespace fa4jit;
using namespace fa4jit::cpu;
using namespace fa4jit::cpu::testing;

namespace {

AttentionSpec directpSpec(ClassifierKind kind, int d) {
  AttentionSpec s;
  s.route = Route::DirectP;
  s.head_dim = d;
  s.classifier.kind = kind;
  s.classifier.alpha = 2.0f;
  s.classifier.beta = 2.75f;
  return s;
}

// Round-to-nearest E2M1 magnitude code of p in double, ties to the even code.
int nearestCode(double p) {
  int best = 0;
  for (int c = 1; c < 8; ++c) {
    const double dc = std::fabs(p - formats::kE2M1Magnitude[c]);
    const double db = std::fabs(p - formats::kE2M1Magnitude[best]);
    if (dc < db || (dc == db && c % 2 == 0))
      best = c;
  }
  return best;
}

// The thresholds sit on the 2^-7 grid (< 0.003 from log2 of a midpoint: 0.2% of p) and y is
// compared in FP16 (2^-11 relative): within 0.5% of a midpoint either code is the classifier's.
bool nearBoundary(double p) {
  for (double b : {0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0})
    if (std::fabs(p - b) < 5e-3 * b)
      return true;
  return false;
}

} // namespace

TEST_CASE("directp threshold codes equal exp2 + round to nearest", "[cpu_model][directp]") {
  OwnedProblem p = gaussianProblem({1, 1, 1, 32, 1000, 128}, 1.0, 41);
  const AttentionSpec spec = directpSpec(ClassifierKind::Threshold, 128);
  int checked = 0;
  for (int row : {0, 13, 31}) {
    const RowTrace t = traceRow(spec, p, {0, 0, row});
    for (int j = 0; j < 1000; ++j) {
      const int eb = t.block_exponent[j / 32];
      REQUIRE(eb != kNoVisibleKey);
      const double y = static_cast<double>(t.x[j] - static_cast<float>(eb));
      const double e = std::exp2(y);
      if (nearBoundary(e))
        continue;
      CHECK(t.code[j] == nearestCode(e));
      ++checked;
    }
  }
  CHECK(checked > 2900);
}

TEST_CASE("directp block exponents, fed P and the normalizer", "[cpu_model][directp]") {
  OwnedProblem p = gaussianProblem({1, 2, 1, 64, 333, 64}, 1.0, 42);
  for (ClassifierKind kind : {ClassifierKind::Threshold, ClassifierKind::Affine, ClassifierKind::Mixed}) {
    const AttentionSpec spec = directpSpec(kind, 64);
    const RowTrace t = traceRow(spec, p, {0, 1, 40});
    const int tiles = (333 + 63) / 64;
    REQUIRE(static_cast<int>(t.tile_m.size()) == tiles);
    REQUIRE(t.block_exponent.size() == 11);
    double l = 0;
    for (int tile = 0; tile < tiles; ++tile) {
      double tile_sum = 0;
      for (int b = tile * 2; b < std::min(11, tile * 2 + 2); ++b) {
        // From t - m, not from x = fma(acc, mul, -m): the block holding the row max sees exactly
        // 0 there, at floor()'s step (NUMERICS.md §2.3).
        float bmax = -INFINITY;
        for (int j = b * 32; j < std::min(333, b * 32 + 32); ++j)
          bmax = std::max(bmax, t.t[j]);
        CHECK(t.block_exponent[b] == static_cast<int>(std::floor(bmax - t.tile_m[tile])) - 2);
        if (bmax == t.tile_m[tile])
          CHECK(t.block_exponent[b] == -2);
        bool nonzero = false;
        for (int j = b * 32; j < std::min(333, b * 32 + 32); ++j) {
          const float want = formats::e4m3ToFloat(formats::floatToE4M3(
              std::ldexp(formats::kE2M1Magnitude[t.code[j]], t.block_exponent[b] + 8)));
          CHECK(t.p_fed[j] == want);
          tile_sum += t.p_fed[j];
          nonzero |= t.code[j] != 0;
        }
        CHECK(nonzero); // a block's largest key never gets code 0
      }
      l += tile_sum * std::exp2(static_cast<double>(t.tile_m[tile]) - t.m);
    }
    CHECK(t.l == Approx(l).epsilon(1e-5));
  }
}

TEST_CASE("directp causal: masked keys feed zero, fully masked rows are O = 0, LSE = -inf", "[cpu_model][directp]") {
  OwnedProblem p = gaussianProblem({1, 2, 1, 100, 70, 64}, 1.0, 43);
  AttentionSpec spec = directpSpec(ClassifierKind::Threshold, 64);
  spec.causal = true;
  ModelOptions o;
  o.trace = {{0, 0, 40}};
  auto m = runRouteModel(spec, p.problem, o);
  REQUIRE_OK(m);
  const AttentionResult &r = m->result;
  for (int h = 0; h < 2; ++h)
    for (int i = 0; i < 100; ++i) {
      const int visible = causalVisibleKeys(i, 100, 70);
      const double lse = r.lse[r.rowIndex(0, h, i)];
      double norm = 0;
      for (int d = 0; d < 64; ++d) {
        REQUIRE(std::isfinite(r.oRow(0, h, i)[d]));
        norm += std::fabs(r.oRow(0, h, i)[d]);
      }
      if (visible == 0) {
        CHECK(lse == -INFINITY);
        CHECK(norm == 0);
      } else {
        CHECK(std::isfinite(lse));
        CHECK(norm > 0);
      }
    }
  const RowTrace &t = m->traces[0]; // row 40 sees keys 0..10
  for (int j = 11; j < 70; ++j) {
    CHECK(t.p_fed[j] == 0.0f);
    CHECK(t.code[j] == 0);
  }
  CHECK(t.block_exponent[1] == kNoVisibleKey);
  CHECK(t.tile_m.size() == 2);
}

TEST_CASE("directp native V widening: unshifted P and exact V", "[cpu_model][directp]") {
  OwnedProblem p = gaussianProblem({1, 1, 1, 16, 256, 128}, 1.0, 44);
  AttentionSpec e4 = directpSpec(ClassifierKind::Threshold, 128);
  AttentionSpec native = e4;
  native.operands.v_widening = Widening::Native;
  ModelOptions o;
  o.trace = {{0, 0, 3}};
  auto a = runRouteModel(e4, p.problem, o);
  auto b = runRouteModel(native, p.problem, o);
  REQUIRE_OK(a);
  REQUIRE_OK(b);
  const RowTrace &ta = a->traces[0], &tb = b->traces[0];
  CHECK(ta.code == tb.code);
  for (int j = 0; j < 256; ++j)
    CHECK(tb.p_fed[j] == std::ldexp(formats::kE2M1Magnitude[tb.code[j]], tb.block_exponent[j / 32]));
  CHECK(ta.lse == Approx(tb.lse).epsilon(1e-5)); // LSE removes the P offset of the E4M3 feed
  CHECK(compareOutputs(a->result, b->result).cosine > 0.9999);
}

namespace {

AttentionSpec fp16ScoresSpec(int d, bool fp16) {
  AttentionSpec s;
  s.route = Route::DirectP;
  s.head_dim = d;
  s.classifier.kind = ClassifierKind::Piecewise;
  s.tile.shape.block_n = 96;
  s.tile.softmax.scores_fp16 = fp16;
  s.operands.qk_widen_shift = fp16 ? (d <= 128 ? 7 : 8) : 3;
  return s;
}

double meanCosine(const AttentionResult &a, const AttentionResult &b) {
  double sum = 0;
  int n = 0;
  for (int h = 0; h < a.shape.heads_q; ++h)
    for (std::size_t r = 0; r < a.rows.size(); ++r, ++n)
      sum += cosine(a.oRow(0, h, static_cast<int>(r)), b.oRow(0, h, static_cast<int>(r)), a.shape.head_dim);
  return sum / n;
}

// The mean cosines against FP64 of two specs' models over the rows.
std::pair<double, double> cosinesVsFp64(const AttentionSpec &a, const AttentionSpec &b, const OwnedProblem &p,
                                        const std::vector<int> &rows) {
  ModelOptions o;
  o.selection.rows = rows;
  auto ma = runRouteModel(a, p.problem, o), mb = runRouteModel(b, p.problem, o);
  REQUIRE_OK(ma);
  REQUIRE_OK(mb);
  ReferenceOptions ro;
  ro.selection = o.selection;
  auto ref = referenceAttention(p.problem, ro);
  REQUIRE_OK(ref);
  return {meanCosine(ma->result, *ref), meanCosine(mb->result, *ref)};
}

} // namespace

// TileSpec::scores_fp16 (NUMERICS.md §2.1, §2.3): S is an FP16 accumulator, and the piecewise
// classifier's input y_h = FP16(fma(acc_h, FP16(mul), FP16(bias))) in one rounding, except in a
// tile some row of the 64-row group does not see whole (here the last, partial one: keys 672 on),
// which forms y in FP32 as the kernel's masked arm does.
TEST_CASE("directp FP16 scores: FP16 accumulators, the FP16 classifier input, accuracy kept", "[cpu_model][directp]") {
  OwnedProblem p = gaussianProblem({1, 2, 1, 64, 700, 128}, 2.0, 77);
  const AttentionSpec half = fp16ScoresSpec(128, true), full = fp16ScoresSpec(128, false);
  int differ = 0, forms_differ = 0;
  const device::DirectPCoefficients k = fit::directpCoefficients(half.classifier);
  for (int row : {5, 20, 40, 63}) {
    const RowTrace th = traceRow(half, p, {0, 1, row}), tf = traceRow(full, p, {0, 1, row});
    for (int j = 0; j < 700; ++j) {
      CHECK(device::roundToHalf(th.acc[j]) == th.acc[j]); // an FP16 value
      CHECK(th.t[j] == th.acc[j] * th.score_mul);         // exact: 11 x 24 significant bits
      const float bias = -(th.tile_m[j / 96] + static_cast<float>(th.block_exponent[j / 32]));
      const double y_h = device::roundToHalf(static_cast<double>(th.acc[j]) * device::roundToHalf(th.score_mul) +
                                             device::roundToHalf(bias));
      const float y_f = std::fma(th.acc[j], th.score_mul, bias);
      CHECK(th.code[j] == device::directpPiecewiseCode(k, j < 672 ? static_cast<float>(y_h) : y_f));
      differ += th.code[j] != tf.code[j] ? 1 : 0;
      forms_differ += device::directpPiecewiseCode(k, static_cast<float>(y_h)) != device::directpPiecewiseCode(k, y_f);
    }
  }
  CHECK(forms_differ > 0); // (so the checks above tell the two forms apart)
  // FP16 and FP32 scores differ where y sits within the FP16 roundings of a code boundary.
  CHECK(differ < 4 * 700 / 20);

  const auto [cos_half, cos_full] = cosinesVsFp64(half, full, p, evenRows(64, 16));
  INFO("cosine vs FP64: FP16 scores " << cos_half << ", FP32 scores " << cos_full);
  CHECK(cos_half > 0.93); // (sigma 2: scores of std 4 in log2 units; 0.9399 measured)
  CHECK(std::fabs(cos_half - cos_full) < 2e-3);
}

// TileSpec::pieces_from_scores: each piece of the piecewise classifier read from S, z =
// sat(FP16(acc_h * FP16(a mul) + FP16(fma(a, bias, b)))), in the tiles that form y in FP16 (the
// others as before); the codes move where the two roundings differ at a boundary, the accuracy
// does not.
TEST_CASE("directp FP16 scores: the piecewise classifier's pieces folded onto S", "[cpu_model][directp]") {
  OwnedProblem p = gaussianProblem({1, 2, 1, 64, 700, 128}, 2.0, 78);
  const AttentionSpec plain = fp16ScoresSpec(128, true);
  AttentionSpec folded = plain;
  folded.tile.softmax.pieces_from_scores = true;
  const device::DirectPCoefficients k = fit::directpCoefficients(folded.classifier);
  int differ = 0, forms_differ = 0;
  for (int row = 0; row < 64; row += 2) { // (the two forms differ on ~0.1% of keys: every other row)
    const RowTrace tf = traceRow(folded, p, {0, 1, row}), tp = traceRow(plain, p, {0, 1, row});
    for (int j = 0; j < 700; ++j) {
      const float bias = -(tf.tile_m[j / 96] + static_cast<float>(tf.block_exponent[j / 32]));
      const int folded_code = device::directpPiecewiseFoldedCode(k, tf.acc[j], tf.score_mul, bias);
      const int y_code = device::directpPiecewiseCode(k, std::fma(tf.acc[j], tf.score_mul, bias));
      CHECK(tf.code[j] == (j < 672 ? folded_code : y_code)); // (keys 672 on: the partial tile, FP32 y)
      differ += tf.code[j] != tp.code[j] ? 1 : 0;
      const double y_h = device::roundToHalf(static_cast<double>(tf.acc[j]) * device::roundToHalf(tf.score_mul) +
                                             device::roundToHalf(bias));
      forms_differ += folded_code != device::directpPiecewiseCode(k, static_cast<float>(y_h)) ? 1 : 0;
    }
  }
  CHECK(forms_differ > 0); // (so the check above tells the folded form from y_h's)
  CHECK(differ < 32 * 700 / 100);
  const auto [cos_folded, cos_plain] = cosinesVsFp64(folded, plain, p, evenRows(64, 16));
  INFO("cosine vs FP64: pieces from S " << cos_folded << ", from y_h " << cos_plain);
  CHECK(std::fabs(cos_folded - cos_plain) < 2e-3);
  // A head whose slope times the multiplier overflows FP16 forms y in FP32 everywhere (slopes
  // above 1 only: the default's are 0.09 and 0.29).
  device::DirectPCoefficients steep = k;
  steep.piece[2] = 2.0f;
  CHECK(device::directpHalfMultiplierFits(steep, 40000.0f, false));
  CHECK_FALSE(device::directpHalfMultiplierFits(steep, 40000.0f, true));
  CHECK(device::directpHalfMultiplierFits(k, 40000.0f, true));
}

// The widening shift bounds |S| below FP16's 65504 whatever the inputs: Q = K = one constant, the
// largest |acc| there is (head_dim * 20^2 at shift 7; 256 * 10.5^2 at 8), stays finite.
TEST_CASE("directp FP16 scores: the largest accumulator stays finite", "[cpu_model][directp]") {
  for (int d : {64, 128, 256}) {
    INFO("head_dim " << d);
    OwnedProblem p = gaussianProblem({1, 1, 1, 4, 64, d}, 1.0, 5);
    std::fill(p.q.begin(), p.q.end(), 3.0f);
    std::fill(p.k.begin(), p.k.end(), -3.0f);
    const RowTrace t = traceRow(fp16ScoresSpec(d, true), p, {0, 0, 1});
    for (float a : t.acc) {
      CHECK(std::isfinite(a));
      CHECK(std::fabs(a) > 0.5f * 61952.0f * d / 128.0f / (d == 256 ? 4.0f : 1.0f));
    }
    for (float v : t.o)
      CHECK(std::isfinite(v));
  }
}

// The price of the shift: Q/K entries below ~1/1344 of their head's largest widen into E4M3's
// subnormals at 2^-7 (at 2^-3: 1/21504). Heads whose largest entries sit in a few outlier
// channels (r times the rest; Q's outlier channel meets zeros in K and K's in Q, so the scores
// stay those of the Gaussian rest) lose the rest's precision first: nothing measurable up to
// r = 300, -0.006 in cosine at r = 3000.
TEST_CASE("directp FP16 scores: accuracy with outlier channels in Q and K", "[cpu_model][directp]") {
  for (float r : {30.0f, 300.0f, 3000.0f}) {
    OwnedProblem p = gaussianProblem({1, 1, 1, 256, 512, 128}, 1.0, 91);
    for (int i = 0; i < 256; ++i) {
      p.q[i * 128 + 0] = r * (i % 2 ? 1.0f : -1.0f);
      p.q[i * 128 + 1] = 0.0f;
    }
    for (int j = 0; j < 512; ++j) {
      p.k[j * 128 + 1] = r * (j % 3 ? 1.0f : -1.0f);
      p.k[j * 128 + 0] = 0.0f;
    }
    const auto [cos_half, cos_full] =
        cosinesVsFp64(fp16ScoresSpec(128, true), fp16ScoresSpec(128, false), p, evenRows(256, 32));
    INFO("outlier ratio " << r << ": cosine vs FP64, FP16 scores " << cos_half << ", FP32 scores " << cos_full);
    // Measured: 0.91723 / 0.91741 (r 30), 0.92854 / 0.92855 (300), 0.92312 / 0.92938 (3000).
    CHECK(cos_half > cos_full - (r <= 300.0f ? 1e-3 : 1e-2));
  }
}
