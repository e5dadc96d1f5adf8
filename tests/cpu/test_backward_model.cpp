#include <catch2/catch.hpp>
#include <cmath>

#include "cpu_model_fixtures.h"
#include "fa4jit/codegen/block_formats.h"
#include "fa4jit/codegen/formats.h"
#include "fa4jit/cpu/backward.h"
#include "fa4jit/cpu/model.h"
#include "fa4jit/cpu/reference.h"

using namespace fa4jit;
using namespace fa4jit::cpu;
using namespace fa4jit::cpu::testing;

namespace {

AttentionSpec trainingForward(int head_dim, bool causal) {
  AttentionSpec f;
  f.route = Route::Nvfp8;
  f.head_dim = head_dim;
  f.causal = causal;
  return f;
}

// A problem, its incoming gradient, and the nvfp8 forward's O and LSE (as the training forward
// saves them).
struct BackwardCase {
  OwnedProblem p;
  std::vector<float> d_o, o, lse;
  BackwardProblem problem;
};

BackwardCase makeCase(const AttentionShape &shape, const AttentionSpec &forward, uint64_t seed) {
  BackwardCase c;
  c.p = gaussianProblem(shape, 1.0, seed);
  c.d_o = gaussianValues(c.p.q.size(), 1.0, seed + 77);
  for (float &x : c.d_o)
    x = formats::roundToBF16(x);
  auto fwd = runRouteModel(forward, c.p.problem, {});
  REQUIRE_OK(fwd);
  c.o.assign(fwd->result.o.begin(), fwd->result.o.end());
  c.lse.assign(fwd->result.lse.begin(), fwd->result.lse.end());
  c.problem.forward = c.p.problem;
  c.problem.d_o = TensorRef::contiguous(c.d_o.data(), shape.heads_q, shape.seqlen_q, shape.head_dim);
  c.problem.o = TensorRef::contiguous(c.o.data(), shape.heads_q, shape.seqlen_q, shape.head_dim);
  c.problem.lse = c.lse.data();
  return c;
}

GradientAgreement againstReference(const BackwardSpec &spec, const BackwardCase &c) {
  auto model = runBackwardModel(spec, c.problem);
  REQUIRE_OK(model);
  ReferenceOptions ro;
  ro.causal = spec.forward.causal;
  auto ref = referenceAttentionBackward(c.problem, ro);
  REQUIRE_OK(ref);
  return compareGradients(*model, *ref);
}

} // namespace

TEST_CASE("backward model: one query's dV is its fed P times its E4M3 dO, rounded as NUMERICS.md says",
          "[cpu_model][backward]") {
  // One query row: dV_j = BF16(FP32(P_fed_j * dO8_d) * (s_dO * 2^-8)) with P_fed_j =
  // E4M3(exp2(fma(acc_j, mul, -LSE * log2 e)) * 2^8), acc and mul those of the forward.
  const AttentionShape shape{1, 1, 1, 1, 100, 64};
  BackwardSpec spec;
  spec.forward = trainingForward(64, false);
  BackwardCase c = makeCase(shape, spec.forward, 41);
  ModelOptions trace;
  trace.trace = {{0, 0, 0}};
  auto fwd = runRouteModel(spec.forward, c.p.problem, trace);
  REQUIRE_OK(fwd);
  const RowTrace &t = fwd->traces[0];
  auto g = runBackwardModel(spec, c.problem);
  REQUIRE_OK(g);
  formats::MatrixView dov{c.d_o.data(), 1, 64, 64, 1};
  auto do8 = formats::quantizeFp8PerTensor(dov, 64);
  REQUIRE_OK(do8);
  const float lse2 = c.lse[0] * static_cast<float>(M_LOG2E);
  const float dv_factor = std::ldexp(do8->scale, -8);
  int nonzero = 0;
  for (int j = 0; j < 100; ++j) {
    const float p = static_cast<float>(std::exp2(static_cast<double>(std::fma(t.acc[j], t.score_mul, -lse2))));
    const float p_fed = formats::e4m3ToFloat(formats::floatToE4M3(p * 256.0f));
    for (int d = 0; d < 64; ++d) {
      const float want = formats::roundToBF16(p_fed * formats::e4m3ToFloat(do8->payload[d]) * dv_factor);
      REQUIRE(g->dv[static_cast<std::size_t>(j) * 64 + d] == want);
      nonzero += want != 0.0f;
    }
  }
  CHECK(nonzero > 1000);
}

TEST_CASE("backward model: the nvfp8 training route's gradients agree with the FP64 reference",
          "[cpu_model][backward]") {
  const bool causal = GENERATE(false, true);
  const int head_dim = GENERATE(64, 128);
  BackwardSpec spec;
  spec.forward = trainingForward(head_dim, causal);
  BackwardCase c = makeCase({1, 2, 2, 192, 192, head_dim}, spec.forward, 51);
  const GradientAgreement a = againstReference(spec, c);
  INFO("causal " << causal << ", D " << head_dim << ": cosine dQ " << a.dq.cosine << ", dK " << a.dk.cosine
                 << ", dV " << a.dv.cosine);
  CHECK(a.dq.cosine > 0.98);
  CHECK(a.dk.cosine > 0.98);
  CHECK(a.dv.cosine > 0.98);
}

TEST_CASE("backward model: GQA sums dK and dV over the group", "[cpu_model][backward]") {
  BackwardSpec spec;
  spec.forward = trainingForward(64, true);
  BackwardCase c = makeCase({2, 4, 1, 96, 128, 64}, spec.forward, 61);
  const GradientAgreement a = againstReference(spec, c);
  CHECK(a.dq.cosine > 0.98);
  CHECK(a.dk.cosine > 0.98);
  CHECK(a.dv.cosine > 0.98);
}

