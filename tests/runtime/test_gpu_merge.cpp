// Engine::mergeStates on the GPU: shard states merged against one pass over all the keys (FP64
// reference) and against the host model of the same rule (fa4jit/cpu/merge.h), per state type and
// head dim; the rule's edges; in place and strided; fa4jit forwards over key halves merged; and bad
// calls as errors that name what is wrong.
#include "gpu_fixture.h"

#include "fa4jit/cpu/merge.h"
#include "merge_fixture.h"

#include <cmath>
#include <cstring>
#include <limits>

using namespace fa4jit;
using namespace fa4jit::testing;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

std::uint16_t halfBits(float f) {
  const _Float16 h = static_cast<_Float16>(f);
  std::uint16_t b;
  std::memcpy(&b, &h, 2);
  return b;
}
float halfValue(std::uint16_t b) {
  _Float16 h;
  std::memcpy(&h, &b, 2);
  return static_cast<float>(h);
}

// Values of `type` as stored (BF16 or FP16 bits, or FP32) and read back as floats.
std::vector<std::uint8_t> encode(const std::vector<float> &x, DType type) {
  const std::size_t eb = type == DType::F32 ? 4 : 2;
  std::vector<std::uint8_t> out(x.size() * eb);
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (type == DType::F32) {
      std::memcpy(&out[i * 4], &x[i], 4);
    } else {
      const std::uint16_t bits = type == DType::BF16 ? formats::floatToBF16(x[i]) : halfBits(x[i]);
      std::memcpy(&out[i * 2], &bits, 2);
    }
  }
  return out;
}
std::vector<float> decode(const std::vector<std::uint8_t> &bytes, DType type) {
  const std::size_t eb = type == DType::F32 ? 4 : 2, n = bytes.size() / eb;
  std::vector<float> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (type == DType::F32) {
      std::memcpy(&out[i], &bytes[i * 4], 4);
    } else {
      std::uint16_t bits;
      std::memcpy(&bits, &bytes[i * 2], 2);
      out[i] = type == DType::BF16 ? formats::bf16ToFloat(bits) : halfValue(bits);
    }
  }
  return out;
}

std::string mergeError(const MergeArgs &a) {
  llvm::Error e = gpuEngine().mergeStates(a);
  return e ? llvm::toString(std::move(e)) : std::string();
}

} // namespace

TEST_CASE("merged shard states equal one pass over all keys and the host model", "[gpu][merge]") {
  for (DType type : {DType::F32, DType::BF16, DType::F16})
    for (int head_dim : {64, 128, 256}) {
      const std::uint64_t seed = freshSeed();
      const ShardedProblem prob(3, 19, 240, head_dim, 1.5f, seed);
      const int B = prob.shape.batch, H = prob.shape.heads_q, S = prob.shape.seqlen_q;
      std::vector<float> full_o, full_lse;
      prob.state(0, prob.shape.seqlen_k, full_o, full_lse);
      for (int shards : {1, 2, 5, 16}) {
        INFO(toString(type) << " head_dim " << head_dim << ", " << shards << " shards, seed " << seed);
        std::vector<std::vector<float>> o(shards), lse(shards);
        std::vector<runtime::DeviceBuffer> o_dev, lse_dev;
        std::vector<AttentionState> parts;
        std::vector<cpu::StateRef> model_parts;
        const int per = prob.shape.seqlen_k / shards;
        for (int s = 0; s < shards; ++s) {
          const int first = s * per, count = s + 1 == shards ? prob.shape.seqlen_k - first : per;
          prob.state(first, count, o[s], lse[s]);
          const std::vector<std::uint8_t> stored = encode(o[s], type);
          o[s] = decode(stored, type); // the model merges the values as stored
          o_dev.push_back(upload(stored.data(), stored.size()));
          lse_dev.push_back(upload(lse[s].data(), lse[s].size() * 4));
          parts.push_back({TensorDesc::contiguous(o_dev.back().address(), type, B, H, S, head_dim),
                           lse_dev.back().address()});
          model_parts.push_back({o[s].data(), lse[s].data()});
        }
        const std::size_t eb = type == DType::F32 ? 4 : 2;
        const std::vector<std::uint8_t> poison(full_o.size() * eb, 0xFF);
        runtime::DeviceBuffer out = upload(poison.data(), poison.size());
        runtime::DeviceBuffer out_lse = upload(poison.data(), prob.rows() * 4);
        MergeArgs a;
        a.parts = parts;
        a.o = TensorDesc::contiguous(out.address(), type, B, H, S, head_dim);
        a.lse = out_lse.address();
        REQUIRE_SUCCESS(gpuEngine().mergeStates(a));
        const std::vector<float> got = decode(download<std::uint8_t>(out, poison.size()), type);
        const std::vector<float> got_lse = download<float>(out_lse, prob.rows());

        std::vector<float> model_o(full_o.size()), model_lse(prob.rows());
        REQUIRE_SUCCESS(cpu::mergeStatesModel(model_parts, std::int64_t(prob.rows()), head_dim, model_o.data(),
                                              model_lse.data()));
        const std::vector<float> model_stored = decode(encode(model_o, type), type);
        // The kernel and its model differ only by the device's expf/logf: a weight moves by a few
        // FP32 ulps, and up to 16 of them sum, which stays below 2^-18 (|O| < 2); rounding to
        // BF16/FP16 may carry that across one ulp of the stored type.
        const double ulp = type == DType::F32 ? 0x1p-18 : type == DType::F16 ? 0x1p-10 : 0x1p-7;
        std::size_t off = 0;
        for (std::size_t i = 0; i < got.size(); ++i)
          off += std::fabs(got[i] - model_stored[i]) > ulp * std::max(1.0f, std::fabs(model_stored[i]));
        CHECK(off == 0);
        for (std::size_t r = 0; r < prob.rows(); ++r)
          REQUIRE(got_lse[r] == Approx(model_lse[r]).epsilon(1e-6));
        if (type == DType::F32)
          CHECK(relL2(got, full_o) <= 1e-5);
        else
          CHECK(relL2(got, full_o) <= (type == DType::F16 ? 2e-3 : 1e-2));
      }
    }
}

