#pragma once
// Run-time arguments of the merge-states kernel and the row rule it applies (docs/NUMERICS.md §4).
// Host-compilable: the runtime fills MergeParams and passes it by value as the kernel's one
// argument, and the CPU model calls the same mergeRowScales.
//
// Every one of batch * heads * seqlen rows is merged on its own. With L_i the parts' LSEs (natural
// log) and m = max_i L_i: w_i = exp(L_i - m), O = sum_i (w_i / sum_j w_j) O_i and
// LSE = m + log(sum_j w_j), all in FP32. A part of weight 0 (LSE -inf: it saw no key) is not read,
// so its O may hold anything. A row whose parts are all empty gets O = 0 and LSE = -inf (the rule
// of a forward over no keys); a NaN or +inf LSE makes the row's O and LSE NaN.
#include "fa4jit/common.cuh"
#include "fa4jit/formats.cuh"

namespace fa4jit::device::merge {

// Parts per launch: their addresses travel in the kernel argument (40 bytes each).
constexpr int kMaxMergeParts = 16;

struct MergePart {
  uint64_t o;   // [B, H, S, D] of the kernel's state type, head dim contiguous, rows 16-byte aligned
  uint64_t lse; // float [B, H, S], dense
  int64_t batch_stride, head_stride, row_stride; // in elements of o
};

struct MergeParams {
  MergePart parts[kMaxMergeParts]; // the first num_parts are read
  uint64_t o;                      // the merged O, same layout rules (may be one of the parts' o)
  uint64_t lse;                    // float [B, H, S], dense; 0: not written
  int64_t o_batch_stride, o_head_stride, o_row_stride;
  int32_t num_parts, batch, heads, seqlen;
};
static_assert(sizeof(MergePart) == 40, "host and device share this layout");
static_assert(sizeof(MergeParams) == kMaxMergeParts * 40 + 56, "host and device share this layout");

// Rows one CTA of `threads` merges: head_dim / 8 threads per row, 8 values each (the launch's grid
// and the kernel's row of a thread both follow from it).
FA4JIT_HD constexpr int mergeRowsPerCta(int threads, int head_dim) { return threads / (head_dim / 8); }

// One row's weights: scale[i] = w_i / sum_j w_j for the first n of kMaxMergeParts LSEs (0 past n
// and for empty parts), and the merged LSE as the return value. Unrolled over kMaxMergeParts so
// that the arrays stay in registers on the device.
FA4JIT_HD float mergeRowScales(const float (&lse)[kMaxMergeParts], int n, float (&scale)[kMaxMergeParts]) {
  const float neg_inf = bitsAsFloat(0xFF800000u);
  float m = neg_inf;
  bool any_nan = false; // (fmaxf would skip a NaN)
FA4JIT_UNROLL
  for (int i = 0; i < kMaxMergeParts; ++i)
    if (i < n) {
      any_nan = any_nan || lse[i] != lse[i];
      m = fmaxf(m, lse[i]);
    }
  if (any_nan)
    m = bitsAsFloat(0x7FC00000u);
  float sum = 0.0f;
FA4JIT_UNROLL
  for (int i = 0; i < kMaxMergeParts; ++i) {
    scale[i] = i < n && m != neg_inf ? expf(lse[i] - m) : 0.0f;
    sum += scale[i];
  }
  if (m == neg_inf)
    return neg_inf;
  const float inverse = 1.0f / sum;
FA4JIT_UNROLL
  for (int i = 0; i < kMaxMergeParts; ++i)
    scale[i] *= inverse;
  return m + logf(sum);
}

} // namespace fa4jit::device::merge
