#pragma once
// The paged cache tests' problem: sequences of given lengths whose K/V rows are appended (through
// the host model) into randomly ordered pages, their block table (unused entries -1, never read),
// and BF16 queries; plus the relative L2 error against the FP64 reference.
#include "fa4jit/cpu/paged.h"
#include "fa4jit/formats.cuh"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

namespace fa4jit::testing {

inline float roundBf16(float x) { return device::bf16ToFloat(device::floatToBF16(x)); }

struct PagedProblem {
  cpu::PagedCache cache;
  cpu::DecodeProblem decode;
  std::vector<float> q;            // [batch, q_heads, queries, head_dim], BF16 values
  std::vector<float> k_new, v_new; // [tokens, kv_heads, head_dim] appended, BF16 values
  std::vector<std::int64_t> slots; // [tokens]

  // `seq_lens` sequences; kv_heads x group query heads; Gaussian K, V, Q of deviation sigma (K's
  // rows scaled per token by up to 8x so that the per-row scales matter). `spare_pages` extra pages
  // stay unused.
  PagedProblem(const std::vector<int> &seq_lens, int kv_heads, int group, int queries, int head_dim, int page_size,
               float sigma, std::uint64_t seed, int spare_pages = 1, KvValueFormat value_format = KvValueFormat::Fp8) {
    const int batch = static_cast<int>(seq_lens.size());
    int stride = 1, pages = spare_pages;
    for (int len : seq_lens) {
      const int n = (len + page_size - 1) / page_size;
      stride = std::max(stride, n + 1);
      pages += n;
    }
    cache = cpu::PagedCache::create(pages, kv_heads, page_size, head_dim, value_format);
    std::mt19937_64 rng(seed);
    std::vector<int> order(pages);
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    decode.batch = batch, decode.q_heads = kv_heads * group, decode.queries = queries;
    decode.block_table.assign(std::size_t(batch) * stride, -1);
    decode.block_table_stride = stride;
    decode.seq_lens.assign(seq_lens.begin(), seq_lens.end());
    std::normal_distribution<float> normal(0.0f, sigma);
    std::uniform_real_distribution<float> row_scale(0.125f, 1.0f);
    int next_page = 0;
    for (int b = 0; b < batch; ++b) {
      for (int blk = 0; blk * page_size < seq_lens[b]; ++blk)
        decode.block_table[std::size_t(b) * stride + blk] = order[next_page++];
      for (int j = 0; j < seq_lens[b]; ++j) {
        slots.push_back(std::int64_t(decode.block_table[std::size_t(b) * stride + j / page_size]) * page_size +
                        j % page_size);
        for (int h = 0; h < kv_heads; ++h) {
          const float rs = row_scale(rng);
          for (int d = 0; d < head_dim; ++d) {
            k_new.push_back(roundBf16(normal(rng) * rs * 8.0f));
            v_new.push_back(roundBf16(normal(rng)));
          }
        }
      }
    }
    q.resize(std::size_t(batch) * decode.q_heads * queries * head_dim);
    for (float &x : q)
      x = roundBf16(normal(rng));
    REQUIRE_FALSE(static_cast<bool>(cpu::appendModel(cache, k_new, v_new, slots)));
  }
  std::int64_t tokens() const { return static_cast<std::int64_t>(slots.size()); }
};

template <class A, class B> double relL2(const std::vector<A> &x, const std::vector<B> &ref) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    num += (double(x[i]) - double(ref[i])) * (double(x[i]) - double(ref[i]));
    den += double(ref[i]) * double(ref[i]);
  }
  return std::sqrt(num / den);
}

} // namespace fa4jit::testing
