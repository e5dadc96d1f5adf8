// NaN and Inf inputs (docs/NUMERICS.md §1.3). By default they propagate with no synchronization:
// on the quantized routes exactly the output rows a non-finite element reaches are NaN (O and
// LSE), and every other row is bit for bit the result of the same inputs with 0 in their place;
// the bf16 route's arithmetic makes the rows that see one NaN. With the Check policy each is an
// error naming the tensor, batch, head and row.
#include "gpu_fixture.h"

#include <cmath>
#include <cstring>
#include <vector>

using namespace fa4jit;
using namespace fa4jit::testing;

namespace {

// GQA (two query heads per kv head), Sq != Sk so that causal masking is bottom-right aligned.
DenseShape shape() {
  DenseShape s;
  s.batch = 2, s.heads_q = 4, s.heads_kv = 2, s.seqlen_q = 200, s.seqlen_k = 300, s.head_dim = 128;
  return s;
}

struct Poison {
  int b, h, row, d;
  uint16_t bits;
};
// Q: NaN in batch 0, head 1, row 17. K: +Inf in batch 1, kv head 0, key 250. V: -Inf in batch 0,
// kv head 1, key 100.
const Poison kQ{0, 1, 17, 5, 0x7FC0}, kK{1, 0, 250, 64, 0x7F80}, kV{0, 1, 100, 127, 0xFF80};

std::size_t at(const DenseShape &s, int heads, int seqlen, const Poison &p) {
  return ((std::size_t(p.b) * heads + p.h) * seqlen + p.row) * s.head_dim + p.d;
}

// Whether output row (b, h, i) is reached by one of the poisoned elements.
bool reached(const DenseShape &s, bool causal, int b, int h, int i) {
  if (b == kQ.b && h == kQ.h && i == kQ.row)
    return true;
  const int hkv = h / (s.heads_q / s.heads_kv);
  for (const Poison &p : {kK, kV})
    if (b == p.b && hkv == p.h && (!causal || p.row <= i + s.seqlen_k - s.seqlen_q))
      return true;
  return false;
}

struct Run {
  std::vector<uint16_t> o;
  std::vector<float> lse;
};

Run forward(Engine &engine, const DenseShape &s, const HostBf16 &q, const HostBf16 &k, const HostBf16 &v,
            Route route, bool causal, std::string *error = nullptr) {
  runtime::DeviceBuffer dq = upload(q.bits.data(), s.qElems() * 2), dk = upload(k.bits.data(), s.kvElems() * 2),
                        dv = upload(v.bits.data(), s.kvElems() * 2);
  const std::vector<uint16_t> o_poison(s.qElems(), 0x1234);
  const std::vector<float> lse_poison(s.rows(), 777.0f);
  runtime::DeviceBuffer o = upload(o_poison.data(), s.qElems() * 2), lse = upload(lse_poison.data(), s.rows() * 4);
  llvm::Error err =
      engine.forward(denseForwardArgs(s, dq.address(), dk.address(), dv.address(), o.address(), lse.address(), route,
                                      causal));
  if (error) {
    *error = err ? llvm::toString(std::move(err)) : std::string();
    return {};
  }
  REQUIRE_SUCCESS(std::move(err));
  return {download<uint16_t>(o, s.qElems()), download<float>(lse, s.rows())};
}

bool isNanBf16(uint16_t bits) { return (bits & 0x7F80) == 0x7F80 && (bits & 0x7F) != 0; }

} // namespace

TEST_CASE("non-finite inputs make exactly the rows they reach NaN; the rest is as with zeros", "[gpu][nonfinite]") {
  const DenseShape s = shape();
  const uint64_t seed = freshSeed();
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  HostBf16 q = randomBf16(s.qElems(), 1.0f, rng), k = randomBf16(s.kvElems(), 1.0f, rng),
           v = randomBf16(s.kvElems(), 1.0f, rng);
  HostBf16 q_bad = q, k_bad = k, v_bad = v; // the same with the poison, and the clean ones with 0
  q_bad.bits[at(s, s.heads_q, s.seqlen_q, kQ)] = kQ.bits, q.bits[at(s, s.heads_q, s.seqlen_q, kQ)] = 0;
  k_bad.bits[at(s, s.heads_kv, s.seqlen_k, kK)] = kK.bits, k.bits[at(s, s.heads_kv, s.seqlen_k, kK)] = 0;
  v_bad.bits[at(s, s.heads_kv, s.seqlen_k, kV)] = kV.bits, v.bits[at(s, s.heads_kv, s.seqlen_k, kV)] = 0;
  Engine &engine = gpuEngine();
  REQUIRE(engine.nonFinitePolicy() == runtime::NonFinitePolicy::Propagate);
  for (Route route : {Route::DirectP, Route::Nvfp8})
    for (bool causal : {false, true}) {
      INFO(toString(route) << " causal " << causal);
      const Run bad = forward(engine, s, q_bad, k_bad, v_bad, route, causal);
      const Run clean = forward(engine, s, q, k, v, route, causal);
      std::size_t nan_rows = 0, kept_rows = 0, wrong = 0;
      for (int b = 0; b < s.batch; ++b)
        for (int h = 0; h < s.heads_q; ++h)
          for (int i = 0; i < s.seqlen_q; ++i) {
            const std::size_t row = (std::size_t(b) * s.heads_q + h) * s.seqlen_q + i;
            const uint16_t *o = &bad.o[row * s.head_dim];
            if (reached(s, causal, b, h, i)) {
              ++nan_rows;
              bool all_nan = std::isnan(bad.lse[row]);
              for (int d = 0; d < s.head_dim; ++d)
                all_nan &= isNanBf16(o[d]);
              wrong += !all_nan;
            } else {
              ++kept_rows;
              const bool same = std::memcmp(o, &clean.o[row * s.head_dim], s.head_dim * 2) == 0 &&
                                std::memcmp(&bad.lse[row], &clean.lse[row], 4) == 0;
              wrong += !same;
            }
          }
      CHECK(wrong == 0);
      CHECK(nan_rows > 0);
      CHECK(kept_rows > 0);
    }
}

