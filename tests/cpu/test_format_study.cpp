// The format study (cpu/format_study.h): each Q/K format's round trip, the study model against the
// routes' kernel-exact models at the two presets, and that it tells the formats apart.
#include "expected_checks.h"

#include "fa4jit/codegen/block_formats.h"
#include "fa4jit/codegen/formats.h"
#include "fa4jit/codegen/gaussian_rng.h"
#include "fa4jit/codegen/heuristics.h"
#include "fa4jit/cpu/format_study.h"
#include "fa4jit/cpu/model.h"

#include <catch2/catch.hpp>

#include <cmath>

using namespace fa4jit;
using namespace fa4jit::cpu;

namespace {

std::vector<float> gaussianValues(std::size_t n, double sigma, uint64_t seed) {
  GaussianRng rng(seed);
  std::vector<float> v(n);
  for (float &x : v)
    x = float(rng.normal() * sigma);
  return v;
}

struct Problem {
  int seqlen, dim;
  std::vector<float> q, k, v;
  AttentionProblem p;
  Problem(int s, int d, double sigma, uint64_t seed)
      : seqlen(s), dim(d), q(gaussianValues(std::size_t(s) * d, sigma, seed)),
        k(gaussianValues(std::size_t(s) * d, sigma, seed + 1)), v(gaussianValues(std::size_t(s) * d, sigma, seed + 2)) {
    p.shape = {1, 1, 1, s, s, d};
    p.q = TensorRef::contiguous(q.data(), 1, s, d);
    p.k = TensorRef::contiguous(k.data(), 1, s, d);
    p.v = TensorRef::contiguous(v.data(), 1, s, d);
  }
};

ReferenceOptions rowsEvery(int seqlen, int step, bool causal = false) {
  ReferenceOptions o;
  o.causal = causal;
  for (int r = step / 2; r < seqlen; r += step)
    o.selection.rows.push_back(r);
  return o;
}

} // namespace

TEST_CASE("Q/K round trips: nvfp4 and mxfp4 are the exchange quantizers, the FP8 ones stay within E4M3's step",
          "[cpu][formats]") {
  const int rows = 8, cols = 128;
  const std::vector<float> x = gaussianValues(std::size_t(rows) * cols, 3.0, 11);
  const formats::MatrixView view{x.data(), rows, cols, cols, 1};
  auto nv = formats::quantizeNvfp4(view);
  REQUIRE_OK(nv);
  auto nv_trip = roundTripQk(StudyQkFormat::Nvfp4, x.data(), rows, cols);
  REQUIRE_OK(nv_trip);
  auto mx = formats::quantizeMxfp4(view, cols);
  REQUIRE_OK(mx);
  auto mx_trip = roundTripQk(StudyQkFormat::Mxfp4, x.data(), rows, cols);
  REQUIRE_OK(mx_trip);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) {
      CHECK((*nv_trip)[std::size_t(r) * cols + c] == nv->value(r, c));
      CHECK((*mx_trip)[std::size_t(r) * cols + c] == mx->value(r, c));
    }
  for (StudyQkFormat f : {StudyQkFormat::E4m3Row, StudyQkFormat::Mxfp8}) {
    INFO(toString(f));
    auto trip = roundTripQk(f, x.data(), rows, cols);
    REQUIRE_OK(trip);
    for (int r = 0; r < rows; ++r) {
      float amax = 0;
      for (int c = 0; c < cols; ++c)
        amax = std::max(amax, std::fabs(x[std::size_t(r) * cols + c]));
      for (int c = 0; c < cols; ++c) {
        const float a = x[std::size_t(r) * cols + c], b = (*trip)[std::size_t(r) * cols + c];
        // E4M3 rounds to 3 mantissa bits (relative 2^-4) down to its subnormals (2^-9 of 448
        // times the scale, at most amax * 2^-9 * 2 here).
        CHECK(std::fabs(a - b) <= std::fabs(a) * 0.0625f + amax * 0.004f);
      }
    }
  }
  // A row's maximum is exact in E4M3 per row (448 times the row's scale).
  auto row = roundTripQk(StudyQkFormat::E4m3Row, x.data(), 1, cols);
  REQUIRE_OK(row);
  float amax = 0, decoded = 0;
  for (int c = 0; c < cols; ++c)
    if (std::fabs(x[std::size_t(c)]) > amax)
      amax = std::fabs(x[std::size_t(c)]), decoded = std::fabs((*row)[std::size_t(c)]);
  CHECK(decoded == Approx(amax).epsilon(1e-6));

  auto bad = roundTripQk(StudyQkFormat::Mxfp8, x.data(), 2, 48);
  REQUIRE_ERR(bad);
  CHECK_THAT(llvm::toString(bad.takeError()), Catch::Contains("multiple of 32"));
  std::vector<float> nan_row(32, 1.0f);
  nan_row[5] = NAN;
  auto nan = roundTripQk(StudyQkFormat::E4m3Row, nan_row.data(), 1, 32);
  REQUIRE_ERR(nan);
  CHECK_THAT(llvm::toString(nan.takeError()), Catch::Contains("element 5"));
}

