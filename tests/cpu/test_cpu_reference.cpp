#include "fa4jit/cpu/reference.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "cpu_model_fixtures.h"

using namespace fa4jit::cpu;
using namespace fa4jit::cpu::testing;

namespace {

// Naive attention of one row with long double: the full score vector, then softmax by
// exp(s - max) / sum, written independently of the implementation under test.
void naiveRow(const AttentionProblem &p, int b, int h, int i, bool causal, double scale,
              std::vector<long double> &o, long double &lse) {
  const AttentionShape &s = p.shape;
  const int kvh = h / (s.heads_q / s.heads_kv);
  std::vector<long double> sc;
  for (int j = 0; j < s.seqlen_k; ++j) {
    if (causal && j > i + s.seqlen_k - s.seqlen_q)
      break;
    long double acc = 0;
    for (int d = 0; d < s.head_dim; ++d)
      acc += static_cast<long double>(p.q.at(b, h, i, d)) * p.k.at(b, kvh, j, d);
    sc.push_back(acc * scale);
  }
  o.assign(s.head_dim, 0.0L);
  if (sc.empty()) {
    lse = -std::numeric_limits<long double>::infinity();
    return;
  }
  long double mx = sc[0], sum = 0;
  for (auto v : sc)
    mx = std::max(mx, v);
  for (std::size_t j = 0; j < sc.size(); ++j) {
    const long double w = std::exp(sc[j] - mx);
    sum += w;
    for (int d = 0; d < s.head_dim; ++d)
      o[d] += w * p.v.at(b, kvh, static_cast<int>(j), d);
  }
  for (auto &x : o)
    x /= sum;
  lse = mx + std::log(sum);
}

void checkAgainstNaive(const AttentionProblem &p, bool causal) {
  ReferenceOptions opt;
  opt.causal = causal;
  auto r = referenceAttention(p, opt);
  REQUIRE_OK(r);
  const AttentionShape &s = p.shape;
  const double scale = 1.0 / std::sqrt(static_cast<double>(s.head_dim));
  for (int b = 0; b < s.batch; ++b)
    for (int h = 0; h < s.heads_q; ++h)
      for (int i = 0; i < s.seqlen_q; ++i) {
        std::vector<long double> o;
        long double lse;
        naiveRow(p, b, h, i, causal, scale, o, lse);
        const std::size_t idx = r->rowIndex(b, h, i);
        if (std::isinf(static_cast<double>(lse))) {
          CHECK(std::isinf(r->lse[idx]));
          CHECK(r->lse[idx] < 0);
        } else {
          CHECK(r->lse[idx] == Approx(static_cast<double>(lse)).epsilon(1e-12));
        }
        for (int d = 0; d < s.head_dim; ++d)
          CHECK(r->oRow(b, h, i)[d] == Approx(static_cast<double>(o[d])).margin(1e-12));
      }
}

} // namespace

TEST_CASE("reference matches a naive softmax, non-causal and causal, square and not", "[cpu_reference]") {
  for (auto [sq, sk] : {std::pair{7, 7}, std::pair{5, 9}, std::pair{9, 5}, std::pair{1, 1}}) {
    OwnedProblem p = gaussianProblem({2, 4, 2, sq, sk, 8}, 1.0, 11);
    checkAgainstNaive(p.problem, false);
    checkAgainstNaive(p.problem, true);
  }
}

TEST_CASE("causal masking is bottom-right aligned", "[cpu_reference]") {
  CHECK(causalVisibleKeys(0, 3, 5) == 3); // Sk > Sq: the first query sees Sk - Sq + 1 keys
  CHECK(causalVisibleKeys(2, 3, 5) == 5);
  CHECK(causalVisibleKeys(0, 5, 3) == 0); // Sq > Sk: the first Sq - Sk queries see nothing
  CHECK(causalVisibleKeys(1, 5, 3) == 0);
  CHECK(causalVisibleKeys(2, 5, 3) == 1);
  CHECK(causalVisibleKeys(4, 5, 3) == 3);

  // Sq > Sk: fully masked rows have O = 0 and LSE = -inf; the first visible row sees key 0 only,
  // so its output is exactly V[0] and its LSE the single score.
  OwnedProblem p = gaussianProblem({1, 1, 1, 5, 3, 4}, 1.0, 3);
  ReferenceOptions opt;
  opt.causal = true;
  auto r = referenceAttention(p.problem, opt);
  REQUIRE_OK(r);
  for (int i : {0, 1}) {
    CHECK(r->lse[r->rowIndex(0, 0, i)] == -std::numeric_limits<double>::infinity());
    for (int d = 0; d < 4; ++d)
      CHECK(r->oRow(0, 0, i)[d] == 0.0);
  }
  double s00 = 0;
  for (int d = 0; d < 4; ++d) {
    CHECK(r->oRow(0, 0, 2)[d] == Approx(p.problem.v.at(0, 0, 0, d)).epsilon(1e-14));
    s00 += static_cast<double>(p.problem.q.at(0, 0, 2, d)) * p.problem.k.at(0, 0, 0, d);
  }
  CHECK(r->lse[r->rowIndex(0, 0, 2)] == Approx(s00 / 2.0).epsilon(1e-12));
}

