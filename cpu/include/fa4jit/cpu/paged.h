#pragma once
// The paged KV cache on the host (templates/fa4jit/paged, docs/NUMERICS.md §5): the append's row
// encoding, bit for bit (it calls the kernel's own encoding functions), decode's arithmetic with
// its roundings, and the FP64 reference over the dequantized cache. Tests hold the kernels to them.
#include <cstdint>
#include <vector>

#include "fa4jit/codegen/spec.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

namespace fa4jit::cpu {

// The arrays of one cache layer (templates/fa4jit/paged/params.cuh), zero-filled by create().
struct PagedCache {
  int pages = 0, kv_heads = 0, page_size = 0, head_dim = 0;
  KvValueFormat value_format = KvValueFormat::Fp8;
  std::vector<std::uint8_t> k_codes, k_block_scales, v_codes, v_block_scales; // (v_block_scales: MXFP4 V)
  std::vector<float> k_row_scales, v_row_scales;                              // (v_row_scales: FP8 V)

  static PagedCache create(int pages, int kv_heads, int page_size, int head_dim,
                           KvValueFormat value_format = KvValueFormat::Fp8);
  // The index of the (page, head, token) row in the row-scale arrays (and, times the row's bytes,
  // in the code arrays).
  std::int64_t row(std::int64_t page, int head, int token) const {
    return (page * kv_heads + head) * page_size + token;
  }
  // The row's values, dequantized exactly: K = E2M1 x s_b x g, V = E4M3 x s_v or E2M1 x 2^E (NaN
  // for a row that held a non-finite value).
  void dequantizeK(std::int64_t row, float *out) const;
  void dequantizeV(std::int64_t row, float *out) const;
  // V element d of a row without FP8's row scale (E4M3, or MXFP4's E2M1 x 2^E), and what multiplies
  // the row's P: s_v for FP8, 1 for MXFP4 (NaN for a row that held a non-finite value).
  float vUnscaled(std::int64_t row, int d) const;
  float vRowFactor(std::int64_t row) const;
};

// Appends `tokens` tokens: k and v [tokens, kv_heads, head_dim] (BF16 values as floats); token t
// goes to slot slots[t] (page slot / page_size, row slot % page_size); a negative slot or one past
// the cache is skipped, as the kernel does.
llvm::Error appendModel(PagedCache &cache, llvm::ArrayRef<float> k, llvm::ArrayRef<float> v,
                        llvm::ArrayRef<std::int64_t> slots);

// One decode call: `queries` query tokens per sequence, [batch, q_heads, queries, head_dim] (BF16
// values), over the first seq_lens[b] tokens of each sequence's pages.
struct DecodeProblem {
  int batch = 0, q_heads = 0, queries = 1;
  float softmax_scale = 0.0f;              // 0 => 1 / sqrt(head_dim)
  std::vector<std::int32_t> block_table;   // [batch, block_table_stride]
  int block_table_stride = 0;
  std::vector<std::int32_t> seq_lens;      // [batch]
};

// Decode with the kernel's roundings (NUMERICS.md §5.2): S in FP32 from exact products, the row
// scales applied in FP32, P = exp2(t - m) against the row's final maximum, the fed P times s_v
// kept to 16 bits (two BF16 terms), O and l summed exactly and divided once. o [batch, q_heads,
// queries, head_dim] and lse (natural log) are FP32. Rows of a sequence whose length or pages are
// out of range are NaN, as on the device.
llvm::Error decodeModel(const PagedCache &cache, const DecodeProblem &problem, llvm::ArrayRef<float> q,
                        std::vector<float> &o, std::vector<float> &lse);

// The FP64 reference over the dequantized cache: softmax(q k^T scale) v per row, causal among the
// queries (query i sees tokens j <= i + seq_len - queries).
llvm::Error decodeReference(const PagedCache &cache, const DecodeProblem &problem, llvm::ArrayRef<float> q,
                            std::vector<double> &o, std::vector<double> &lse);

} // namespace fa4jit::cpu
