// The attention backward on the GPU against the CPU model of its spec (docs/NUMERICS.md §3) and
// the FP64 reference gradients: fresh random inputs every run (the seed is in every failure
// message), ragged lengths, causal with Sq != Sk, grouped-query heads, the MXFP4 P/V and saved
// NVFP4 Q/K variants, and the deterministic mode's bitwise repeatability. Outputs are poisoned
// with NaN before each launch so that an unwritten element fails.
#include "gpu_fixture.h"

#include "fa4jit/codegen/heuristics.h"
#include "fa4jit/codegen/spec_io.h"
#include "fa4jit/codegen/spec_validate.h"
#include "fa4jit/cpu/backward.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

using namespace fa4jit;
using namespace fa4jit::testing;

namespace {

struct Case {
  DenseShape shape;
  bool causal = false;
  BackwardPvFormat pv = BackwardPvFormat::E4m3;
  BackwardQkOperands qk = BackwardQkOperands::Bf16;
  bool deterministic = false;
  std::optional<TileShape> tile = std::nullopt;  // a tile other than the default one (the spec's other rules kept)
  std::optional<BackwardMma> mma = std::nullopt; // the main pass's instructions, if not the default's
};

std::string describe(const Case &c, uint64_t seed) {
  char buf[256];
  const TileShape t = c.tile.value_or(TileShape{0, 0, 0});
  std::snprintf(buf, sizeof buf, "B%d Hq%d Hkv%d Sq%d Sk%d D%d causal%d pv %s qk %s det%d tile %dx%dx%d %s seed %llu",
                c.shape.batch, c.shape.heads_q, c.shape.heads_kv, c.shape.seqlen_q, c.shape.seqlen_k,
                c.shape.head_dim, c.causal, toString(c.pv), toString(c.qk), c.deterministic, t.block_m, t.block_n,
                t.warps, c.mma ? toString(*c.mma) : "default", static_cast<unsigned long long>(seed));
  return buf;
}

struct Gradients {
  std::vector<uint16_t> dq, dk, dv;
};

std::vector<float> toFloats(const std::vector<uint16_t> &bits) {
  std::vector<float> out(bits.size());
  for (std::size_t i = 0; i < bits.size(); ++i)
    out[i] = formats::bf16ToFloat(bits[i]);
  return out;
}

// Rel. L2 and cosine of a BF16 device result against a model or reference result.
cpu::Agreement agree(const std::vector<uint16_t> &gpu, const std::vector<double> &yardstick) {
  const std::vector<float> g = toFloats(gpu);
  double dot = 0, gg = 0, yy = 0, diff = 0, max_abs = 0;
  for (std::size_t i = 0; i < g.size(); ++i) {
    dot += g[i] * yardstick[i], gg += double(g[i]) * g[i], yy += yardstick[i] * yardstick[i];
    diff += (g[i] - yardstick[i]) * (g[i] - yardstick[i]);
    max_abs = std::max(max_abs, std::fabs(g[i] - yardstick[i]));
  }
  cpu::Agreement a;
  a.cosine = dot / std::sqrt(gg * yy + 1e-300);
  a.rel_l2 = std::sqrt(diff / (yy + 1e-300));
  a.max_abs = max_abs;
  return a;
}

// One case end to end: quantize, the nvfp8 forward on the quantized operands (O, LSE), the
// backward; then the model with the device's O and LSE, and the reference.
void runCase(const Case &c, int repeats = 1) {
  const uint64_t seed = freshSeed();
  INFO(describe(c, seed));
  std::mt19937_64 rng(seed);
  Engine &engine = gpuEngine();
  const DenseShape &s = c.shape;
  const int D = s.head_dim;
  HostBf16 q = randomBf16(s.qElems(), 1.0f, rng), k = randomBf16(s.kvElems(), 1.0f, rng);
  HostBf16 v = randomBf16(s.kvElems(), 1.0f, rng), d_o = randomBf16(s.qElems(), 1.0f, rng);
  runtime::DeviceBuffer dq_in = upload(q.bits.data(), q.bits.size() * 2), dk_in = upload(k.bits.data(), k.bits.size() * 2);
  runtime::DeviceBuffer dv_in = upload(v.bits.data(), v.bits.size() * 2), ddo = upload(d_o.bits.data(), d_o.bits.size() * 2);
  const TensorDesc tq = TensorDesc::contiguous(dq_in.address(), DType::BF16, s.batch, s.heads_q, s.seqlen_q, D);
  const TensorDesc tk = TensorDesc::contiguous(dk_in.address(), DType::BF16, s.batch, s.heads_kv, s.seqlen_k, D);
  const TensorDesc tv = TensorDesc::contiguous(dv_in.address(), DType::BF16, s.batch, s.heads_kv, s.seqlen_k, D);
  auto qq = engine.quantize(tq, QuantFormat::Nvfp4, "q");
  REQUIRE_OK(qq);
  auto qk = engine.quantize(tk, QuantFormat::Nvfp4, "k");
  REQUIRE_OK(qk);
  auto qv = engine.quantize(tv, QuantFormat::Fp8PerHead, "v");
  REQUIRE_OK(qv);

  std::vector<uint16_t> poison_q(s.qElems(), 0x7FC0), poison_kv(s.kvElems(), 0x7FC0);
  runtime::DeviceBuffer o = upload(poison_q.data(), poison_q.size() * 2);
  std::vector<float> lse_poison(s.rows(), NAN);
  runtime::DeviceBuffer lse = upload(lse_poison.data(), lse_poison.size() * 4);
  QuantizedForwardArgs fa;
  fa.q = &*qq, fa.k = &*qk, fa.v = &*qv;
  fa.o = TensorDesc::contiguous(o.address(), DType::BF16, s.batch, s.heads_q, s.seqlen_q, D);
  fa.lse = lse.address();
  fa.route = Route::Nvfp8;
  fa.causal = c.causal;
  REQUIRE_SUCCESS(engine.forward(fa));

  std::optional<QuantizedTensor> v_mx;
  if (c.pv == BackwardPvFormat::Mxfp4) {
    auto m = engine.quantize(tv, QuantFormat::Mxfp4, "v");
    REQUIRE_OK(m);
    v_mx = std::move(*m);
  }
  runtime::DeviceBuffer gq = upload(poison_q.data(), poison_q.size() * 2);
  runtime::DeviceBuffer gk = upload(poison_kv.data(), poison_kv.size() * 2);
  runtime::DeviceBuffer gv = upload(poison_kv.data(), poison_kv.size() * 2);
  BackwardArgs ba;
  ba.q = &*qq, ba.k = &*qk, ba.v = v_mx ? &*v_mx : &*qv;
  ba.q_bf16 = tq, ba.k_bf16 = tk;
  ba.o = fa.o;
  ba.d_o = TensorDesc::contiguous(ddo.address(), DType::BF16, s.batch, s.heads_q, s.seqlen_q, D);
  ba.lse = lse.address();
  ba.dq = TensorDesc::contiguous(gq.address(), DType::BF16, s.batch, s.heads_q, s.seqlen_q, D);
  ba.dk = TensorDesc::contiguous(gk.address(), DType::BF16, s.batch, s.heads_kv, s.seqlen_k, D);
  ba.dv = TensorDesc::contiguous(gv.address(), DType::BF16, s.batch, s.heads_kv, s.seqlen_k, D);
  ba.causal = c.causal;
  ba.pv = c.pv;
  ba.qk = c.qk;
  ba.deterministic = c.deterministic;
  if (c.tile || c.mma) {
    auto chosen = engine.backwardSpecFor(ba);
    REQUIRE_OK(chosen);
    if (c.tile)
      chosen->backward.tile = *c.tile;
    if (c.mma)
      chosen->backward.mma = *c.mma;
    REQUIRE(specViolations(*chosen).empty());
    ba.spec = *chosen;
  }
  REQUIRE_SUCCESS(engine.backward(ba));
  Gradients first{download<uint16_t>(gq, s.qElems()), download<uint16_t>(gk, s.kvElems()),
                  download<uint16_t>(gv, s.kvElems())};
  for (int r = 1; r < repeats; ++r) { // deterministic: the same bits every run
    REQUIRE_SUCCESS(gq.copyFromHost(poison_q.data(), poison_q.size() * 2));
    REQUIRE_SUCCESS(engine.backward(ba));
    CHECK(download<uint16_t>(gq, s.qElems()) == first.dq);
    CHECK(download<uint16_t>(gk, s.kvElems()) == first.dk);
  }

  // The model on the device's O and LSE.
  const std::vector<float> o_host = toFloats(download<uint16_t>(o, s.qElems()));
  const std::vector<float> lse_host = download<float>(lse, s.rows());
  cpu::BackwardProblem p;
  p.forward.shape = cpu::AttentionShape{s.batch, s.heads_q, s.heads_kv, s.seqlen_q, s.seqlen_k, D};
  p.forward.q = cpu::TensorRef::contiguous(q.values.data(), s.heads_q, s.seqlen_q, D);
  p.forward.k = cpu::TensorRef::contiguous(k.values.data(), s.heads_kv, s.seqlen_k, D);
  p.forward.v = cpu::TensorRef::contiguous(v.values.data(), s.heads_kv, s.seqlen_k, D);
  p.d_o = cpu::TensorRef::contiguous(d_o.values.data(), s.heads_q, s.seqlen_q, D);
  p.o = cpu::TensorRef::contiguous(o_host.data(), s.heads_q, s.seqlen_q, D);
  p.lse = lse_host.data();
  auto spec = engine.backwardSpecFor(ba);
  REQUIRE_OK(spec);
  auto model = cpu::runBackwardModel(spec->backward, p);
  REQUIRE_OK(model);
  cpu::ReferenceOptions ro;
  ro.causal = c.causal;
  auto ref = cpu::referenceAttentionBackward(p, ro);
  REQUIRE_OK(ref);
  const cpu::Agreement mq = agree(first.dq, model->dq), mk = agree(first.dk, model->dk), mv = agree(first.dv, model->dv);
  const cpu::Agreement rq = agree(first.dq, ref->dq), rk = agree(first.dk, ref->dk), rv = agree(first.dv, ref->dv);
  std::printf("backward %-90s model rel-L2 dq %.2e dk %.2e dv %.2e | fp64 cos dq %.4f dk %.4f dv %.4f\n",
              describe(c, seed).c_str(), mq.rel_l2, mk.rel_l2, mv.rel_l2, rq.cosine, rk.cosine, rv.cosine);
  // The kernel and the model differ only in FP32 summation order and exp2's last bits, which can
  // move a BF16 dS or an E4M3 P by one step.
  constexpr double kModelRelL2 = 2e-2;
  CHECK(mq.rel_l2 < kModelRelL2);
  CHECK(mk.rel_l2 < kModelRelL2);
  CHECK(mv.rel_l2 < kModelRelL2);
  const double min_cos = c.pv == BackwardPvFormat::Mxfp4 ? 0.95 : 0.98;
  CHECK(rq.cosine > min_cos);
  CHECK(rk.cosine > min_cos);
  CHECK(rv.cosine > min_cos);
}

DenseShape shape(int b, int hq, int hkv, int sq, int sk, int d) { return DenseShape{b, hq, hkv, sq, sk, d}; }

} // namespace

