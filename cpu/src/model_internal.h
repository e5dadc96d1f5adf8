#pragma once
// Internals of the route models (model.h), shared by model*.cpp only.
#include <vector>

#include "fa4jit/codegen/block_formats.h"
#include "fa4jit/codegen/spec.h"
#include "fa4jit/directp.cuh"
#include "fa4jit/cpu/model.h"

namespace fa4jit::cpu::detail {

// One head's operand as the tensor core consumes it: [S, D] row-major floats (the widened
// FP8/BF16 values), plus the per-head FP32 scale applied outside the product.
struct FedOperand {
  int seqlen = 0, head_dim = 0;
  std::vector<float> values;
  float scale = 1.0f; // Q/K: NVFP4 global scale g (1 for bf16); V: epilogue factor f
  const float *row(int s) const { return values.data() + static_cast<std::size_t>(s) * head_dim; }
};

// One head of a [B, H, S, D] tensor as a [S, D] matrix.
formats::MatrixView headView(const TensorRef &t, int b, int h, int seqlen, int head_dim);
// x rounded to E4M3 (saturating, to nearest even).
float e4m3Round(float x);

// Q of one (batch, query head), K or V of one (batch, kv head), as the route feeds them.
llvm::Expected<FedOperand> feedQK(const AttentionSpec &spec, const TensorRef &t, int b, int h,
                                  int seqlen, int head_dim, const char *name);
llvm::Expected<FedOperand> feedV(const AttentionSpec &spec, const TensorRef &v, int b, int h,
                                 int seqlen, int head_dim);

// The softmax scale in use: spec.softmax_scale, or 1/sqrt(head_dim) when it is 0.
float softmaxScale(const AttentionSpec &spec);
// kscale = softmax_scale * log2(e) as the one FP32 constant codegen folds (NUMERICS.md §2.1).
float log2ScoreScale(const AttentionSpec &spec);
// The FP32 factor t = acc * factor for one (q head, kv head) pair.
float scoreFactor(const AttentionSpec &spec, float q_scale, float k_scale);
// The offset subtracted from log2(l) in the LSE: p_offset_log2 for FP8-fed P, else 0.
int lseOffset(const AttentionSpec &spec);

// Everything one row needs.
struct RowInputs {
  const AttentionSpec *spec = nullptr;
  device::DirectPCoefficients coeffs{};
  const float *q = nullptr; // fed Q row, head_dim values
  const FedOperand *k = nullptr;
  const FedOperand *v = nullptr;
  float score_factor = 1.0f;
  int visible = 0; // keys [0, visible) are visible
  // Keys visible to every row of the row's group of 64 (a wgmma consumer's rows): with
  // scores_fp16 a tile beyond them forms y in FP32 (the kernel's masked arm, NUMERICS.md §2.3).
  int group_visible = 0;
};

// Online softmax over the key tiles and the epilogue: writes head_dim outputs and the LSE.
// With `trace`, also records the row's internals.
void modelRow(const RowInputs &in, double *o_out, double *lse_out, RowTrace *trace);

} // namespace fa4jit::cpu::detail
