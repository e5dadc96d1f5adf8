// E4M3 Q/K (docs/NUMERICS.md §1.4): the host format and the route models that read it.
#include <catch2/catch.hpp>
#include <cmath>

#include "cpu_model_fixtures.h"
#include "fa4jit/codegen/block_formats.h"
#include "fa4jit/codegen/formats.h"
#include "fa4jit/codegen/heuristics.h"
#include "fa4jit/cpu/model.h"
#include "fa4jit/cpu/reference.h"

using namespace fa4jit;
using namespace fa4jit::cpu;
using namespace fa4jit::cpu::testing;

namespace {
AttentionSpec e4m3QkSpec(Route route, int head_dim, int shift) {
  AttentionSpec spec = defaultAttentionSpec(route, head_dim, false, Target::Sm90a).attention;
  spec.operands.qk_format = QkFormat::E4m3;
  spec.operands.qk_widen_shift = shift;
  return spec;
}

double modelCosine(const AttentionSpec &spec, const OwnedProblem &p, int rows) {
  ModelOptions o;
  o.selection.rows = evenRows(p.problem.shape.seqlen_q, rows);
  ReferenceOptions ro;
  ro.selection = o.selection;
  auto m = runRouteModel(spec, p.problem, o);
  auto ref = referenceAttention(p.problem, ro);
  REQUIRE_OK(m);
  REQUIRE_OK(ref);
  return compareOutputs(m->result, *ref).cosine;
}
} // namespace

TEST_CASE("E4M3 rows: NVFP4's global scale, one rounding of x / (g 2^shift)", "[formats]") {
  const std::vector<float> x = gaussianValues(64 * 128, 3.0, 5);
  formats::MatrixView m;
  m.data = x.data(), m.rows = 64, m.cols = 128, m.row_stride = 128, m.col_stride = 1;
  auto nv = formats::quantizeNvfp4(m);
  auto e = formats::quantizeE4m3Rows(m, 7);
  REQUIRE_OK(nv);
  REQUIRE_OK(e);
  CHECK(e->global_scale == nv->global_scale);
  const float d = std::ldexp(e->global_scale, 7);
  float largest = 0;
  for (int r = 0; r < 64; ++r)
    for (int c = 0; c < 128; ++c) {
      const float want = formats::e4m3ToFloat(formats::floatToE4M3(x[r * 128 + c] / d));
      REQUIRE(e->code(r, c) == want);
      largest = std::max(largest, std::fabs(e->code(r, c)));
      // Within E4M3's half step (relative 2^-4) of x wherever the code is normal.
      if (std::fabs(e->code(r, c)) >= 0x1p-6f)
        CHECK(std::fabs(e->value(r, c) - x[r * 128 + c]) <= std::ldexp(std::fabs(x[r * 128 + c]), -4));
    }
  CHECK(largest >= 20.0f); // the amax element: 6 * 448 / 2^7 = 21, a tie between 20 and 22
  CHECK(largest <= 22.0f);
  CHECK_FALSE(static_cast<bool>(formats::quantizeE4m3Rows(m, 17)));
}

TEST_CASE("E4M3 Q/K model: the fed values are the stored codes", "[cpu_model]") {
  OwnedProblem p = gaussianProblem({1, 1, 1, 8, 96, 128}, 2.0, 41);
  const AttentionSpec spec = e4m3QkSpec(Route::Nvfp8, 128, 7);
  const RowTrace t = traceRow(spec, p, {0, 0, 3});
  formats::MatrixView qv, kv;
  qv.data = p.q.data(), qv.rows = 8, qv.cols = 128, qv.row_stride = 128, qv.col_stride = 1;
  kv.data = p.k.data(), kv.rows = 96, kv.cols = 128, kv.row_stride = 128, kv.col_stride = 1;
  auto q = formats::quantizeE4m3Rows(qv, 7);
  auto k = formats::quantizeE4m3Rows(kv, 7);
  REQUIRE_OK(q);
  REQUIRE_OK(k);
  for (int j : {0, 17, 95}) {
    double acc = 0, magnitude = 0; // products of E4M3 codes and their sum are exact in FP64
    for (int d = 0; d < 128; ++d) {
      acc += static_cast<double>(q->code(3, d)) * k->code(j, d);
      magnitude += std::fabs(static_cast<double>(q->code(3, d)) * k->code(j, d));
    }
    CHECK(t.acc[j] == Approx(acc).margin(4e-3 * magnitude)); // (the FP16 accumulation's roundings)
  }
}

TEST_CASE("E4M3 Q/K hold up at large logits where NVFP4 does not", "[cpu_model]") {
  // sigma 4: logits with standard deviation 16 (docs/ACCURACY.md, operand formats)
  OwnedProblem p = gaussianProblem({1, 1, 1, 256, 1024, 128}, 4.0, 43);
  for (Route route : {Route::Nvfp8, Route::DirectP}) {
    INFO(toString(route));
    AttentionSpec nvfp4 = defaultAttentionSpec(route, 128, false, Target::Sm90a).attention;
    const double with_nvfp4 = modelCosine(nvfp4, p, 64);
    const double with_e4m3 = modelCosine(e4m3QkSpec(route, 128, nvfp4.operands.qk_widen_shift), p, 64);
    CHECK(with_nvfp4 < 0.9);
    CHECK(with_e4m3 > 0.97);
  }
}

TEST_CASE("E4M3 Q/K model refuses Q/K widened to BF16", "[cpu_model]") {
  OwnedProblem p = gaussianProblem({1, 1, 1, 8, 64, 64}, 1.0, 44);
  AttentionSpec spec = e4m3QkSpec(Route::Nvfp8, 64, 3);
  spec.operands.qk_widening = Widening::Bf16;
  auto m = runRouteModel(spec, p.problem, {});
  REQUIRE_FALSE(static_cast<bool>(m));
  CHECK_THAT(llvm::toString(m.takeError()), Catch::Contains("qk_format e4m3"));
}