TEST_CASE("backward: dQ, dK, dV against the model and the FP64 reference", "[gpu][backward]") {
  for (int d : {64, 128})
    for (bool causal : {false, true}) {
      runCase({shape(1, 2, 2, 256, 256, d), causal});
      runCase({shape(2, 4, 2, 200, 333, d), causal}); // GQA, ragged, Sq < Sk
      runCase({shape(1, 2, 1, 300, 130, d), causal}); // Sq > Sk: causal rows without keys
    }
}

TEST_CASE("backward: the MXFP4 P/V and saved NVFP4 Q/K variants", "[gpu][backward]") {
  runCase({shape(1, 2, 2, 256, 256, 64), false, BackwardPvFormat::Mxfp4});
  runCase({shape(1, 4, 2, 190, 250, 64), true, BackwardPvFormat::Mxfp4});
  runCase({shape(1, 4, 2, 190, 250, 128), true, BackwardPvFormat::Mxfp4});
  for (int d : {64, 128})
    runCase({shape(1, 2, 1, 256, 200, d), true, BackwardPvFormat::E4m3, BackwardQkOperands::SavedNvfp4});
}

TEST_CASE("backward: deterministic dQ repeats bit for bit", "[gpu][backward]") {
  for (int d : {64, 128})
    runCase({shape(1, 2, 1, 512, 512, d), true, BackwardPvFormat::E4m3, BackwardQkOperands::Bf16, true}, 3);
}