TEST_CASE("the study model at the presets agrees with the routes' kernel-exact models", "[cpu][formats]") {
  const Problem prob(512, 128, 1.0, 5);
  for (bool causal : {false, true}) {
    INFO("causal " << causal);
    const ReferenceOptions ro = rowsEvery(512, 16, causal);
    for (auto [route, pv] : {std::pair{Route::Nvfp8, PvFormat::E4m3}, std::pair{Route::DirectP, PvFormat::Mxfp4}}) {
      INFO(toString(route));
      auto study = formatStudyAttention({StudyQkFormat::Nvfp4, pv}, prob.p, ro);
      REQUIRE_OK(study);
      AttentionSpec spec;
      spec.head_dim = 128;
      spec.causal = causal;
      spec.route = route;
      applyRouteNumericsDefaults(spec);
      ModelOptions mo;
      mo.selection = ro.selection;
      auto kernel = runRouteModel(spec, prob.p, mo);
      REQUIRE_OK(kernel);
      auto ref = referenceAttention(prob.p, ro);
      REQUIRE_OK(ref);
      // The kernels add their own steps (online rescaling, Direct-P's classifier and running
      // block exponents, BF16 O) with errors of their own, but they lose what the formats lose:
      // the same accuracy against FP64.
      const double cos_study = compareOutputs(study.get(), *ref).cosine;
      const double cos_kernel = compareOutputs(kernel->result, *ref).cosine;
      CHECK(std::fabs(cos_study - cos_kernel) < 0.003);
      CHECK(compareOutputs(study.get(), kernel->result).cosine > 0.98);
    }
  }
}

TEST_CASE("the study tells formats apart: FP8 Q/K holds at large logits, E4M3 P/V beats MXFP4", "[cpu][formats]") {
  const Problem wide(512, 128, 4.0, 9), unit(512, 128, 1.0, 9);
  const ReferenceOptions ro = rowsEvery(512, 16);
  auto cosine = [&](const Problem &p, FormatPair f) {
    auto r = formatStudyAttention(f, p.p, ro);
    REQUIRE_OK(r);
    auto ref = referenceAttention(p.p, ro);
    REQUIRE_OK(ref);
    return compareOutputs(*r, *ref).cosine;
  };
  CHECK(cosine(wide, {StudyQkFormat::E4m3Row, PvFormat::E4m3}) > cosine(wide, {StudyQkFormat::Nvfp4, PvFormat::E4m3}) + 0.1);
  // The kernels' E4M3 Q/K (one scale per head) hold up as the per-row scale does.
  CHECK(cosine(wide, {StudyQkFormat::E4m3Head, PvFormat::E4m3}) > cosine(wide, {StudyQkFormat::Nvfp4, PvFormat::E4m3}) + 0.1);
  CHECK(cosine(unit, {StudyQkFormat::Nvfp4, PvFormat::E4m3}) > cosine(unit, {StudyQkFormat::Nvfp4, PvFormat::Mxfp4}) + 0.005);
  // A row that sees one key (causal row 0) returns that key's decoded V exactly.
  ReferenceOptions first;
  first.causal = true;
  first.selection.rows = {0};
  auto r = formatStudyAttention({StudyQkFormat::Nvfp4, PvFormat::E4m3}, unit.p, first);
  REQUIRE_OK(r);
  const formats::MatrixView v{unit.v.data(), 512, 128, 128, 1};
  auto vq = formats::quantizeFp8PerTensor(v, 128);
  REQUIRE_OK(vq);
  for (int d = 0; d < 128; ++d)
    CHECK(r->o[std::size_t(d)] == double(vq->value(0, d)));
  CHECK(allFormatPairs().size() == 10);
  CHECK(toString(FormatPair{StudyQkFormat::Mxfp8, PvFormat::Mxfp4}) == "mxfp8 / mxfp4");
}