TEST_CASE("merge edges on the GPU: empty parts unread, all-empty rows, in place, strided, no lse", "[gpu][merge]") {
  constexpr int B = 1, H = 2, S = 3, D = 128;
  constexpr std::size_t n = std::size_t(B) * H * S * D, rows = std::size_t(B) * H * S;
  std::vector<float> a(n), c(n, 1.0f);
  for (std::size_t i = 0; i < n; ++i)
    a[i] = 0.001f * float(i % 997) - 0.4f;
  const std::vector<float> nan_o(n, std::numeric_limits<float>::quiet_NaN());
  // Row r: part a has LSE lse_a[r], part b (NaN O) lse_b[r].
  const std::vector<float> lse_a = {0.0f, -kInf, 1.0f, 2.0f, -kInf, 0.5f};
  const std::vector<float> lse_b = {-kInf, -kInf, -kInf, -kInf, -kInf, -kInf};
  runtime::DeviceBuffer da = upload(a.data(), n * 4), db = upload(nan_o.data(), n * 4);
  runtime::DeviceBuffer la = upload(lse_a.data(), rows * 4), lb = upload(lse_b.data(), rows * 4);
  const AttentionState parts[] = {{TensorDesc::contiguous(da.address(), DType::F32, B, H, S, D), la.address()},
                                  {TensorDesc::contiguous(db.address(), DType::F32, B, H, S, D), lb.address()}};
  SECTION("empty parts are not read; rows with no key get O = 0, LSE = -inf") {
    runtime::DeviceBuffer out = upload(c.data(), n * 4), out_lse = upload(c.data(), rows * 4);
    MergeArgs m;
    m.parts = parts;
    m.o = TensorDesc::contiguous(out.address(), DType::F32, B, H, S, D);
    m.lse = out_lse.address();
    REQUIRE_SUCCESS(gpuEngine().mergeStates(m));
    const auto o = download<float>(out, n);
    const auto lse = download<float>(out_lse, rows);
    for (std::size_t r = 0; r < rows; ++r) {
      INFO("row " << r);
      CHECK(lse[r] == lse_a[r]);
      for (int d = 0; d < D; ++d)
        REQUIRE(o[r * D + d] == (lse_a[r] == -kInf ? 0.0f : a[r * D + d]));
    }
  }
  SECTION("in place into the first part, into a [B, S, H, D] view, lse not written") {
    runtime::DeviceBuffer dc = upload(c.data(), n * 4);
    const std::vector<float> lse_c(rows, 0.0f);
    runtime::DeviceBuffer lc = upload(lse_c.data(), rows * 4);
    AttentionState in_place[] = {parts[0], {TensorDesc::contiguous(dc.address(), DType::F32, B, H, S, D), lc.address()}};
    MergeArgs m;
    m.parts = in_place;
    m.o = in_place[0].o;
    m.lse = in_place[0].lse;
    REQUIRE_SUCCESS(gpuEngine().mergeStates(m));
    const auto o = download<float>(da, n);
    const auto lse = download<float>(la, rows);
    for (std::size_t r = 0; r < rows; ++r) {
      const double wa = lse_a[r] == -kInf ? 0.0 : std::exp(double(lse_a[r])), wc = 1.0;
      CHECK(lse[r] == Approx(std::log(wa + wc)).epsilon(1e-6));
      for (int d = 0; d < D; d += 17)
        REQUIRE(o[r * D + d] == Approx((wa * a[r * D + d] + wc) / (wa + wc)).epsilon(1e-6));
    }
    // The merged state of that once more, into a BSHD view and without an LSE.
    std::vector<float> poison(n, -9.0f);
    runtime::DeviceBuffer bshd = upload(poison.data(), n * 4);
    TensorDesc view{bshd.address(), DType::F32, {B, H, S, D}, {S * H * D, D, H * D, 1}};
    MergeArgs again;
    again.parts = llvm::ArrayRef<AttentionState>(in_place, 1);
    again.o = view;
    REQUIRE_SUCCESS(gpuEngine().mergeStates(again));
    const auto strided = download<float>(bshd, n);
    for (int h = 0; h < H; ++h)
      for (int s = 0; s < S; ++s)
        for (int d = 0; d < D; ++d)
          REQUIRE(strided[(s * H + h) * D + d] == o[(h * S + s) * D + d]); // one part: weight 1, exact
  }
}

