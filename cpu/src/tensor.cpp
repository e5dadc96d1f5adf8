// Validation, row selection and comparison metrics shared by the reference and the route models.
#include "fa4jit/cpu/tensor.h"

#include <cassert>
#include <cmath>

namespace fa4jit::cpu {

llvm::Error checkFinite(const char *name, const TensorRef &t, int batch, int heads, int seqlen,
                        int head_dim) {
  if (!t.data)
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "tensor %s has no data", name);
  for (int b = 0; b < batch; ++b)
    for (int h = 0; h < heads; ++h)
      for (int s = 0; s < seqlen; ++s)
        for (int d = 0; d < head_dim; ++d)
          if (!std::isfinite(t.at(b, h, s, d)))
            return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                           "tensor %s has a non-finite element at [%d,%d,%d,%d]",
                                           name, b, h, s, d);
  return llvm::Error::success();
}

llvm::Error validateProblem(const AttentionProblem &p, const RowSelection &sel) {
  const AttentionShape &s = p.shape;
  if (s.batch < 1 || s.heads_q < 1 || s.heads_kv < 1 || s.seqlen_q < 1 || s.seqlen_k < 1 ||
      s.head_dim < 1)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "attention shape needs every size >= 1 (batch %d, heads_q %d, heads_kv %d, seqlen_q %d, "
        "seqlen_k %d, head_dim %d)",
        s.batch, s.heads_q, s.heads_kv, s.seqlen_q, s.seqlen_k, s.head_dim);
  if (s.heads_q % s.heads_kv != 0)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "heads_q (%d) is not a multiple of heads_kv (%d)", s.heads_q,
                                   s.heads_kv);
  for (int r : sel.rows)
    if (r < 0 || r >= s.seqlen_q)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "selected query row %d is outside [0, %d)", r, s.seqlen_q);
  if (auto e = checkFinite("Q", p.q, s.batch, s.heads_q, s.seqlen_q, s.head_dim))
    return e;
  if (auto e = checkFinite("K", p.k, s.batch, s.heads_kv, s.seqlen_k, s.head_dim))
    return e;
  return checkFinite("V", p.v, s.batch, s.heads_kv, s.seqlen_k, s.head_dim);
}

std::vector<int> selectedRows(const AttentionShape &shape, const RowSelection &sel) {
  if (!sel.rows.empty())
    return sel.rows;
  std::vector<int> rows(shape.seqlen_q);
  for (int i = 0; i < shape.seqlen_q; ++i)
    rows[i] = i;
  return rows;
}

Agreement compareOutputs(const AttentionResult &a, const AttentionResult &b) {
  assert(a.o.size() == b.o.size() && "compareOutputs needs results of one shape");
  return compareValues(a.o, b.o);
}

Agreement compareValues(const std::vector<double> &a, const std::vector<double> &b) {
  assert(a.size() == b.size() && "compareValues needs vectors of one size");
  double dot = 0, na = 0, nb = 0, diff = 0, max_abs = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    dot += a[i] * b[i];
    na += a[i] * a[i];
    nb += b[i] * b[i];
    const double d = a[i] - b[i];
    diff += d * d;
    max_abs = std::fmax(max_abs, std::fabs(d));
  }
  Agreement r;
  // Two all-zero vectors (every row fully masked) agree exactly.
  r.cosine = (na == 0 && nb == 0) ? 1.0 : (na == 0 || nb == 0) ? 0.0 : dot / std::sqrt(na * nb);
  r.rel_l2 = nb == 0 ? std::sqrt(diff) : std::sqrt(diff / nb);
  r.max_abs = max_abs;
  return r;
}

} // namespace fa4jit::cpu
