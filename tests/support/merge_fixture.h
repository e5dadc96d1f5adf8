#pragma once
// The merge-states tests' yardstick: one random attention problem whose keys are cut into shards,
// each shard's state (O, LSE) from the FP64 reference as FP32, and the relative L2 error.
#include "fa4jit/cpu/reference.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace fa4jit::testing {

struct ShardedProblem {
  cpu::AttentionShape shape;
  std::vector<float> q, k, v;
  // batch 2, `heads` query and key/value heads, Gaussian entries of deviation sigma.
  ShardedProblem(int heads, int seqlen_q, int seqlen_k, int head_dim, float sigma, std::uint64_t seed) {
    shape.batch = 2, shape.heads_q = shape.heads_kv = heads;
    shape.seqlen_q = seqlen_q, shape.seqlen_k = seqlen_k, shape.head_dim = head_dim;
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> normal(0.0f, sigma);
    auto fill = [&](std::vector<float> &x, int s) {
      x.resize(std::size_t(shape.batch) * heads * s * head_dim);
      for (float &e : x)
        e = normal(rng);
    };
    fill(q, seqlen_q), fill(k, seqlen_k), fill(v, seqlen_k);
  }
  std::size_t rows() const { return std::size_t(shape.batch) * shape.heads_q * shape.seqlen_q; }
  // The FP64 reference over keys [first, first + count), as FP32 O [rows, D] and LSE [rows].
  void state(int first, int count, std::vector<float> &o, std::vector<float> &lse) const {
    cpu::AttentionProblem p;
    p.shape = shape;
    p.shape.seqlen_k = count;
    const std::ptrdiff_t d = shape.head_dim, head = std::ptrdiff_t(shape.seqlen_k) * d;
    p.q = cpu::TensorRef::contiguous(q.data(), shape.heads_q, shape.seqlen_q, shape.head_dim);
    p.k = cpu::TensorRef{k.data() + first * d, {head * shape.heads_kv, head, d, 1}};
    p.v = cpu::TensorRef{v.data() + first * d, {head * shape.heads_kv, head, d, 1}};
    auto r = cpu::referenceAttention(p, cpu::ReferenceOptions{});
    REQUIRE(static_cast<bool>(r));
    o.assign(r->o.begin(), r->o.end());
    lse.assign(r->lse.begin(), r->lse.end());
  }
};

inline double relL2(const std::vector<float> &x, const std::vector<float> &ref) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    num += (double(x[i]) - ref[i]) * (double(x[i]) - ref[i]);
    den += double(ref[i]) * ref[i];
  }
  return std::sqrt(num / den);
}

} // namespace fa4jit::testing