TEST_CASE("two fa4jit forwards over key halves, merged, are as accurate as one forward", "[gpu][merge]") {
  DenseShape s;
  s.batch = 1, s.heads_q = 4, s.heads_kv = 2, s.seqlen_q = 128, s.seqlen_k = 1024, s.head_dim = 128;
  const std::uint64_t seed = freshSeed();
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  const HostBf16 q = randomBf16(s.qElems(), 1.0f, rng), k = randomBf16(s.kvElems(), 1.0f, rng),
                 v = randomBf16(s.kvElems(), 1.0f, rng);
  runtime::DeviceBuffer dq = upload(q.bits.data(), s.qElems() * 2), dk = upload(k.bits.data(), s.kvElems() * 2),
                        dv = upload(v.bits.data(), s.kvElems() * 2);
  cpu::AttentionProblem problem;
  problem.shape = {s.batch, s.heads_q, s.heads_kv, s.seqlen_q, s.seqlen_k, s.head_dim};
  problem.q = cpu::TensorRef::contiguous(q.values.data(), s.heads_q, s.seqlen_q, s.head_dim);
  problem.k = cpu::TensorRef::contiguous(k.values.data(), s.heads_kv, s.seqlen_k, s.head_dim);
  problem.v = cpu::TensorRef::contiguous(v.values.data(), s.heads_kv, s.seqlen_k, s.head_dim);
  auto reference = cpu::referenceAttention(problem, cpu::ReferenceOptions{});
  REQUIRE_OK(reference);
  const std::vector<float> ref_o(reference->o.begin(), reference->o.end());
  const std::vector<uint16_t> poison(s.qElems(), 0x7fc0);
  for (Route route : {Route::Bf16, Route::Nvfp8, Route::DirectP}) {
    INFO(toString(route));
    runtime::DeviceBuffer full = upload(poison.data(), s.qElems() * 2), full_lse = upload(poison.data(), s.rows() * 4);
    REQUIRE_SUCCESS(gpuEngine().forward(
        denseForwardArgs(s, dq.address(), dk.address(), dv.address(), full.address(), full_lse.address(), route, false)));
    std::vector<runtime::DeviceBuffer> halves, half_lses;
    std::vector<AttentionState> parts;
    for (int half = 0; half < 2; ++half) {
      halves.push_back(upload(poison.data(), s.qElems() * 2));
      half_lses.push_back(upload(poison.data(), s.rows() * 4));
      ForwardArgs a = denseForwardArgs(s, dq.address(), dk.address(), dv.address(), halves.back().address(),
                                       half_lses.back().address(), route, false);
      a.k.shape[2] = a.v.shape[2] = s.seqlen_k / 2; // keys [half * Sk/2, + Sk/2) of each head
      a.k.data += std::uint64_t(half) * (s.seqlen_k / 2) * s.head_dim * 2;
      a.v.data += std::uint64_t(half) * (s.seqlen_k / 2) * s.head_dim * 2;
      REQUIRE_SUCCESS(gpuEngine().forward(a));
      parts.push_back({a.o, a.lse});
    }
    runtime::DeviceBuffer merged = upload(poison.data(), s.qElems() * 2), merged_lse = upload(poison.data(), s.rows() * 4);
    MergeArgs m;
    m.parts = parts;
    m.o = TensorDesc::contiguous(merged.address(), DType::BF16, s.batch, s.heads_q, s.seqlen_q, s.head_dim);
    m.lse = merged_lse.address();
    REQUIRE_SUCCESS(gpuEngine().mergeStates(m));
    std::vector<float> one, two;
    for (uint16_t bits : download<uint16_t>(full, s.qElems()))
      one.push_back(formats::bf16ToFloat(bits));
    for (uint16_t bits : download<uint16_t>(merged, s.qElems()))
      two.push_back(formats::bf16ToFloat(bits));
    // Each half quantizes its own keys (per-head scales of its own): the merged result is another
    // approximation of the same attention, as close to FP64 as one pass.
    const double err_one = relL2(one, ref_o), err_two = relL2(two, ref_o);
    INFO("rel-L2 vs FP64: one pass " << err_one << ", merged halves " << err_two);
    CHECK(err_two <= 1.1 * err_one + 2e-3);
    if (route == Route::Bf16)
      CHECK(relL2(two, one) <= 8e-3); // (BF16 rounding of the halves' O)
    const auto lse_one = download<float>(full_lse, s.rows()), lse_two = download<float>(merged_lse, s.rows());
    double lse_err_one = 0, lse_err_two = 0;
    for (std::size_t r = 0; r < s.rows(); ++r) {
      lse_err_one = std::max(lse_err_one, std::fabs(double(lse_one[r]) - reference->lse[r]));
      lse_err_two = std::max(lse_err_two, std::fabs(double(lse_two[r]) - reference->lse[r]));
    }
    INFO("max |LSE error| vs FP64: one pass " << lse_err_one << ", merged halves " << lse_err_two);
    CHECK(lse_err_two <= 1.5 * lse_err_one + 1e-3);
  }
}

