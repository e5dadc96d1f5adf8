#pragma once
// The attention backward on the CPU: the FP64 reference gradients (exact softmax attention) and
// the model of the training route's backward (docs/NUMERICS.md §3), which rebuilds P from the
// forward's saved NVFP4 Q/K and LSE and feeds its products the formats the BackwardSpec names.
#include <vector>

#include "fa4jit/codegen/spec.h"
#include "fa4jit/cpu/reference.h"
#include "fa4jit/cpu/tensor.h"

namespace fa4jit::cpu {

// What a backward reads besides Q, K, V: the incoming gradient dO [B, Hq, Sq, D], and for the
// route model the forward's outputs O [B, Hq, Sq, D] (BF16 values) and LSE [B, Hq, Sq]
// (natural log, contiguous; -inf for rows without a visible key).
struct BackwardProblem {
  AttentionProblem forward;
  TensorRef d_o;
  TensorRef o;                       // route model only
  const float *lse = nullptr;        // route model only
};

// dQ [B, Hq, Sq, D], dK and dV [B, Hkv, Sk, D], contiguous. A route model stores its BF16
// results exactly in these doubles.
struct GradientResult {
  AttentionShape shape;
  std::vector<double> dq, dk, dv;
};

// FP64 gradients of softmax(scale * Q K^T) V with the incoming gradient dO (dK, dV summed over
// each kv head's group of query heads). Reads problem.forward and problem.d_o only.
llvm::Expected<GradientResult> referenceAttentionBackward(const BackwardProblem &problem,
                                                          const ReferenceOptions &options);

// The backward the kernel of `spec` computes: O and LSE must be the training forward's (the
// route model of spec.forward gives them). spec.forward.route must be nvfp8. Errors name the
// field or tensor that is wrong; inputs must be finite (LSE may be -inf).
llvm::Expected<GradientResult> runBackwardModel(const BackwardSpec &spec, const BackwardProblem &problem,
                                                int threads = 0);

// Cosine and relative L2 of one gradient against another (flattened).
struct GradientAgreement {
  Agreement dq, dk, dv;
};
GradientAgreement compareGradients(const GradientResult &a, const GradientResult &reference);

} // namespace fa4jit::cpu
