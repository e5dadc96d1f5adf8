#include "fa4jit/codegen/classifier_fit.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "expected_checks.h"
#include "fa4jit/codegen/formats.h"

using namespace fa4jit;
using namespace fa4jit::fit;

namespace {


ScoreRows gaussianRows(int seqlen, double sigma, bool causal, uint64_t seed) {
  GaussianScoreModel m;
  m.seqlen = seqlen;
  m.score_sigma = sigma;
  m.causal = causal;
  m.seed = seed;
  auto r = sampleGaussianScores(m);
  REQUIRE_OK(r);
  return *r;
}

std::string errorOf(llvm::StringRef text) {
  auto r = parseCalibrationScores(text, "cal.txt");
  REQUIRE_FALSE(static_cast<bool>(r));
  return llvm::toString(r.takeError());
}

} // namespace

TEST_CASE("coefficients map the spec's classifier to the device constants", "[classifier_fit]") {
  ClassifierSpec c;
  c.kind = ClassifierKind::Mixed;
  c.alpha = 1.5f;
  c.beta = 2.25f;
  c.y_split = 0.5f;
  const device::DirectPCoefficients k = directpCoefficients(c);
  CHECK(k.kind == 2);
  CHECK(k.alpha == 1.5f);
  CHECK(k.beta == 2.25f);
  CHECK(k.y_split == 0.5f);
  CHECK(k.theta[0] == -2.0f);
  c.kind = ClassifierKind::Threshold;
  CHECK(directpCoefficients(c).kind == 0);
}

TEST_CASE("classifier fit is deterministic", "[classifier_fit]") {
  const ScoreRows a = gaussianRows(2048, 1.0, false, 7);
  const ScoreRows b = gaussianRows(2048, 1.0, false, 7);
  CHECK(a.t == b.t);
  for (ClassifierKind kind : {ClassifierKind::Affine, ClassifierKind::Mixed}) {
    FitOptions o;
    o.kind = kind;
    auto r1 = fitClassifier(a, o);
    auto r2 = fitClassifier(b, o);
    REQUIRE_OK(r1);
    REQUIRE_OK(r2);
    CHECK(r1->classifier.kind == kind);
    CHECK(r1->classifier.alpha == r2->classifier.alpha);
    CHECK(r1->classifier.beta == r2->classifier.beta);
    CHECK(r1->classifier.y_split == r2->classifier.y_split);
    CHECK(r1->objective == r2->objective);
    CHECK(r1->evaluations == r2->evaluations);
  }
}

TEST_CASE("fitted beta beats poor betas and the fit honours its options", "[classifier_fit]") {
  const ScoreRows rows = gaussianRows(4096, 1.0, false, 3);
  FitOptions o;
  o.fit_alpha = false; // alpha = 2, beta fitted (the affine classifier with a fixed alpha)
  auto r = fitClassifier(rows, o);
  REQUIRE_OK(r);
  CHECK(r->classifier.alpha == 2.0f);
  CHECK(r->classifier.beta > 2.0f);
  CHECK(r->classifier.beta < 3.5f);
  CHECK(r->objective == Approx(classifierObjective(r->classifier, rows)).epsilon(1e-12));
  for (float poor : {0.0f, 1.0f, 4.0f, 5.0f}) {
    ClassifierSpec c = r->classifier;
    c.beta = poor;
    CHECK(classifierObjective(c, rows) > r->objective);
  }
  // Fitting alpha too can only help; the threshold classifier (exp2 + RTN) stays better.
  FitOptions free;
  auto rf = fitClassifier(rows, free);
  REQUIRE_OK(rf);
  CHECK(rf->objective <= r->objective);
  CHECK(rf->threshold_objective < rf->objective);
  // The squared-error objective is minimized in its own right.
  FitOptions mse = o;
  mse.objective = FitObjective::RelativeSquaredError;
  auto rm = fitClassifier(rows, mse);
  REQUIRE_OK(rm);
  CHECK(classifierObjective(rm->classifier, rows, FitObjective::RelativeSquaredError) <=
        classifierObjective(r->classifier, rows, FitObjective::RelativeSquaredError));
}

