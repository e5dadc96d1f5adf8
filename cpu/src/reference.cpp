// FP64 reference attention: two passes per row (max, then exp-sum and weighted V), all double.
#include "fa4jit/cpu/reference.h"

#include <cmath>
#include <limits>

#include "parallel.h"

namespace fa4jit::cpu {

namespace {

void referenceRow(const AttentionProblem &p, double scale, bool causal, int b, int h, int row,
                  std::vector<double> &scores, double *o_out, double *lse_out) {
  const AttentionShape &s = p.shape;
  const int kvh = s.kvHead(h);
  const int visible = causal ? causalVisibleKeys(row, s.seqlen_q, s.seqlen_k) : s.seqlen_k;
  for (int d = 0; d < s.head_dim; ++d)
    o_out[d] = 0.0;
  if (visible == 0) {
    *lse_out = -std::numeric_limits<double>::infinity();
    return;
  }
  double mx = -std::numeric_limits<double>::infinity();
  for (int j = 0; j < visible; ++j) {
    double acc = 0;
    for (int d = 0; d < s.head_dim; ++d)
      acc += static_cast<double>(p.q.at(b, h, row, d)) * p.k.at(b, kvh, j, d);
    scores[j] = acc * scale;
    mx = std::fmax(mx, scores[j]);
  }
  double sum = 0;
  for (int j = 0; j < visible; ++j) {
    const double w = std::exp(scores[j] - mx);
    sum += w;
    for (int d = 0; d < s.head_dim; ++d)
      o_out[d] += w * p.v.at(b, kvh, j, d);
  }
  for (int d = 0; d < s.head_dim; ++d)
    o_out[d] /= sum;
  *lse_out = mx + std::log(sum);
}

} // namespace

llvm::Expected<AttentionResult> referenceAttention(const AttentionProblem &problem,
                                                   const ReferenceOptions &options) {
  if (auto e = validateProblem(problem, options.selection))
    return e;
  const AttentionShape &s = problem.shape;
  AttentionResult result;
  result.shape = s;
  result.rows = selectedRows(s, options.selection);
  const int nrows = static_cast<int>(result.rows.size());
  result.o.assign(static_cast<std::size_t>(s.batch) * s.heads_q * nrows * s.head_dim, 0.0);
  result.lse.assign(static_cast<std::size_t>(s.batch) * s.heads_q * nrows, 0.0);
  const double scale = options.scale(s.head_dim);
  // One work item per (batch, head, chunk of rows); each writes only its own rows.
  constexpr int kRowsPerItem = 16;
  const int chunks = (nrows + kRowsPerItem - 1) / kRowsPerItem;
  const int items = s.batch * s.heads_q * chunks;
  parallelFor(items, options.selection.threads, [&](int item) {
    const int chunk = item % chunks, bh = item / chunks;
    const int b = bh / s.heads_q, h = bh % s.heads_q;
    std::vector<double> scores(s.seqlen_k);
    for (int r = chunk * kRowsPerItem; r < std::min(nrows, (chunk + 1) * kRowsPerItem); ++r) {
      const std::size_t idx = result.rowIndex(b, h, r);
      referenceRow(problem, scale, options.causal, b, h, result.rows[r], scores,
                   result.o.data() + idx * s.head_dim, result.lse.data() + idx);
    }
  });
  return result;
}

} // namespace fa4jit::cpu