TEST_CASE("backward: every other tile the rules admit", "[gpu][backward]") {
  struct Variant {
    int head_dim;
    TileShape tile;
    BackwardMma mma;
  };
  const Variant variants[] = {
      {64, {32, 32, 2}, BackwardMma::MmaSync},  {64, {32, 64, 4}, BackwardMma::MmaSync},
      {64, {32, 128, 8}, BackwardMma::MmaSync}, {64, {64, 128, 8}, BackwardMma::MmaSync},
      {128, {16, 32, 2}, BackwardMma::MmaSync}, {128, {16, 64, 4}, BackwardMma::MmaSync},
      {128, {16, 128, 8}, BackwardMma::MmaSync}, {128, {32, 128, 8}, BackwardMma::MmaSync},
      {64, {32, 64, 4}, BackwardMma::Wgmma},    {64, {64, 64, 4}, BackwardMma::Wgmma},
      {64, {64, 128, 8}, BackwardMma::Wgmma},
      {128, {32, 64, 4}, BackwardMma::Wgmma},   {128, {64, 64, 4}, BackwardMma::Wgmma},
      {128, {32, 128, 8}, BackwardMma::Wgmma},  {128, {64, 128, 8}, BackwardMma::Wgmma}};
  for (const Variant &v : variants)
    runCase({shape(1, 4, 2, 200, 333, v.head_dim), true, BackwardPvFormat::E4m3, BackwardQkOperands::Bf16, false,
             v.tile, v.mma});
}

TEST_CASE("backward: the wgmma main pass beside the mma.sync one", "[gpu][backward]") {
  for (BackwardMma mma : {BackwardMma::MmaSync, BackwardMma::Wgmma})
    for (int d : {64, 128}) {
      const TileShape tile = d == 64 ? TileShape{64, 64, 4} : TileShape{32, 128, 8};
      for (bool causal : {false, true}) {
        runCase({shape(2, 4, 2, 200, 333, d), causal, BackwardPvFormat::E4m3, BackwardQkOperands::Bf16, false, tile,
                 mma});
        runCase({shape(1, 2, 1, 300, 130, d), causal, BackwardPvFormat::E4m3, BackwardQkOperands::Bf16, false, tile,
                 mma});
      }
      runCase({shape(1, 4, 2, 190, 250, d), true, BackwardPvFormat::Mxfp4, BackwardQkOperands::Bf16, false, tile,
               mma});
      runCase({shape(1, 2, 1, 256, 200, d), true, BackwardPvFormat::E4m3, BackwardQkOperands::SavedNvfp4, false, tile,
               mma});
      runCase({shape(1, 2, 1, 512, 512, d), true, BackwardPvFormat::E4m3, BackwardQkOperands::Bf16, true, tile, mma},
              3);
    }
}