TEST_CASE("grouped-query heads read kv head h / (Hq/Hkv)", "[cpu_reference]") {
  // GQA problem vs the same problem with K, V repeated per query head (plain multi-head).
  OwnedProblem g = gaussianProblem({1, 6, 2, 4, 6, 8}, 1.0, 5);
  std::vector<float> k_rep, v_rep;
  for (int h = 0; h < 6; ++h) {
    const int kvh = h / 3;
    k_rep.insert(k_rep.end(), g.k.begin() + kvh * 48, g.k.begin() + (kvh + 1) * 48);
    v_rep.insert(v_rep.end(), g.v.begin() + kvh * 48, g.v.begin() + (kvh + 1) * 48);
  }
  AttentionProblem mha = g.problem;
  mha.shape.heads_kv = 6;
  mha.k = TensorRef::contiguous(k_rep.data(), 6, 6, 8);
  mha.v = TensorRef::contiguous(v_rep.data(), 6, 6, 8);
  auto a = referenceAttention(g.problem, {});
  auto b = referenceAttention(mha, {});
  REQUIRE_OK(a);
  REQUIRE_OK(b);
  CHECK(a->o == b->o);
  CHECK(a->lse == b->lse);
  // Multi-query: one kv head for all.
  OwnedProblem mq = gaussianProblem({1, 3, 1, 4, 6, 8}, 1.0, 6);
  checkAgainstNaive(mq.problem, true);
}

TEST_CASE("strided inputs and row selection", "[cpu_reference]") {
  // Q stored as [B, S, H, D] (heads interleaved), addressed through strides.
  const int H = 2, S = 5, D = 4;
  OwnedProblem p = gaussianProblem({1, H, 1, S, S, D}, 1.0, 9);
  std::vector<float> q_bshd(p.q.size());
  for (int h = 0; h < H; ++h)
    for (int s = 0; s < S; ++s)
      for (int d = 0; d < D; ++d)
        q_bshd[(s * H + h) * D + d] = p.q[(h * S + s) * D + d];
  AttentionProblem strided = p.problem;
  strided.q = TensorRef{q_bshd.data(), {S * H * D, D, H * D, 1}};
  auto a = referenceAttention(p.problem, {});
  auto b = referenceAttention(strided, {});
  REQUIRE_OK(a);
  REQUIRE_OK(b);
  CHECK(a->o == b->o);

  ReferenceOptions sel;
  sel.selection.rows = {4, 1};
  auto c = referenceAttention(p.problem, sel);
  REQUIRE_OK(c);
  REQUIRE((c->rows == std::vector<int>{4, 1}));
  for (int h = 0; h < H; ++h)
    for (int d = 0; d < D; ++d) {
      CHECK(c->oRow(0, h, 0)[d] == a->oRow(0, h, 4)[d]);
      CHECK(c->oRow(0, h, 1)[d] == a->oRow(0, h, 1)[d]);
    }
}

TEST_CASE("reference rejects bad shapes and non-finite inputs", "[cpu_reference]") {
  OwnedProblem p = gaussianProblem({1, 3, 2, 4, 4, 8}, 1.0, 1);
  auto e = referenceAttention(p.problem, {});
  REQUIRE_ERR(e);
  CHECK_THAT(llvm::toString(e.takeError()), Catch::Contains("heads_q (3) is not a multiple of heads_kv (2)"));

  OwnedProblem z = gaussianProblem({1, 1, 1, 4, 4, 8}, 1.0, 1);
  z.problem.shape.seqlen_k = 0;
  auto e2 = referenceAttention(z.problem, {});
  REQUIRE_ERR(e2);
  CHECK_THAT(llvm::toString(e2.takeError()), Catch::Contains("seqlen_k 0"));

  OwnedProblem n = gaussianProblem({1, 1, 1, 4, 4, 8}, 1.0, 1);
  n.k[2 * 8 + 3] = std::nanf("");
  auto e3 = referenceAttention(n.problem, {});
  REQUIRE_ERR(e3);
  CHECK_THAT(llvm::toString(e3.takeError()), Catch::Contains("tensor K has a non-finite element at [0,0,2,3]"));

  ReferenceOptions bad_row;
  bad_row.selection.rows = {4};
  auto e4 = referenceAttention(n.problem, bad_row);
  REQUIRE_ERR(e4);
  CHECK_THAT(llvm::toString(e4.takeError()), Catch::Contains("row 4 is outside [0, 4)"));
}