TEST_CASE("bad merges are errors that name what is wrong", "[gpu][merge][validate]") {
  constexpr int B = 1, H = 2, S = 8, D = 64;
  const std::vector<float> zeros(std::size_t(B) * H * S * D, 0.0f);
  runtime::DeviceBuffer o = upload(zeros.data(), zeros.size() * 4), lse = upload(zeros.data(), B * H * S * 4);
  const AttentionState good{TensorDesc::contiguous(o.address(), DType::F32, B, H, S, D), lse.address()};
  auto args = [&](std::vector<AttentionState> &parts) {
    MergeArgs m;
    m.parts = parts;
    m.o = good.o;
    m.lse = lse.address();
    return m;
  };
  {
    alignas(16) static float host[B * H * S * D];
    std::vector<AttentionState> parts = {good, good};
    parts[1].o.data = reinterpret_cast<std::uint64_t>(host);
    const std::string e = mergeError(args(parts));
    CHECK(e.find("merge part o") != std::string::npos);
    CHECK(e.find("is not device memory") != std::string::npos);
  }
  {
    std::vector<AttentionState> parts = {good, good};
    parts[0].lse += 16; // the last rows past the allocation
    CHECK(mergeError(args(parts)).find("merge part lse") != std::string::npos);
  }
  {
    std::vector<AttentionState> parts(17, good);
    CHECK(mergeError(args(parts)).find("17 parts") != std::string::npos);
  }
  {
    std::vector<AttentionState> parts = {good};
    parts[0].o.shape[2] = S / 2;
    CHECK(mergeError(args(parts)).find("differs from the merged o's") != std::string::npos);
  }
  {
    std::vector<AttentionState> parts = {good};
    MergeArgs m = args(parts);
    m.o.shape[2] = 0; // no rows: nothing to do
    m.parts = {};
    CHECK(mergeError(m).find("0 parts") != std::string::npos); // (but parts are still required)
    m.parts = parts;
    parts[0].o.shape[2] = 0;
    CHECK(mergeError(m).empty());
  }
  std::vector<AttentionState> parts = {good, good}; // the engine still works
  REQUIRE_SUCCESS(gpuEngine().mergeStates(args(parts)));
}
