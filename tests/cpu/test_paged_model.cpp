// The paged cache's host model (fa4jit/cpu/paged.h): the per-row encoding's accuracy and
// independence, what a skipped slot and a non-finite value do, and decode with the kernel's
// roundings against the FP64 reference over the dequantized cache (GQA, several queries, causal,
// shuffled pages), with its edges: no visible key, a length past the block table, a bad page.
#include "fa4jit/cpu/paged.h"

#include "paged_fixture.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

using namespace fa4jit::cpu;
using fa4jit::testing::PagedProblem;
using fa4jit::testing::relL2;

TEST_CASE("append: each row's dequantized K and V within their formats' error", "[cpu][paged]") {
  for (fa4jit::KvValueFormat value : {fa4jit::KvValueFormat::Fp8, fa4jit::KvValueFormat::Mxfp4}) {
  INFO(fa4jit::toString(value) << " V");
  const PagedProblem prob({37, 70}, 2, 1, 1, 128, 16, 1.0f, 5u, 1, value);
  const PagedCache &c = prob.cache;
  std::vector<float> k(128), v(128);
  double k_err = 0, k_ref = 0, v_err = 0, v_ref = 0;
  for (std::int64_t t = 0; t < prob.tokens(); ++t)
    for (int h = 0; h < 2; ++h) {
      const std::int64_t slot = prob.slots[t];
      const std::int64_t row = c.row(slot / 16, h, static_cast<int>(slot % 16));
      c.dequantizeK(row, k.data());
      c.dequantizeV(row, v.data());
      for (int d = 0; d < 128; ++d) {
        const float kx = prob.k_new[(t * 2 + h) * 128 + d], vx = prob.v_new[(t * 2 + h) * 128 + d];
        k_err += (k[d] - kx) * (k[d] - kx), k_ref += kx * kx;
        v_err += (v[d] - vx) * (v[d] - vx), v_ref += vx * vx;
      }
    }
  // NVFP4 with a scale per 16 values keeps rel-L2 near 0.09 on Gaussian rows; E4M3 near 0.025;
  // MXFP4 (power-of-two scales per 32) near 0.12.
  CHECK(std::sqrt(k_err / k_ref) < 0.12);
  CHECK(std::sqrt(v_err / v_ref) < (value == fa4jit::KvValueFormat::Fp8 ? 0.035 : 0.16));
  CHECK(std::sqrt(v_err / v_ref) > (value == fa4jit::KvValueFormat::Fp8 ? 0.005 : 0.05));
  CHECK(std::sqrt(k_err / k_ref) > 0.01); // (the codes are FP4: not the input)
  }
}

TEST_CASE("append: rows are independent (one token at a time gives the same bits) and skipped slots untouched",
          "[cpu][paged]") {
  const PagedProblem prob({50}, 3, 1, 1, 64, 32, 2.0f, 7u);
  PagedCache one = PagedCache::create(prob.cache.pages, 3, 32, 64);
  const std::size_t row_values = 3 * 64;
  for (std::int64_t t = prob.tokens() - 1; t >= 0; --t) { // (in reverse: order must not matter)
    const std::vector<float> k(prob.k_new.begin() + t * row_values, prob.k_new.begin() + (t + 1) * row_values);
    const std::vector<float> v(prob.v_new.begin() + t * row_values, prob.v_new.begin() + (t + 1) * row_values);
    REQUIRE_FALSE(static_cast<bool>(appendModel(one, k, v, {prob.slots[t]})));
  }
  CHECK(one.k_codes == prob.cache.k_codes);
  CHECK(one.k_block_scales == prob.cache.k_block_scales);
  CHECK(one.k_row_scales == prob.cache.k_row_scales);
  CHECK(one.v_codes == prob.cache.v_codes);
  CHECK(one.v_row_scales == prob.cache.v_row_scales);

  PagedCache skipped = prob.cache;
  std::vector<float> ones(row_values, 1.0f);
  const std::int64_t capacity = std::int64_t(skipped.pages) * 32;
  REQUIRE_FALSE(static_cast<bool>(appendModel(skipped, ones, ones, {-1})));
  REQUIRE_FALSE(static_cast<bool>(appendModel(skipped, ones, ones, {capacity})));
  CHECK(skipped.k_codes == prob.cache.k_codes);
  CHECK(skipped.v_row_scales == prob.cache.v_row_scales);
  CHECK(static_cast<bool>(appendModel(skipped, ones, {}, {0})));
}

