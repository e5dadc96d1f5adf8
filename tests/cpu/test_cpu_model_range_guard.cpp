// Range guard (docs/NUMERICS.md §2.2): extreme logits, one dominant key, all-equal
// scores and fully masked causal rows give no NaN/Inf and no zero rows, and stay within each
// route's normal accuracy. The yardstick is an FP64 softmax of the model's own scores t (traced),
// so Q/K quantization, which huge logits amplify, is not what is measured.
#include <catch2/catch.hpp>
#include <cmath>

#include "cpu_model_fixtures.h"
#include "fa4jit/cpu/model.h"

using namespace fa4jit;
using namespace fa4jit::cpu;
using namespace fa4jit::cpu::testing;

namespace {

struct GuardCase {
  const char *name;
  GuardKind kind;
  float slack;
  int p_offset;
  bool bf16_only; // (slack 8: the bf16 route's default; FP8 P would need offset 0)
};
const GuardCase kGuards[] = {{"online-exact", GuardKind::OnlineExact, 0.0f, 8, false},
                             {"sampled", GuardKind::SampledAnchor, 0.0f, 8, false},
                             {"sampled-slack2", GuardKind::SampledAnchor, 2.0f, 6, false},
                             {"sampled-slack8", GuardKind::SampledAnchor, 8.0f, 0, true}};

std::vector<AttentionSpec> allRouteSpecs(int d, const GuardCase &g, bool causal, float scale) {
  std::vector<AttentionSpec> out;
  for (int i = 0; i < 5; ++i) {
    AttentionSpec s;
    s.head_dim = d;
    s.causal = causal;
    s.softmax_scale = scale;
    s.guard.kind = g.kind;
    s.guard.slack_log2 = g.slack;
    s.operands.p_offset_log2 = g.p_offset;
    s.route = i == 0 ? Route::Bf16 : i == 1 ? Route::Nvfp8 : Route::DirectP;
    if (g.bf16_only && s.route != Route::Bf16)
      continue;
    s.classifier.kind = i == 3 ? ClassifierKind::Affine : i == 4 ? ClassifierKind::Mixed : ClassifierKind::Threshold;
    s.classifier.alpha = 1.75f;
    s.classifier.beta = 2.875f;
    out.push_back(s);
  }
  return out;
}

double routeBound(const AttentionSpec &s) {
  return s.route == Route::Bf16 ? 0.999 : s.route == Route::Nvfp8 ? 0.99 : 0.95;
}

// Runs every route and guard on the problem and checks the traced rows against an FP64 softmax
// of the traced scores with the original V.
void checkRows(const OwnedProblem &p, bool causal, float scale, const std::vector<int> &rows) {
  const AttentionShape &s = p.problem.shape;
  for (const GuardCase &g : kGuards)
    for (const AttentionSpec &spec : allRouteSpecs(s.head_dim, g, causal, scale)) {
      INFO("route " << toString(spec.route) << " classifier " << toString(spec.classifier.kind)
                    << " guard " << g.name);
      ModelOptions o;
      for (int r : rows)
        o.trace.push_back({0, 0, r});
      auto m = runRouteModel(spec, p.problem, o);
      REQUIRE_OK(m);
      for (double x : m->result.o)
        REQUIRE(std::isfinite(x));
      double dot = 0, nm = 0, nr = 0;
      for (const RowTrace &t : m->traces) {
        INFO("row " << t.where.row);
        const int visible = causal ? causalVisibleKeys(t.where.row, s.seqlen_q, s.seqlen_k) : s.seqlen_k;
        bool any = false;
        for (float o_d : t.o)
          any |= o_d != 0.0f;
        if (visible == 0) {
          CHECK(!any);
          CHECK(t.lse == -INFINITY);
          continue;
        }
        CHECK(any);
        CHECK(std::isfinite(t.lse));
        double mx = -INFINITY;
        for (int j = 0; j < visible; ++j)
          mx = std::max(mx, static_cast<double>(t.t[j]));
        std::vector<double> ref(s.head_dim, 0.0);
        double sum = 0;
        for (int j = 0; j < visible; ++j) {
          const double w = std::exp2(static_cast<double>(t.t[j]) - mx);
          sum += w;
          for (int d = 0; d < s.head_dim; ++d)
            ref[d] += w * p.problem.v.at(0, 0, j, d);
        }
        for (int d = 0; d < s.head_dim; ++d) {
          dot += ref[d] / sum * t.o[d];
          nm += static_cast<double>(t.o[d]) * t.o[d];
          nr += ref[d] / sum * ref[d] / sum;
        }
      }
      if (nr > 0)
        CHECK(dot / std::sqrt(nm * nr) > routeBound(spec));
    }
}

} // namespace

TEST_CASE("range guard: logits up to |1000|", "[cpu_model][range_guard]") {
  // Scores q.k * scale with std ~300: the largest reach ~1000 in magnitude.
  OwnedProblem p = gaussianProblem({1, 1, 1, 64, 512, 64}, 1.0, 51);
  checkRows(p, false, 300.0f / 8.0f, evenRows(64, 16));
  checkRows(p, true, 300.0f / 8.0f, evenRows(64, 16));
}

TEST_CASE("range guard: one dominant key", "[cpu_model][range_guard]") {
  OwnedProblem p = gaussianProblem({1, 1, 1, 300, 300, 64}, 1.0, 52);
  // Key 200 (a late tile, after the anchor was sampled) scores 1000; the others stay within a
  // few units of 0.
  for (int i = 0; i < 300; ++i)
    p.q[i * 64] = 4.0f;
  for (int j = 0; j < 300; ++j)
    for (int d = 0; d < 64; ++d)
      p.k[j * 64 + d] = j == 200 ? (d == 0 ? 1.0f : 0.0f) : p.k[j * 64 + d] * 1e-3f;
  checkRows(p, false, 250.0f, evenRows(300, 8));
  checkRows(p, true, 250.0f, evenRows(300, 8)); // rows before 200 do not see it
}

TEST_CASE("range guard: all-equal scores", "[cpu_model][range_guard]") {
  OwnedProblem p = gaussianProblem({1, 1, 1, 16, 200, 64}, 1.0, 53);
  for (int j = 1; j < 200; ++j)
    for (int d = 0; d < 64; ++d)
      p.k[j * 64 + d] = p.k[d];
  checkRows(p, false, 0.0f, evenRows(16, 4));
  checkRows(p, false, 50.0f, evenRows(16, 4)); // equal and huge
}

TEST_CASE("range guard: fully masked causal rows", "[cpu_model][range_guard]") {
  OwnedProblem p = gaussianProblem({1, 1, 1, 160, 64, 64}, 1.0, 54);
  checkRows(p, true, 0.0f, {0, 50, 95, 96, 97, 130, 159});
  checkRows(p, true, 100.0f, {0, 95, 96, 159});
}
