#pragma once
// The <name>_nonfinite_rows entry point of every quantized attention kernel, launched on the same
// stream right after the attention entry point. The quantizers encode a NaN or Inf element as 0
// and record the rows that held one (quantize/params.cuh); this pass makes NaN exactly the output
// rows such an element reaches (docs/NUMERICS.md §1.3):
//   - a query row whose Q row holds one;
//   - every query row that sees a key whose K or V row holds one (all rows of the kv head's query
//     group; with causal masking, bottom-right aligned, the rows at or below that key's diagonal).
// Every other row keeps the value it has, which is the attention of the inputs with 0 in place of
// each non-finite element. O rows become NaN (BF16 or FP16), LSE entries FP32 NaN.
//
// Cost when nothing is non-finite: one CTA per (query head, batch) reads three int32 and returns;
// no synchronization, no host involvement (the forward stays graph-capturable).
#include "fa4jit/attention/params.cuh"
#include "fa4jit/quantize/params.cuh"

namespace fa4jit::device::attention {

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)

constexpr int kNonFiniteRowsThreads = 128;

// grid (heads_q, batch), block kNonFiniteRowsThreads.
template <bool kCausal, int kHeadDim> FA4JIT_DEVICE void propagateNonFiniteRows(const AttentionParams &p) {
  namespace dq = fa4jit::device::quantize;
  const int hq = blockIdx.x, b = blockIdx.y;
  const int hkv = hq / (p.heads_q / p.heads_kv);
  const int64_t q_bh = static_cast<int64_t>(b) * p.heads_q + hq;
  const int64_t kv_bh = static_cast<int64_t>(b) * p.heads_kv + hkv;
  auto first = [](uint64_t rows, int64_t bh) {
    return rows ? reinterpret_cast<const int32_t *>(rows)[bh] : dq::kNoNonFiniteRow;
  };
  const int32_t q_first = first(p.q_nonfinite_rows, q_bh);
  const int32_t k_first = first(p.k_nonfinite_rows, kv_bh), v_first = first(p.v_nonfinite_rows, kv_bh);
  const int32_t key = k_first < v_first ? k_first : v_first;
  if (q_first == dq::kNoNonFiniteRow && key == dq::kNoNonFiniteRow)
    return;
  // Rows [from_key, Sq) see the first bad key: row i sees key j when j <= i + Sk - Sq (causal).
  int64_t from_key = p.seqlen_q;
  if (key != dq::kNoNonFiniteRow)
    from_key = kCausal ? static_cast<int64_t>(key) - (p.seqlen_k - p.seqlen_q) : 0;
  if (from_key < 0)
    from_key = 0;
  const uint32_t *q_mask =
      q_first == dq::kNoNonFiniteRow
          ? nullptr
          : reinterpret_cast<const uint32_t *>(p.q_nonfinite_rows + static_cast<uint64_t>(p.batch) * p.heads_q * 4) +
                q_bh * dq::nonfiniteMaskWords(p.seqlen_q);
  const int64_t start = q_first < from_key ? q_first : from_key;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int64_t row = start + warp; row < p.seqlen_q; row += kNonFiniteRowsThreads / 32) {
    const bool bad =
        row >= from_key || (q_mask && ((q_mask[row / dq::kRowsPerMaskWord] >> (row % dq::kRowsPerMaskWord)) & 1u));
    if (!bad)
      continue;
    uint32_t *o = reinterpret_cast<uint32_t *>(p.o) +
                  (static_cast<int64_t>(b) * p.o_batch_stride + hq * p.o_head_stride + row * p.o_row_stride) / 2;
    const uint32_t nans = p.o_fp16 ? 0x7E007E00u : 0x7FC07FC0u; // two FP16 or BF16 NaNs
    for (int i = lane; i < kHeadDim / 2; i += 32)
      o[i] = nans;
    if (p.lse && lane == 0)
      reinterpret_cast<uint32_t *>(p.lse)[q_bh * p.seqlen_q + row] = 0x7FC00000u;
  }
}

#endif // CUDA compilers

} // namespace fa4jit::device::attention