TEST_CASE("append, MXFP4 V: a NaN marks every block of its row and the decode model makes its rows NaN",
          "[cpu][paged]") {
  PagedProblem prob({20}, 1, 1, 2, 64, 16, 1.0f, 41u, 1, fa4jit::KvValueFormat::Mxfp4);
  PagedCache &c = prob.cache;
  std::vector<float> k(64, 0.5f), v(64, 0.25f);
  v[40] = std::numeric_limits<float>::infinity();
  const std::int64_t last = prob.slots.back();
  REQUIRE_FALSE(static_cast<bool>(appendModel(c, k, v, {last})));
  const std::int64_t row = c.row(last / 16, 0, static_cast<int>(last % 16));
  CHECK(c.v_block_scales[row * 2] == 0xFF);
  CHECK(c.v_block_scales[row * 2 + 1] == 0xFF);
  CHECK(std::isnan(c.vRowFactor(row)));
  std::vector<float> o, lse;
  REQUIRE_FALSE(static_cast<bool>(decodeModel(c, prob.decode, prob.q, o, lse)));
  CHECK(std::isfinite(o[0]));  // query 0 does not see the last token
  CHECK(std::isnan(o[64]));
  CHECK(std::isfinite(lse[1])); // (V does not enter the LSE)
}

TEST_CASE("append: a NaN or Inf makes its row's scale NaN and leaves the others' bits", "[cpu][paged]") {
  PagedCache c = PagedCache::create(2, 2, 16, 64);
  std::vector<float> k(2 * 64), v(2 * 64);
  for (int i = 0; i < 128; ++i)
    k[i] = std::sin(0.1f * i), v[i] = std::cos(0.07f * i);
  PagedCache clean = c;
  REQUIRE_FALSE(static_cast<bool>(appendModel(clean, k, v, {3})));
  k[5] = std::numeric_limits<float>::quiet_NaN();             // head 0's K row
  v[64 + 9] = -std::numeric_limits<float>::infinity();        // head 1's V row
  REQUIRE_FALSE(static_cast<bool>(appendModel(c, k, v, {3})));
  CHECK(std::isnan(c.k_row_scales[c.row(0, 0, 3)]));
  CHECK(c.v_row_scales[c.row(0, 0, 3)] == clean.v_row_scales[clean.row(0, 0, 3)]);
  CHECK(std::isnan(c.v_row_scales[c.row(0, 1, 3)]));
  CHECK(c.k_row_scales[c.row(0, 1, 3)] == clean.k_row_scales[clean.row(0, 1, 3)]);
}

