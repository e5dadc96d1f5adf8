#include <catch2/catch.hpp>
#include <cmath>

#include "cpu_model_fixtures.h"
#include "fa4jit/cpu/backward.h"
#include "fa4jit/cpu/reference.h"

using namespace fa4jit;
using namespace fa4jit::cpu;
using namespace fa4jit::cpu::testing;

namespace {

// L = sum(dO * O) of the FP64 reference forward: its gradient is what the backward computes.
double loss(const OwnedProblem &p, const std::vector<float> &d_o, const ReferenceOptions &ro) {
  auto r = referenceAttention(p.problem, ro);
  REQUIRE_OK(r);
  double sum = 0;
  for (std::size_t i = 0; i < r->o.size(); ++i)
    sum += r->o[i] * d_o[i];
  return sum;
}

// Central difference of L along one input element, with the step the float actually took.
double finiteDifference(OwnedProblem &p, std::vector<float> &x, std::size_t at, const std::vector<float> &d_o,
                        const ReferenceOptions &ro) {
  const float orig = x[at];
  const float up = orig + 1e-3f * std::max(1.0f, std::fabs(orig)), down = orig - (up - orig);
  x[at] = up;
  const double l_up = loss(p, d_o, ro);
  x[at] = down;
  const double l_down = loss(p, d_o, ro);
  x[at] = orig;
  return (l_up - l_down) / (static_cast<double>(up) - down);
}

} // namespace

TEST_CASE("reference backward: analytic gradients equal finite differences (causal, GQA, Sq != Sk)",
          "[cpu_model][backward]") {
  const AttentionShape shape{1, 4, 2, 5, 9, 16};
  OwnedProblem p = gaussianProblem(shape, 1.0, 7);
  std::vector<float> d_o = gaussianValues(p.q.size(), 1.0, 8);
  ReferenceOptions ro;
  ro.causal = GENERATE(false, true);
  BackwardProblem bp;
  bp.forward = p.problem;
  bp.d_o = TensorRef::contiguous(d_o.data(), shape.heads_q, shape.seqlen_q, shape.head_dim);
  auto g = referenceAttentionBackward(bp, ro);
  REQUIRE_OK(g);
  int checked = 0;
  for (std::size_t at = 0; at < p.q.size(); at += 7, ++checked)
    CHECK(g->dq[at] == Approx(finiteDifference(p, p.q, at, d_o, ro)).margin(1e-6).epsilon(1e-4));
  for (std::size_t at = 0; at < p.k.size(); at += 5, ++checked) {
    CHECK(g->dk[at] == Approx(finiteDifference(p, p.k, at, d_o, ro)).margin(1e-6).epsilon(1e-4));
    CHECK(g->dv[at] == Approx(finiteDifference(p, p.v, at, d_o, ro)).margin(1e-6).epsilon(1e-4));
  }
  CHECK(checked > 100);
}

TEST_CASE("reference backward: a query row without visible keys gets a zero dQ and gives nothing to dK, dV",
          "[cpu_model][backward]") {
  // Causal with more queries than keys: rows 0..2 see no key (bottom-right alignment).
  const AttentionShape shape{1, 1, 1, 6, 3, 16};
  OwnedProblem p = gaussianProblem(shape, 1.0, 9);
  std::vector<float> d_o = gaussianValues(p.q.size(), 1.0, 10);
  BackwardProblem bp;
  bp.forward = p.problem;
  bp.d_o = TensorRef::contiguous(d_o.data(), 1, 6, 16);
  ReferenceOptions ro;
  ro.causal = true;
  auto g = referenceAttentionBackward(bp, ro);
  REQUIRE_OK(g);
  for (int i = 0; i < 3 * 16; ++i)
    CHECK(g->dq[i] == 0.0);
  // Changing dO on those rows changes nothing.
  for (int i = 0; i < 3 * 16; ++i)
    d_o[i] *= -3.0f;
  auto g2 = referenceAttentionBackward(bp, ro);
  REQUIRE_OK(g2);
  CHECK(g2->dk == g->dk);
  CHECK(g2->dv == g->dv);
}

TEST_CASE("reference backward: bad input is an error naming it", "[cpu_model][backward]") {
  const AttentionShape shape{1, 1, 1, 4, 4, 16};
  OwnedProblem p = gaussianProblem(shape, 1.0, 11);
  std::vector<float> d_o = gaussianValues(p.q.size(), 1.0, 12);
  d_o[21] = std::nanf("");
  BackwardProblem bp;
  bp.forward = p.problem;
  bp.d_o = TensorRef::contiguous(d_o.data(), 1, 4, 16);
  auto g = referenceAttentionBackward(bp, {});
  REQUIRE_ERR(g);
  CHECK_THAT(llvm::toString(g.takeError()), Catch::Contains("dO") && Catch::Contains("[0,0,1,5]"));
}
