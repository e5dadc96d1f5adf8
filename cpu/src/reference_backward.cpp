// FP64 reference gradients of softmax attention: per query row the exact softmax P, then
// dP = dO V^T, dS = P (dP - rowsum(dO O)), dQ = scale dS K, dK = scale dS^T Q, dV = P^T dO.
#include <cmath>
#include <limits>

#include "fa4jit/cpu/backward.h"
#include "fa4jit/cpu/reference.h"
#include "parallel.h"

namespace fa4jit::cpu {

llvm::Expected<GradientResult> referenceAttentionBackward(const BackwardProblem &problem,
                                                          const ReferenceOptions &options) {
  const AttentionProblem &p = problem.forward;
  if (auto e = validateProblem(p, RowSelection{}))
    return e;
  const AttentionShape &s = p.shape;
  if (auto e = checkFinite("dO", problem.d_o, s.batch, s.heads_q, s.seqlen_q, s.head_dim))
    return e;
  const double scale = options.scale(s.head_dim);
  const int D = s.head_dim, group = s.heads_q / s.heads_kv;
  GradientResult out;
  out.shape = s;
  out.dq.assign(static_cast<std::size_t>(s.batch) * s.heads_q * s.seqlen_q * D, 0.0);
  out.dk.assign(static_cast<std::size_t>(s.batch) * s.heads_kv * s.seqlen_k * D, 0.0);
  out.dv.assign(out.dk.size(), 0.0);
  // One work item per (batch, kv head): it owns dK and dV of that head and dQ of its group.
  parallelFor(s.batch * s.heads_kv, options.selection.threads, [&](int item) {
    const int b = item / s.heads_kv, kvh = item % s.heads_kv;
    const std::size_t kv_base = static_cast<std::size_t>(item) * s.seqlen_k * D;
    std::vector<double> prob(s.seqlen_k), o(D);
    for (int h = kvh * group; h < (kvh + 1) * group; ++h)
      for (int i = 0; i < s.seqlen_q; ++i) {
        const int visible = options.causal ? causalVisibleKeys(i, s.seqlen_q, s.seqlen_k) : s.seqlen_k;
        if (visible == 0)
          continue; // (O = 0 and a constant LSE: no gradient reaches Q, K or V)
        double mx = -std::numeric_limits<double>::infinity();
        for (int j = 0; j < visible; ++j) {
          double acc = 0;
          for (int d = 0; d < D; ++d)
            acc += static_cast<double>(p.q.at(b, h, i, d)) * p.k.at(b, kvh, j, d);
          prob[j] = acc * scale;
          mx = std::fmax(mx, prob[j]);
        }
        double sum = 0;
        for (int j = 0; j < visible; ++j)
          sum += prob[j] = std::exp(prob[j] - mx);
        for (int d = 0; d < D; ++d)
          o[d] = 0;
        for (int j = 0; j < visible; ++j) {
          prob[j] /= sum;
          for (int d = 0; d < D; ++d)
            o[d] += prob[j] * p.v.at(b, kvh, j, d);
        }
        double delta = 0;
        for (int d = 0; d < D; ++d)
          delta += static_cast<double>(problem.d_o.at(b, h, i, d)) * o[d];
        double *dq = out.dq.data() + ((static_cast<std::size_t>(b) * s.heads_q + h) * s.seqlen_q + i) * D;
        for (int j = 0; j < visible; ++j) {
          double dp = 0;
          for (int d = 0; d < D; ++d)
            dp += static_cast<double>(problem.d_o.at(b, h, i, d)) * p.v.at(b, kvh, j, d);
          const double ds = prob[j] * (dp - delta);
          double *dk = out.dk.data() + kv_base + static_cast<std::size_t>(j) * D;
          double *dv = out.dv.data() + kv_base + static_cast<std::size_t>(j) * D;
          for (int d = 0; d < D; ++d) {
            dq[d] += scale * ds * p.k.at(b, kvh, j, d);
            dk[d] += scale * ds * p.q.at(b, h, i, d);
            dv[d] += prob[j] * problem.d_o.at(b, h, i, d);
          }
        }
      }
  });
  return out;
}

GradientAgreement compareGradients(const GradientResult &a, const GradientResult &reference) {
  return GradientAgreement{compareValues(a.dq, reference.dq), compareValues(a.dk, reference.dk),
                           compareValues(a.dv, reference.dv)};
}

} // namespace fa4jit::cpu