TEST_CASE("backward model: MXFP4 P/V is selectable and costs accuracy against E4M3 P/V",
          "[cpu_model][backward]") {
  BackwardSpec fp8;
  fp8.forward = trainingForward(64, true);
  BackwardSpec mx = fp8;
  mx.pv = BackwardPvFormat::Mxfp4;
  BackwardCase c = makeCase({1, 2, 2, 256, 256, 64}, fp8.forward, 71);
  const GradientAgreement a8 = againstReference(fp8, c), a4 = againstReference(mx, c);
  INFO("dV cosine E4M3 " << a8.dv.cosine << ", MXFP4 " << a4.dv.cosine << "; dQ " << a8.dq.cosine << ", "
                         << a4.dq.cosine);
  CHECK(a4.dv.cosine < a8.dv.cosine);
  CHECK(a4.dq.cosine < a8.dq.cosine); // (dP = dO V^T reads the MXFP4 V)
  CHECK(a4.dv.cosine > 0.9);
}

TEST_CASE("backward model: dS against the BF16 Q/K is more accurate than against the saved NVFP4 payload",
          "[cpu_model][backward]") {
  BackwardSpec bf16;
  bf16.forward = trainingForward(128, true);
  BackwardSpec saved = bf16;
  saved.qk = BackwardQkOperands::SavedNvfp4;
  BackwardCase c = makeCase({1, 2, 2, 256, 256, 128}, bf16.forward, 75);
  const GradientAgreement a = againstReference(bf16, c), b = againstReference(saved, c);
  INFO("dQ cosine BF16 Q/K " << a.dq.cosine << ", saved NVFP4 " << b.dq.cosine);
  CHECK(a.dq.cosine > b.dq.cosine + 0.002);
  CHECK(a.dk.cosine > b.dk.cosine + 0.002);
  CHECK(a.dv.cosine == b.dv.cosine); // (dV reads neither)
}

TEST_CASE("backward model: rows without a visible key give nothing (LSE -inf)", "[cpu_model][backward]") {
  BackwardSpec spec;
  spec.forward = trainingForward(64, true);
  BackwardCase c = makeCase({1, 1, 1, 40, 8, 64}, spec.forward, 81); // rows 0..31 see no key
  for (int i = 0; i < 32; ++i)
    REQUIRE(std::isinf(c.lse[i]));
  auto g = runBackwardModel(spec, c.problem);
  REQUIRE_OK(g);
  for (int i = 0; i < 32 * 64; ++i)
    REQUIRE(g->dq[i] == 0.0);
  const GradientAgreement a = againstReference(spec, c);
  CHECK(a.dk.cosine > 0.98);
  CHECK(a.dv.cosine > 0.98);
}

TEST_CASE("backward model: bad specs and inputs are errors naming what is wrong", "[cpu_model][backward]") {
  BackwardSpec spec;
  spec.forward = trainingForward(64, false);
  BackwardCase c = makeCase({1, 1, 1, 16, 16, 64}, spec.forward, 91);
  auto message = [&](const BackwardSpec &s, const BackwardProblem &p) {
    auto g = runBackwardModel(s, p);
    REQUIRE_ERR(g);
    return llvm::toString(g.takeError());
  };
  BackwardSpec directp = spec;
  directp.forward.route = Route::DirectP;
  CHECK_THAT(message(directp, c.problem), Catch::Contains("nvfp8"));
  BackwardSpec offset = spec;
  offset.p_offset_log2 = 9;
  CHECK_THAT(message(offset, c.problem), Catch::Contains("p_offset_log2 9"));
  BackwardSpec dim = spec;
  dim.forward.head_dim = 128;
  CHECK_THAT(message(dim, c.problem), Catch::Contains("head_dim"));
  std::vector<float> lse = c.lse;
  lse[3] = std::nanf("");
  BackwardProblem bad_lse = c.problem;
  bad_lse.lse = lse.data();
  CHECK_THAT(message(spec, bad_lse), Catch::Contains("LSE element 3"));
  std::vector<float> o = c.o;
  o[70] = INFINITY;
  BackwardProblem bad_o = c.problem;
  bad_o.o = TensorRef::contiguous(o.data(), 1, 16, 64);
  CHECK_THAT(message(spec, bad_o), Catch::Contains("O has a non-finite element at [0,0,1,6]"));
}

TEST_CASE("backward model: the predicted accuracy NUMERICS.md states", "[cpu_model][backward]") {
  // D128, 512 keys, causal, Gaussian sigma = 1: the cosines of dQ / dK / dV against FP64.
  BackwardSpec bf16;
  bf16.forward = trainingForward(128, true);
  BackwardSpec saved = bf16, mx = bf16;
  saved.qk = BackwardQkOperands::SavedNvfp4;
  mx.pv = BackwardPvFormat::Mxfp4;
  BackwardCase c = makeCase({1, 2, 2, 512, 512, 128}, bf16.forward, 5);
  const GradientAgreement a = againstReference(bf16, c), s = againstReference(saved, c), m = againstReference(mx, c);
  const struct {
    const GradientAgreement &got;
    double dq, dk, dv;
  } stated[] = {{a, 0.9917, 0.9918, 0.9920}, {s, 0.9870, 0.9873, 0.9920}, {m, 0.9810, 0.9809, 0.9806}};
  for (const auto &x : stated) {
    CHECK(x.got.dq.cosine == Approx(x.dq).margin(1e-4));
    CHECK(x.got.dk.cosine == Approx(x.dk).margin(1e-4));
    CHECK(x.got.dv.cosine == Approx(x.dv).margin(1e-4));
  }
}
