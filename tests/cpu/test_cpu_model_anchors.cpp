// Accuracy anchors of the routes (docs/NUMERICS.md §2; Gaussian Q, K, V with sigma = 1, D = 128,
// cosine of O against FP64) at a reduced size: N = 1024 keys, 128 sampled rows. The full-size
// numbers (N = 4096) come from `fa4jit accuracy` (docs/ACCURACY.md); at this size they sit within
// about +-0.005 of them.
#include <catch2/catch.hpp>

#include "cpu_model_fixtures.h"
#include "fa4jit/codegen/classifier_fit.h"
#include "fa4jit/cpu/model.h"
#include "fa4jit/cpu/reference.h"

using namespace fa4jit;
using namespace fa4jit::cpu;
using namespace fa4jit::cpu::testing;

TEST_CASE("route accuracy reproduces the full-size anchors at reduced size", "[cpu_model][anchors]") {
  const int n = 1024;
  OwnedProblem p = gaussianProblem({1, 1, 1, n, n, 128}, 1.0, 7);
  ModelOptions o;
  o.selection.rows = evenRows(n, 128);
  ReferenceOptions ro;
  ro.selection = o.selection;
  auto ref = referenceAttention(p.problem, ro);
  REQUIRE_OK(ref);
  auto cosFor = [&](Route route, ClassifierSpec c) {
    AttentionSpec spec;
    spec.route = route;
    spec.head_dim = 128;
    spec.classifier = c;
    auto m = runRouteModel(spec, p.problem, o);
    REQUIRE_OK(m);
    return compareOutputs(m->result, *ref).cosine;
  };
  ClassifierSpec threshold;
  threshold.kind = ClassifierKind::Threshold;

  fit::GaussianScoreModel model;
  model.seqlen = n;
  model.score_sigma = 1.0;
  auto rows = fit::sampleGaussianScores(model);
  REQUIRE_OK(rows);
  fit::FitOptions fo;
  auto affine = fit::fitClassifier(*rows, fo);
  REQUIRE_OK(affine);
  ClassifierSpec poor = affine->classifier;
  poor.alpha = 2.0f;
  poor.beta = 4.0f;

  const double bf16 = cosFor(Route::Bf16, threshold);
  const double nvfp8 = cosFor(Route::Nvfp8, threshold);
  const double thr = cosFor(Route::DirectP, threshold);
  const double fitted = cosFor(Route::DirectP, affine->classifier);
  const double bad = cosFor(Route::DirectP, poor);
  INFO("bf16 " << bf16 << " nvfp8 " << nvfp8 << " threshold " << thr << " affine " << fitted
               << " (alpha " << affine->classifier.alpha << ", beta " << affine->classifier.beta
               << ") poor beta " << bad);
  CHECK(bf16 > 0.9999);
  CHECK(nvfp8 == Approx(0.990).margin(0.005));
  CHECK(thr == Approx(0.973).margin(0.006));
  CHECK(fitted > 0.955);
  CHECK(fitted < thr);
  CHECK(bad < fitted);
}
