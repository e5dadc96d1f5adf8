// The merge-states rule on the host (fa4jit/cpu/merge.h): attention over key shards, each shard's
// FP32 state from the FP64 reference, merged, against one reference pass over all the keys; and
// the rule's edges (empty parts, all-empty rows, NaN, one part, in place).
#include "fa4jit/cpu/merge.h"

#include "merge_fixture.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

using namespace fa4jit::cpu;
using fa4jit::testing::relL2;
using fa4jit::testing::ShardedProblem;

namespace {
constexpr float kInf = std::numeric_limits<float>::infinity();
} // namespace

TEST_CASE("merged shard states equal one pass over all keys within FP32 rounding", "[cpu][merge]") {
  for (int head_dim : {64, 128}) {
    const ShardedProblem prob(3, 19, 240, head_dim, 1.5f, 11u + head_dim);
    std::vector<float> full_o, full_lse;
    prob.state(0, prob.shape.seqlen_k, full_o, full_lse);
    for (int shards : {1, 2, 3, 16}) {
      INFO("head_dim " << head_dim << ", " << shards << " shards");
      std::vector<std::vector<float>> o(shards), lse(shards);
      std::vector<StateRef> parts;
      const int per = prob.shape.seqlen_k / shards;
      for (int s = 0; s < shards; ++s) {
        const int first = s * per, count = s + 1 == shards ? prob.shape.seqlen_k - first : per;
        prob.state(first, count, o[s], lse[s]);
        parts.push_back({o[s].data(), lse[s].data()});
      }
      std::vector<float> merged_o(full_o.size()), merged_lse(full_lse.size());
      REQUIRE_FALSE(static_cast<bool>(mergeStatesModel(parts, prob.rows(), head_dim, merged_o.data(), merged_lse.data())));
      CHECK(relL2(merged_o, full_o) <= 1e-6);
      for (std::size_t r = 0; r < full_lse.size(); ++r)
        REQUIRE(merged_lse[r] == Approx(full_lse[r]).epsilon(1e-6));
    }
  }
}

TEST_CASE("merge rule edges: empty parts, all-empty rows, NaN, one part, in place", "[cpu][merge]") {
  constexpr int D = 64;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> o_a(2 * D), o_b(2 * D, nan), out(2 * D, 7.0f);
  for (int i = 0; i < 2 * D; ++i)
    o_a[i] = 0.01f * float(i) - 0.3f;
  SECTION("a part with LSE -inf is not read, even when its O is NaN") {
    const std::vector<float> lse_a = {0.5f, -3.0f}, lse_b = {-kInf, -kInf};
    std::vector<float> lse(2);
    const StateRef parts[] = {{o_a.data(), lse_a.data()}, {o_b.data(), lse_b.data()}};
    REQUIRE_FALSE(static_cast<bool>(mergeStatesModel(parts, 2, D, out.data(), lse.data())));
    CHECK(out == o_a); // weight exactly 1: the one non-empty part, bit for bit
    CHECK(lse == lse_a);
  }
  SECTION("rows whose parts are all empty get O = 0 and LSE = -inf") {
    const std::vector<float> lse_a = {-kInf, 1.0f}, lse_b = {-kInf, -kInf};
    std::vector<float> lse(2);
    const StateRef parts[] = {{o_a.data(), lse_a.data()}, {o_b.data(), lse_b.data()}};
    REQUIRE_FALSE(static_cast<bool>(mergeStatesModel(parts, 2, D, out.data(), lse.data())));
    for (int d = 0; d < D; ++d)
      REQUIRE(out[d] == 0.0f);
    CHECK(lse[0] == -kInf);
    CHECK(lse[1] == 1.0f);
  }
  SECTION("a NaN LSE makes its row NaN, also beside empty parts") {
    const std::vector<float> lse_a = {nan, 0.0f}, lse_b = {-kInf, nan};
    std::vector<float> lse(2);
    const StateRef parts[] = {{o_a.data(), lse_a.data()}, {o_a.data(), lse_b.data()}};
    REQUIRE_FALSE(static_cast<bool>(mergeStatesModel(parts, 2, D, out.data(), lse.data())));
    CHECK(std::isnan(lse[0]));
    CHECK(std::isnan(lse[1]));
    CHECK(std::isnan(out[0]));
    CHECK(std::isnan(out[D]));
  }
  SECTION("equal LSEs average; the merged LSE adds log 2") {
    const std::vector<float> lse_a = {2.0f, -1.0f};
    std::vector<float> o_c(2 * D), lse(2);
    for (int i = 0; i < 2 * D; ++i)
      o_c[i] = 1.0f - o_a[i];
    const StateRef parts[] = {{o_a.data(), lse_a.data()}, {o_c.data(), lse_a.data()}};
    REQUIRE_FALSE(static_cast<bool>(mergeStatesModel(parts, 2, D, out.data(), lse.data())));
    for (int i = 0; i < 2 * D; ++i)
      REQUIRE(out[i] == Approx(0.5f).margin(1e-7));
    CHECK(lse[0] == Approx(2.0f + std::log(2.0f)).epsilon(1e-7));
  }
  SECTION("in place: the output is the first part") {
    std::vector<float> lse_a = {0.0f, 0.0f}, lse_c = {0.0f, -kInf};
    std::vector<float> o_c(2 * D, 1.0f);
    const std::vector<float> before = o_a;
    const StateRef parts[] = {{o_a.data(), lse_a.data()}, {o_c.data(), lse_c.data()}};
    REQUIRE_FALSE(static_cast<bool>(mergeStatesModel(parts, 2, D, o_a.data(), lse_a.data())));
    CHECK(o_a[0] == Approx(0.5f * (before[0] + 1.0f)));
    CHECK(o_a[D] == before[D]); // row 1: the second part is empty
    CHECK(lse_a[0] == Approx(std::log(2.0f)));
  }
}

TEST_CASE("merge model: bad part counts and missing parts are errors", "[cpu][merge]") {
  std::vector<float> o(64), lse(1);
  std::vector<StateRef> parts(17, StateRef{o.data(), lse.data()});
  llvm::Error too_many = mergeStatesModel(parts, 1, 64, o.data(), lse.data());
  REQUIRE(static_cast<bool>(too_many));
  CHECK(llvm::toString(std::move(too_many)).find("17 parts") != std::string::npos);
  parts.resize(2);
  parts[1].lse = nullptr;
  llvm::Error missing = mergeStatesModel(parts, 1, 64, o.data(), lse.data());
  REQUIRE(static_cast<bool>(missing));
  CHECK(llvm::toString(std::move(missing)).find("part 1") != std::string::npos);
}