TEST_CASE("the bf16 route's arithmetic makes the rows that see a NaN NaN", "[gpu][nonfinite]") {
  const DenseShape s = shape();
  std::mt19937_64 rng(5);
  HostBf16 q = randomBf16(s.qElems(), 1.0f, rng), k = randomBf16(s.kvElems(), 1.0f, rng),
           v = randomBf16(s.kvElems(), 1.0f, rng);
  q.bits[at(s, s.heads_q, s.seqlen_q, kQ)] = kQ.bits;
  k.bits[at(s, s.heads_kv, s.seqlen_k, kK)] = 0x7FC0; // NaN (an Inf score may weigh 0, as in any attention)
  const Run r = forward(gpuEngine(), s, q, k, v, Route::Bf16, false);
  auto rowNan = [&](int b, int h, int i) {
    const std::size_t row = (std::size_t(b) * s.heads_q + h) * s.seqlen_q + i;
    bool all = true;
    for (int d = 0; d < s.head_dim; ++d)
      all &= isNanBf16(r.o[row * s.head_dim + d]);
    return all;
  };
  CHECK(rowNan(kQ.b, kQ.h, kQ.row));
  CHECK_FALSE(rowNan(kQ.b, kQ.h, kQ.row + 1));
  for (int h = 0; h < 2; ++h) // query heads of kv head 0
    for (int i : {0, 99, 199})
      CHECK(rowNan(kK.b, h, i));
  CHECK_FALSE(rowNan(kK.b, 2, 0));
}

TEST_CASE("with the Check policy a non-finite input is an error naming where it is", "[gpu][nonfinite]") {
  EngineOptions options;
  options.nonfinite = runtime::NonFinitePolicy::Check;
  auto checking = Engine::create(options);
  REQUIRE_OK(checking);
  REQUIRE((*checking)->nonFinitePolicy() == runtime::NonFinitePolicy::Check);
  const DenseShape s = shape();
  std::mt19937_64 rng(9);
  HostBf16 q = randomBf16(s.qElems(), 1.0f, rng), k = randomBf16(s.kvElems(), 1.0f, rng),
           v = randomBf16(s.kvElems(), 1.0f, rng);
  for (Route route : {Route::DirectP, Route::Nvfp8, Route::Bf16}) {
    INFO(toString(route));
    std::string error;
    forward(**checking, s, q, k, v, route, true, &error);
    CHECK(error.empty()); // finite inputs pass
    HostBf16 bad = v;
    bad.bits[at(s, s.heads_kv, s.seqlen_k, kV)] = kV.bits;
    forward(**checking, s, q, k, bad, route, true, &error);
    CHECK_THAT(error, Catch::Contains("v: input holds NaN or Inf (first at batch 0, head 1, row 100)"));
    bad = q;
    bad.bits[at(s, s.heads_q, s.seqlen_q, kQ)] = kQ.bits;
    forward(**checking, s, bad, k, v, route, true, &error);
    CHECK_THAT(error, Catch::Contains("q: input holds NaN or Inf (first at batch 0, head 1, row 17)"));
  }
  // quantize() itself, on the policy's terms
  HostBf16 bad = k;
  bad.bits[at(s, s.heads_kv, s.seqlen_k, kK)] = kK.bits;
  runtime::DeviceBuffer dk = upload(bad.bits.data(), s.kvElems() * 2);
  const TensorDesc kd = TensorDesc::contiguous(dk.address(), DType::BF16, s.batch, s.heads_kv, s.seqlen_k, s.head_dim);
  auto checked = (*checking)->quantize(kd, QuantFormat::Nvfp4, "k");
  REQUIRE_FALSE(bool(checked));
  CHECK_THAT(errorText(checked.takeError()), Catch::Contains("k: input holds NaN or Inf (first at batch 1, head 0, row 250)"));
  auto recorded = gpuEngine().quantize(kd, QuantFormat::Nvfp4, "k");
  REQUIRE_OK(recorded);
  const auto first = download<int32_t>(recorded->nonfinite_rows, std::size_t(s.batch) * s.heads_kv);
  CHECK(first == std::vector<int32_t>{0x7FFFFFFF, 0x7FFFFFFF, 250, 0x7FFFFFFF});
}
