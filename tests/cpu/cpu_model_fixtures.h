#pragma once
// Inputs for the CPU reference and route-model tests: Gaussian Q, K, V with owned storage.
#include <cmath>
#include <vector>

#include "expected_checks.h"
#include "fa4jit/codegen/gaussian_rng.h"
#include "fa4jit/cpu/model.h"
#include "fa4jit/cpu/tensor.h"


namespace fa4jit::cpu::testing {

struct OwnedProblem {
  std::vector<float> q, k, v;
  AttentionProblem problem;
};

inline std::vector<float> gaussianValues(std::size_t n, double sigma, uint64_t seed) {
  GaussianRng rng(seed);
  std::vector<float> out(n);
  for (float &x : out)
    x = static_cast<float>(rng.normal() * sigma);
  return out;
}

// Contiguous [B, H, S, D] tensors.
inline OwnedProblem gaussianProblem(const AttentionShape &s, double sigma, uint64_t seed) {
  OwnedProblem p;
  const std::size_t nq = static_cast<std::size_t>(s.batch) * s.heads_q * s.seqlen_q * s.head_dim;
  const std::size_t nk = static_cast<std::size_t>(s.batch) * s.heads_kv * s.seqlen_k * s.head_dim;
  p.q = gaussianValues(nq, sigma, seed);
  p.k = gaussianValues(nk, sigma, seed + 1000);
  p.v = gaussianValues(nk, sigma, seed + 2000);
  p.problem.shape = s;
  p.problem.q = TensorRef::contiguous(p.q.data(), s.heads_q, s.seqlen_q, s.head_dim);
  p.problem.k = TensorRef::contiguous(p.k.data(), s.heads_kv, s.seqlen_k, s.head_dim);
  p.problem.v = TensorRef::contiguous(p.v.data(), s.heads_kv, s.seqlen_k, s.head_dim);
  return p;
}

// One row's trace through a route model.
inline RowTrace traceRow(const AttentionSpec &spec, const OwnedProblem &p, TraceRow where) {
  ModelOptions o;
  o.trace = {where};
  auto m = runRouteModel(spec, p.problem, o);
  REQUIRE_OK(m);
  return m->traces[0];
}

inline std::vector<int> evenRows(int seqlen, int n) {
  std::vector<int> rows;
  for (int i = 0; i < n; ++i)
    rows.push_back(static_cast<int>((i + 0.5) * seqlen / n));
  return rows;
}

inline double cosine(const double *a, const double *b, int n) {
  double ab = 0, aa = 0, bb = 0;
  for (int i = 0; i < n; ++i) {
    ab += a[i] * b[i];
    aa += a[i] * a[i];
    bb += b[i] * b[i];
  }
  return ab / std::sqrt(aa * bb);
}

} // namespace fa4jit::cpu::testing
