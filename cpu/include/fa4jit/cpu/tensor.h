#pragma once
// Inputs and outputs shared by the FP64 reference attention (reference.h) and the route
// models (model.h): strided float tensors [B, H, S, D], the problem's shape, which query rows
// to compute, and the result layout.
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "llvm/Support/Error.h"

namespace fa4jit::cpu {

// Sizes of one attention call (docs/NUMERICS.md notation). Query head h reads kv head
// h / (heads_q / heads_kv) (grouped-query and multi-query attention).
struct AttentionShape {
  int batch = 1;
  int heads_q = 1;
  int heads_kv = 1;
  int seqlen_q = 1;
  int seqlen_k = 1;
  int head_dim = 128;
  int kvHead(int h) const { return h / (heads_q / heads_kv); }
};

// Read-only strided view of a [B, H, S, D] float tensor; strides are in elements.
struct TensorRef {
  const float *data = nullptr;
  std::array<std::ptrdiff_t, 4> strides{};
  float at(int b, int h, int s, int d) const {
    return data[b * strides[0] + h * strides[1] + s * strides[2] + d * strides[3]];
  }
  static TensorRef contiguous(const float *data, int heads, int seqlen, int head_dim) {
    const std::ptrdiff_t sd = head_dim, sh = sd * seqlen, sb = sh * heads;
    return TensorRef{data, {sb, sh, sd, 1}};
  }
};

struct AttentionProblem {
  AttentionShape shape;
  TensorRef q, k, v; // [B, Hq, Sq, D], [B, Hkv, Sk, D], [B, Hkv, Sk, D]
};

// Which query rows to compute and how many threads to use. Empty rows = every row 0..Sq-1.
// The same rows are computed for every (batch, head).
struct RowSelection {
  std::vector<int> rows;
  int threads = 0; // 0: std::thread::hardware_concurrency()
};

// O [B, Hq, R, D] and LSE [B, Hq, R] for the R selected rows, contiguous; `rows` lists them.
// LSE is the natural-log log-sum-exp of the scaled scores; fully masked rows have O = 0 and
// LSE = -inf. Route models store their BF16 O and FP32 LSE exactly in these doubles.
struct AttentionResult {
  AttentionShape shape;
  std::vector<int> rows;
  std::vector<double> o;
  std::vector<double> lse;
  std::size_t rowIndex(int b, int h, int r) const {
    return (static_cast<std::size_t>(b) * shape.heads_q + h) * rows.size() + r;
  }
  const double *oRow(int b, int h, int r) const { return o.data() + rowIndex(b, h, r) * shape.head_dim; }
};

// Checks the shape (every size >= 1, heads_q % heads_kv == 0), the tensors (non-null, every
// element finite: the kernels never consume NaN/Inf) and the row selection (in [0, Sq)).
// Errors name the tensor and the offending index.
llvm::Error validateProblem(const AttentionProblem &p, const RowSelection &sel);
// Checks that `t` has data and that its [batch, heads, seqlen, head_dim] elements are finite; the
// error names the tensor and the first offending index.
llvm::Error checkFinite(const char *name, const TensorRef &t, int batch, int heads, int seqlen, int head_dim);

// The selected rows (all rows when sel.rows is empty).
std::vector<int> selectedRows(const AttentionShape &shape, const RowSelection &sel);

// Causal visibility, bottom-right aligned as FlashAttention: key j is visible to query i iff
// j <= i + Sk - Sq. Returns the number of visible keys (a prefix), possibly 0.
inline int causalVisibleKeys(int query_row, int seqlen_q, int seqlen_k) {
  const long last = static_cast<long>(query_row) + seqlen_k - seqlen_q;
  if (last < 0)
    return 0;
  return last + 1 < seqlen_k ? static_cast<int>(last + 1) : seqlen_k;
}

// Comparison metrics over all of O (flattened): cosine similarity and relative L2
// ||a - b|| / ||b||. Both results must have the same shape and rows.
struct Agreement {
  double cosine = 0;
  double rel_l2 = 0;
  double max_abs = 0;
};
Agreement compareOutputs(const AttentionResult &a, const AttentionResult &b);
// The same metrics over two vectors of one size (b is the yardstick of rel_l2).
Agreement compareValues(const std::vector<double> &a, const std::vector<double> &b);

} // namespace fa4jit::cpu
