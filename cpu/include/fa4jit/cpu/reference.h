#pragma once
// FP64 reference attention: softmax(scale * Q K^T) V computed directly in double precision,
// the yardstick every route model and kernel is measured against.
#include <cmath>

#include "fa4jit/cpu/tensor.h"

namespace fa4jit::cpu {

struct ReferenceOptions {
  bool causal = false;        // bottom-right aligned when seqlen_q != seqlen_k
  float softmax_scale = 0.0f; // 0 => 1/sqrt(head_dim)
  RowSelection selection;
  double scale(int head_dim) const {
    return softmax_scale != 0.0f ? static_cast<double>(softmax_scale) : 1.0 / std::sqrt(static_cast<double>(head_dim));
  }
};

// O and LSE (natural log) for the selected rows. Fully masked rows: O = 0, LSE = -inf.
llvm::Expected<AttentionResult> referenceAttention(const AttentionProblem &problem,
                                                   const ReferenceOptions &options);

} // namespace fa4jit::cpu
