#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "cpu_model_fixtures.h"
#include "fa4jit/codegen/formats.h"
#include "fa4jit/cpu/model.h"
#include "fa4jit/cpu/reference.h"

using namespace fa4jit;
using namespace fa4jit::cpu;
using namespace fa4jit::cpu::testing;

namespace {
AttentionSpec bf16Spec(int d, bool causal) {
  AttentionSpec s;
  s.route = Route::Bf16;
  s.head_dim = d;
  s.causal = causal;
  return s;
}
} // namespace

TEST_CASE("bf16 model is close to the FP64 reference", "[cpu_model]") {
  for (bool causal : {false, true}) {
    OwnedProblem p = gaussianProblem({2, 4, 2, 200, 300, 64}, 1.0, 21);
    ReferenceOptions ro;
    ro.causal = causal;
    auto ref = referenceAttention(p.problem, ro);
    auto m = runRouteModel(bf16Spec(64, causal), p.problem, {});
    REQUIRE_OK(ref);
    REQUIRE_OK(m);
    const Agreement a = compareOutputs(m->result, *ref);
    CHECK(a.cosine > 0.99995);
    CHECK(a.rel_l2 < 0.01);
    for (std::size_t i = 0; i < ref->lse.size(); ++i)
      CHECK(m->result.lse[i] == Approx(ref->lse[i]).margin(1e-2)); // BF16 Q, K move scores
    // O is stored as BF16 values.
    for (double o : m->result.o)
      CHECK(static_cast<double>(formats::roundToBF16(static_cast<float>(o))) == o);
  }
}

TEST_CASE("bf16 model: rows, threads and tiles do not change a row", "[cpu_model]") {
  OwnedProblem p = gaussianProblem({1, 2, 1, 100, 130, 64}, 1.0, 22);
  ModelOptions all, some;
  all.selection.threads = 1;
  some.selection.rows = {99, 3};
  some.selection.threads = 2;
  auto a = runRouteModel(bf16Spec(64, true), p.problem, all);
  auto b = runRouteModel(bf16Spec(64, true), p.problem, some);
  REQUIRE_OK(a);
  REQUIRE_OK(b);
  for (int h = 0; h < 2; ++h)
    for (int d = 0; d < 64; ++d) {
      CHECK(b->result.oRow(0, h, 0)[d] == a->result.oRow(0, h, 99)[d]);
      CHECK(b->result.oRow(0, h, 1)[d] == a->result.oRow(0, h, 3)[d]);
    }
  // A different block_n changes the rescale points, not the answer beyond rounding.
  AttentionSpec wide = bf16Spec(64, true);
  wide.tile.shape.block_n = 128;
  auto c = runRouteModel(wide, p.problem, all);
  REQUIRE_OK(c);
  CHECK(compareOutputs(c->result, a->result).cosine > 0.99999);
}

TEST_CASE("bf16 model: l sums exp2(x) before rounding; trace is consistent", "[cpu_model]") {
  OwnedProblem p = gaussianProblem({1, 1, 1, 8, 100, 64}, 1.0, 23);
  AttentionSpec spec = bf16Spec(64, false);
  spec.tile.shape.block_n = 128; // one tile: l is one FP64 sum rounded once
  ModelOptions o;
  o.trace = {{0, 0, 5}};
  auto m = runRouteModel(spec, p.problem, o);
  REQUIRE_OK(m);
  const RowTrace &t = m->traces[0];
  double sum = 0;
  float tmax = -INFINITY;
  for (int j = 0; j < 100; ++j)
    tmax = std::max(tmax, t.t[j]);
  for (int j = 0; j < 100; ++j) {
    const float e = std::exp2(t.t[j] - tmax);
    sum += e;
    CHECK(t.p_fed[j] == formats::roundToBF16(e));
  }
  CHECK(t.m == tmax);
  CHECK(t.l == static_cast<float>(sum));
  CHECK(t.tile_m.size() == 1);
  CHECK(t.lse == Approx(m->result.lse[m->result.rowIndex(0, 0, 5)]));
}

TEST_CASE("route model rejects specs it cannot model", "[cpu_model]") {
  OwnedProblem p = gaussianProblem({1, 1, 1, 8, 8, 64}, 1.0, 24);
  auto expectError = [&](const AttentionSpec &s, const char *needle) {
    auto m = runRouteModel(s, p.problem, {});
    REQUIRE_ERR(m);
    CHECK_THAT(llvm::toString(m.takeError()), Catch::Contains(needle));
  };
  AttentionSpec s = bf16Spec(64, false);
  s.head_dim = 128;
  expectError(s, "differs from the tensors' head_dim 64");
  s = bf16Spec(64, false);
  s.tile.shape.block_n = 40; // bf16 tiles are whole k-steps of 16 keys (the wgmma kernel's 80 at D256)
  expectError(s, "block_n 40 must be a positive multiple of 16");
  s.tile.shape.block_n = 80;
  CHECK(static_cast<bool>(runRouteModel(s, p.problem, {})));
  AttentionSpec d = bf16Spec(64, false);
  d.route = Route::DirectP;
  d.tile.shape.block_n = 48; // Direct-P's blocks are 32 keys
  expectError(d, "block_n 48 must be a positive multiple of 32");
  d.tile.shape.block_n = 64;
  d.classifier.kind = ClassifierKind::Affine;
  d.classifier.alpha = 2;
  d.classifier.beta = -4;
  expectError(d, "maps a block's largest key");
  d.classifier.beta = 3;
  d.operands.v_widening = Widening::Bf16;
  expectError(d, "BF16-widened V");
  d.operands.v_widening = Widening::E4m3;
  d.guard.slack_log2 = 1;
  expectError(d, "p_offset_log2 8 plus ceil(guard.slack_log2)");

  OwnedProblem odd = gaussianProblem({1, 1, 1, 8, 8, 96}, 1.0, 24);
  AttentionSpec s96 = bf16Spec(96, false);
  auto m = runRouteModel(s96, odd.problem, {});
  REQUIRE_ERR(m);
  CHECK_THAT(llvm::toString(m.takeError()), Catch::Contains("unsupported head_dim 96"));
}