TEST_CASE("decode model equals the FP64 reference over the dequantized cache", "[cpu][paged]") {
  struct Case {
    std::vector<int> lens;
    int kv_heads, group, queries, head_dim, page_size;
    fa4jit::KvValueFormat value;
  };
  using fa4jit::KvValueFormat;
  const Case cases[] = {
      {{1, 17, 300}, 2, 4, 1, 128, 16, KvValueFormat::Fp8},   // GQA 4, one query
      {{64, 129}, 1, 8, 3, 64, 32, KvValueFormat::Fp8},       // three queries, causal among themselves
      {{250}, 2, 2, 8, 128, 64, KvValueFormat::Mxfp4},        // speculative: eight queries
      {{5}, 1, 1, 2, 64, 256, KvValueFormat::Fp8},            // MHA, one page
      {{1, 17, 300}, 2, 4, 1, 128, 16, KvValueFormat::Mxfp4}, // MXFP4 V
  };
  for (const Case &cs : cases) {
    INFO("head_dim " << cs.head_dim << ", page " << cs.page_size << ", group " << cs.group << ", queries "
                     << cs.queries << ", " << fa4jit::toString(cs.value) << " V");
    const PagedProblem prob(cs.lens, cs.kv_heads, cs.group, cs.queries, cs.head_dim, cs.page_size, 1.0f, 19u, 1,
                            cs.value);
    std::vector<float> o, lse;
    std::vector<double> ref_o, ref_lse;
    REQUIRE_FALSE(static_cast<bool>(decodeModel(prob.cache, prob.decode, prob.q, o, lse)));
    REQUIRE_FALSE(static_cast<bool>(decodeReference(prob.cache, prob.decode, prob.q, ref_o, ref_lse)));
    CHECK(relL2(o, ref_o) < 2e-5);
    for (std::size_t r = 0; r < lse.size(); ++r)
      CHECK(std::fabs(lse[r] - ref_lse[r]) < 1e-4 * (1 + std::fabs(ref_lse[r])));
  }
}

TEST_CASE("decode model: causal rows without a visible token, bad lengths and bad pages", "[cpu][paged]") {
  PagedProblem prob({3, 40}, 1, 2, 4, 64, 16, 1.0f, 23u);
  std::vector<float> o, lse;
  REQUIRE_FALSE(static_cast<bool>(decodeModel(prob.cache, prob.decode, prob.q, o, lse)));
  // sequence 0 has 3 tokens and 4 queries: query 0 sees none (row = head * 4 + query)
  for (int h = 0; h < 2; ++h) {
    CHECK(lse[h * 4] == -std::numeric_limits<float>::infinity());
    for (int d = 0; d < 64; ++d)
      CHECK(o[(h * 4) * 64 + d] == 0.0f);
    CHECK(std::isfinite(lse[h * 4 + 1]));
  }
  DecodeProblem bad = prob.decode;
  bad.seq_lens[0] = bad.block_table_stride * 16 + 1; // past its block table
  bad.block_table[bad.block_table_stride + 1] = prob.cache.pages; // sequence 1's second page
  REQUIRE_FALSE(static_cast<bool>(decodeModel(prob.cache, bad, prob.q, o, lse)));
  for (std::size_t r = 0; r < lse.size(); ++r)
    CHECK(std::isnan(lse[r]));
  CHECK(static_cast<bool>(decodeModel(prob.cache, bad, {}, o, lse)));
}

TEST_CASE("decode model: a token whose K or V row held a NaN makes the rows that see it NaN", "[cpu][paged]") {
  PagedProblem prob({20}, 1, 1, 2, 64, 16, 1.0f, 29u);
  const std::int64_t last = prob.slots.back();
  prob.cache.k_row_scales[prob.cache.row(last / 16, 0, static_cast<int>(last % 16))] = std::nanf("");
  std::vector<float> o, lse;
  REQUIRE_FALSE(static_cast<bool>(decodeModel(prob.cache, prob.decode, prob.q, o, lse)));
  CHECK(std::isfinite(lse[0])); // query 0 does not see the last token
  CHECK(std::isnan(lse[1]));
  CHECK(std::isnan(o[64]));
  prob.cache.k_row_scales[prob.cache.row(last / 16, 0, static_cast<int>(last % 16))] = 1.0f;
  prob.cache.v_row_scales[prob.cache.row(last / 16, 0, static_cast<int>(last % 16))] = std::nanf("");
  REQUIRE_FALSE(static_cast<bool>(decodeModel(prob.cache, prob.decode, prob.q, o, lse)));
  CHECK(std::isnan(o[64]));
  CHECK(std::isfinite(lse[1])); // (V does not enter the LSE)
  CHECK(std::isfinite(o[0]));
}