TEST_CASE("mixed fit respects the native exp2 budget", "[classifier_fit]") {
  const ScoreRows rows = gaussianRows(2048, 1.0, true, 5);
  FitOptions o;
  o.kind = ClassifierKind::Mixed;
  auto r = fitClassifier(rows, o);
  REQUIRE_OK(r);
  CHECK(r->native_fraction <= o.max_native_fraction);
  CHECK(r->native_fraction > 0);
  o.max_native_fraction = 1.0; // no budget: the most native exp2 wins
  auto all = fitClassifier(rows, o);
  REQUIRE_OK(all);
  CHECK(all->objective <= r->objective);
  o.max_native_fraction = 0.0; // no split fits: the affine classifier alone
  o.y_splits = {-1.0f};
  auto none = fitClassifier(rows, o);
  REQUIRE_OK(none);
  CHECK(none->classifier.y_split == 3.0f);
  CHECK(none->native_fraction == 0.0);
}

TEST_CASE("fit input errors", "[classifier_fit]") {
  FitOptions o;
  o.kind = ClassifierKind::Threshold;
  auto r = fitClassifier(gaussianRows(64, 1.0, false, 1), o);
  REQUIRE_FALSE(static_cast<bool>(r));
  CHECK_THAT(llvm::toString(r.takeError()), Catch::Contains("no coefficients to fit"));
  GaussianScoreModel m;
  m.seqlen = 0;
  auto s = sampleGaussianScores(m);
  REQUIRE_FALSE(static_cast<bool>(s));
  CHECK_THAT(llvm::toString(s.takeError()), Catch::Contains("seqlen >= 1"));
}

TEST_CASE("calibration files parse", "[classifier_fit][calibration]") {
  auto cal = parseCalibrationScores("# captured from layer 3\n"
                                    "fa4jit-calibration 1\n"
                                    "seqlen 4\n"
                                    "head_dim 64\n"
                                    "\n"
                                    "scores\n"
                                    "1.5 -2\t0.25 -inf  # a masked key\n"
                                    "0 1e1 -3.5 2\n",
                                    "cal.txt");
  REQUIRE_OK(cal);
  CHECK(cal->head_dim == 64);
  CHECK(cal->seqlen == 4);
  CHECK(cal->rows() == 2);
  CHECK(cal->scores[1] == -2.0f);
  CHECK(std::isinf(cal->scores[3]));
  CHECK(cal->scores[5] == 10.0f);
  const ScoreRows rows = scoresFromCalibration(*cal);
  CHECK(rows.t[0] == Approx(1.5 / 8.0 * M_LOG2E)); // default scale 1/sqrt(64)
  CHECK(std::isinf(rows.t[3]));
}

TEST_CASE("calibration file errors name the line", "[classifier_fit][calibration]") {
  const std::string head = "fa4jit-calibration 1\nhead_dim 64\nseqlen 3\nscores\n";
  CHECK_THAT(errorOf(head + "1 2 3\n1 nan 3\n"), Catch::Contains("cal.txt:6: score 2 is NaN"));
  CHECK_THAT(errorOf(head + "1 2 3\ninf 2 3\n"), Catch::Contains("cal.txt:6: score 1 is +inf"));
  CHECK_THAT(errorOf(head + "1 2 3 4\n"), Catch::Contains("cal.txt:5: row has 4 scores, expected seqlen = 3"));
  CHECK_THAT(errorOf(head + "1 x 3\n"), Catch::Contains("cal.txt:5: score 2 'x' is not a number"));
  CHECK_THAT(errorOf("head_dim 64\n"), Catch::Contains("cal.txt:1: expected the header line"));
  CHECK_THAT(errorOf("fa4jit-calibration 1\nscores\n"), Catch::Contains("'scores' before"));
  CHECK_THAT(errorOf("fa4jit-calibration 1\nwidth 3\n"), Catch::Contains("unknown header key 'width'"));
  CHECK_THAT(errorOf("fa4jit-calibration 1\nhead_dim 0\n"), Catch::Contains("head_dim must be a positive integer"));
  CHECK_THAT(errorOf(head), Catch::Contains("no score rows"));
  CHECK_THAT(errorOf(""), Catch::Contains("empty calibration file"));
  auto missing = readCalibrationFile("/nonexistent/fa4jit/cal.txt");
  REQUIRE_FALSE(static_cast<bool>(missing));
  CHECK_THAT(llvm::toString(missing.takeError()), Catch::Contains("cannot read calibration file /nonexistent/fa4jit/cal.txt"));
}

