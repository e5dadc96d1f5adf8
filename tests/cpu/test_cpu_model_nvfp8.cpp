#include <catch2/catch.hpp>
#include <cmath>

#include "cpu_model_fixtures.h"
#include "fa4jit/codegen/formats.h"
#include "fa4jit/cpu/model.h"
#include "fa4jit/cpu/reference.h"

using namespace fa4jit;
using namespace fa4jit::cpu;
using namespace fa4jit::cpu::testing;

TEST_CASE("nvfp8: P fed is E4M3(exp2(x + 8)) and l is the sum of the fed values", "[cpu_model]") {
  OwnedProblem p = gaussianProblem({1, 2, 1, 16, 300, 128}, 1.0, 31);
  AttentionSpec spec;
  spec.route = Route::Nvfp8;
  spec.head_dim = 128;
  spec.guard.kind = GuardKind::OnlineExact;
  ModelOptions o;
  o.trace = {{0, 1, 7}};
  auto m = runRouteModel(spec, p.problem, o);
  REQUIRE_OK(m);
  const RowTrace &t = m->traces[0];
  REQUIRE(t.tile_m.size() == 5); // 300 keys in tiles of 64
  // Rebuild l from the per-tile fed values and the rescale factors between tile maxima.
  double l = 0;
  for (int tile = 0; tile < 5; ++tile) {
    double tile_sum = 0;
    for (int j = tile * 64; j < std::min(300, tile * 64 + 64); ++j) {
      // One FFMA from the accumulator (score_terms.cuh): x = fma(acc, mul, -m), and the fed
      // exponent fma(acc, mul, off - m), not x + off.
      CHECK(t.t[j] == t.acc[j] * t.score_mul);
      CHECK(t.x[j] == std::fma(t.acc[j], t.score_mul, -t.tile_m[tile]));
      const float x_off = std::fma(t.acc[j], t.score_mul, 8.0f - t.tile_m[tile]);
      const float want = formats::e4m3ToFloat(formats::floatToE4M3(std::exp2(x_off)));
      CHECK(t.p_fed[j] == want);
      tile_sum += t.p_fed[j];
    }
    l += tile_sum * std::exp2(static_cast<double>(t.tile_m[tile]) - t.m);
  }
  CHECK(t.l == Approx(l).epsilon(1e-5));
  // LSE removes the P offset: close to the FP64 reference's.
  auto ref = referenceAttention(p.problem, {});
  REQUIRE_OK(ref);
  CHECK(t.lse == Approx(ref->lse[ref->rowIndex(0, 1, 7)]).margin(0.1));
}

TEST_CASE("nvfp8 model agrees with the reference within its quantization", "[cpu_model]") {
  OwnedProblem p = gaussianProblem({1, 2, 1, 512, 512, 64}, 1.0, 32);
  AttentionSpec spec;
  spec.route = Route::Nvfp8;
  spec.head_dim = 64;
  spec.causal = true;
  ModelOptions o;
  o.selection.rows = evenRows(512, 64);
  ReferenceOptions ro;
  ro.causal = true;
  ro.selection = o.selection;
  auto m = runRouteModel(spec, p.problem, o);
  auto ref = referenceAttention(p.problem, ro);
  REQUIRE_OK(m);
  REQUIRE_OK(ref);
  const Agreement a = compareOutputs(m->result, *ref);
  CHECK(a.cosine > 0.98);
  CHECK(a.rel_l2 < 0.2);
}