TEST_CASE("objective equals a direct pass over every key", "[classifier_fit]") {
  // Independent of the binary-search evaluation: per key code, P = E2M1[c] 2^e_b, cosine and
  // relative squared error of the normalized weights.
  const ScoreRows rows = gaussianRows(700, 1.3, true, 9);
  auto direct = [&](const ClassifierSpec &c, FitObjective kind) {
    const device::DirectPCoefficients k = directpCoefficients(c);
    double total = 0;
    int counted = 0;
    for (int r = 0; r < rows.rows(); ++r) {
      const float *t = rows.t.data() + r * rows.row_length;
      float m = -INFINITY;
      for (int j = 0; j < rows.row_length; ++j)
        m = std::max(m, t[j]);
      std::vector<double> p(rows.row_length, 0.0), w(rows.row_length, 0.0);
      for (int b = 0; b < rows.row_length; b += 32) {
        float bmax = -INFINITY;
        for (int j = b; j < std::min(rows.row_length, b + 32); ++j)
          bmax = std::max(bmax, t[j] - m);
        if (bmax == -INFINITY)
          continue;
        const int eb = static_cast<int>(std::floor(bmax)) - 2;
        for (int j = b; j < std::min(rows.row_length, b + 32); ++j)
          if (t[j] != -INFINITY) {
            p[j] = formats::kE2M1Magnitude[device::directpCode(k, (t[j] - m) - static_cast<float>(eb))] * std::ldexp(1.0, eb);
            w[j] = std::exp2(static_cast<double>(t[j] - m));
          }
      }
      double sp = 0, sw = 0;
      for (int j = 0; j < rows.row_length; ++j) {
        sp += p[j];
        sw += w[j];
      }
      double dot = 0, pp = 0, ww = 0, err = 0;
      for (int j = 0; j < rows.row_length; ++j) {
        dot += p[j] / sp * w[j] / sw;
        pp += p[j] / sp * p[j] / sp;
        ww += w[j] / sw * w[j] / sw;
        err += (p[j] / sp - w[j] / sw) * (p[j] / sp - w[j] / sw);
      }
      total += kind == FitObjective::Cosine ? 1 - dot / std::sqrt(pp * ww) : err / ww;
      ++counted;
    }
    return total / counted;
  };
  ClassifierSpec c;
  for (ClassifierKind kind : {ClassifierKind::Threshold, ClassifierKind::Affine, ClassifierKind::Mixed})
    for (float beta : {1.0f, 2.5f, 3.0f})
      for (FitObjective obj : {FitObjective::Cosine, FitObjective::RelativeSquaredError}) {
        c.kind = kind;
        c.alpha = 1.75f;
        c.beta = beta;
        c.y_split = 0.5f;
        INFO("kind " << toString(kind) << " beta " << beta);
        CHECK(classifierObjective(c, rows, obj) == Approx(direct(c, obj)).epsilon(1e-9).margin(1e-12));
      }
}

TEST_CASE("a calibration's logit scale is the within-row spread of score * scale", "[classifier_fit][auto]") {
  fit::CalibrationScores cal;
  cal.head_dim = 64;
  cal.seqlen = 4;
  cal.softmax_scale = 0.5f;
  // Row 0: 10 +- 2 (std 2 before scaling, 1 after); row 1: a shifted copy (softmax ignores the
  // shift); row 2: one visible key only (no spread to measure, skipped).
  const float inf = INFINITY;
  cal.scores = {8, 12, 8, 12, 108, 112, 108, 112, 5, -inf, -inf, -inf};
  CHECK(fit::calibrationLogitStd(cal) == Approx(1.0).epsilon(1e-12));
  cal.softmax_scale = 0.0f; // 1/sqrt(64)
  CHECK(fit::calibrationLogitStd(cal) == Approx(2.0 / 8.0).epsilon(1e-12));
  cal.scores = {1, -inf, -inf, -inf};
  CHECK(fit::calibrationLogitStd(cal) == 0.0);
}
