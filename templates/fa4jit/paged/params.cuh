#pragma once
// The paged, quantized KV cache (docs/NUMERICS.md §5): its layout, the row encoding that the append
// kernel and the CPU model share, and the run-time arguments of the append, decode and combine
// kernels. Host-compilable: the runtime fills the params structs and passes each by value as its
// kernel's one argument.
//
// A cache holds `pages` pages of `page_size` tokens for `kv_heads` heads of head dim D. Each token
// row of one head is quantized on its own, so appending a token never touches another:
//   k_codes        uint8 [pages, kv_heads, page_size, D/2]   NVFP4 payload, element 2i in the low nibble of byte i
//   k_block_scales uint8 [pages, kv_heads, page_size, D/16]  UE4M3 per 16 elements along D
//   k_row_scales   float [pages, kv_heads, page_size]        the row's global scale g
//   v_codes        uint8 [pages, kv_heads, page_size, D]     E4M3 payload              (V fp8)
//   v_row_scales   float [pages, kv_heads, page_size]        the row's scale s_v
//   v_codes        uint8 [pages, kv_heads, page_size, D/2]   MXFP4 payload             (V mxfp4)
//   v_block_scales uint8 [pages, kv_heads, page_size, D/32]  UE8M0 per 32 elements
// A row that held a NaN or an Inf has its row scale NaN (MXFP4 V: every block scale 0xFF, the
// format's NaN) and codes 0, so every query that sees the token gets a NaN output row, as it would
// in BF16 attention.
#include "fa4jit/common.cuh"
#include "fa4jit/formats.cuh"
#include "fa4jit/merge/params.cuh"
#include "fa4jit/quantize/load.cuh"

namespace fa4jit::device::paged {

struct PagedCacheView {
  uint64_t k_codes, k_block_scales, k_row_scales, v_codes, v_row_scales, v_block_scales;
  int32_t pages, kv_heads, page_size, head_dim;
};

// Byte offsets of one (page, head, token) row inside each array.
FA4JIT_HD int64_t cacheRowIndex(const PagedCacheView &c, int64_t page, int head, int token) {
  return (page * c.kv_heads + head) * c.page_size + token;
}

// New tokens' K and V ([tokens, kv_heads, D], BF16, head dim contiguous) written into the rows that
// slot_mapping names: token t goes to page slot / page_size, row slot % page_size; a negative slot
// skips the token (padding of a captured batch).
struct AppendParams {
  PagedCacheView cache;
  uint64_t k, v;         // BF16
  uint64_t slot_mapping; // int64 [tokens]
  int64_t k_token_stride, k_head_stride, v_token_stride, v_head_stride; // in elements
  int32_t tokens;
};

// Decode: `queries` query tokens per sequence ([batch, q_heads, queries, D] BF16, strided) attend
// to the sequence's first seq_lens[b] cached tokens, causal among themselves (bottom-right
// aligned: query i sees tokens j <= i + seq_len - queries). grid (splits, kv_heads * row_blocks,
// batch): one CTA takes one split of one sequence's keys for kRows query rows of one kv head's
// group (rows ordered token-major: row r is query r / group of head kv_head * group + r % group).
struct DecodeParams {
  PagedCacheView cache;
  uint64_t q;            // BF16
  uint64_t block_table;  // int32 [batch, block_table_stride]: page of each sequence's page_size-token block
  uint64_t seq_lens;     // int32 [batch]
  uint64_t o;            // BF16 [batch, q_heads, queries, D] (splits == 1), strided
  uint64_t lse;          // float [batch, q_heads, queries] natural log, dense; 0: not written
  uint64_t partial_o;    // splits > 1: float [splits, batch, q_heads, queries, D]
  uint64_t partial_lse;  // splits > 1: float [splits, batch, q_heads, queries]
  int64_t q_batch_stride, q_head_stride, q_row_stride; // in elements
  int64_t o_batch_stride, o_head_stride, o_row_stride;
  int32_t block_table_stride, batch, q_heads, queries, splits, row_blocks;
  float score_scale; // softmax scale * log2(e)
};

// Cache bytes of one 16-key step of one kv head, as decode's shared-memory ring holds them (each
// array's 16 rows contiguous, in this order): K codes, K block scales, K row scales, then V codes
// and V's row scales (FP8) or block scales (MXFP4). value_format: 0 FP8, 1 MXFP4.
FA4JIT_HD constexpr int decodeStepKCodeBytes(int head_dim) { return 16 * head_dim / 2; }
FA4JIT_HD constexpr int decodeStepKScaleBytes(int head_dim) { return 16 * head_dim / 16; }
FA4JIT_HD constexpr int decodeStepVCodeBytes(int head_dim, int value_format) {
  return 16 * (value_format == 1 ? head_dim / 2 : head_dim);
}
FA4JIT_HD constexpr int decodeStepVScaleBytes(int head_dim, int value_format) {
  return value_format == 1 ? 16 * head_dim / 32 : 16 * 4;
}
FA4JIT_HD constexpr int decodeStepBytes(int head_dim, int value_format) {
  return decodeStepKCodeBytes(head_dim) + decodeStepKScaleBytes(head_dim) + 16 * 4 +
         decodeStepVCodeBytes(head_dim, value_format) + decodeStepVScaleBytes(head_dim, value_format);
}
// Decode's dynamic shared memory (bytes): the cross-warp merge of one 16-row tile, O rows padded by
// 4 floats against bank conflicts, and each warp's row maxima and sums; then, with kv_stages > 0,
// each warp's ring of kv_stages steps.
FA4JIT_HD constexpr int decodeMergeBytes(int head_dim, int warps) { return (16 * (head_dim + 4) + 2 * warps * 16) * 4; }
FA4JIT_HD constexpr int decodeSharedBytes(int head_dim, int warps, int value_format, int kv_stages) {
  return decodeMergeBytes(head_dim, warps) + warps * kv_stages * decodeStepBytes(head_dim, value_format);
}
// Query rows one decode CTA takes (one m16 tile of mma.sync).
constexpr int kDecodeRowsPerCta = 16;
// Splits of one sequence's keys at most: the combine merges them with merge-states' row rule.
constexpr int kMaxDecodeSplits = 16;

// ---- The row encoding (docs/NUMERICS.md §5.1) ----------------------------------------------------
// K: g = amax / (448 * 6) over the row (1 when that is not > 0), s_b = UE4M3(amax_b / (6 g)) per 16
// elements, codes E2M1(x / (s_b g)); V: s_v = amax / 448 (1 when not > 0), codes E4M3(x / s_v).
// Every quotient is formed as docs/NUMERICS.md §1 fixes (one rounding), by the device and the host.

FA4JIT_HD float kvDivide(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}
FA4JIT_HD float kvMultiply(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}

FA4JIT_HD float kRowScale(float amax) {
  const float g = kvDivide(amax, 448.0f * 6.0f);
  return g > 0.0f ? g : 1.0f;
}
FA4JIT_HD uint8_t kBlockScale(float amax_b, float g) {
  return amax_b == 0.0f ? uint8_t(0) : floatToUE4M3(kvDivide(amax_b, kvMultiply(6.0f, g)));
}
// The E2M1 codes of 2n values (n bytes, element 2i in the low nibble) of one block of scale s and row
// scale g.
template <int kValues> FA4JIT_HD void encodeKBlock(const float (&x)[kValues], uint8_t s, float g, uint8_t (&out)[kValues / 2]) {
  const float denom = kvMultiply(ue4m3ToFloat(s), g);
  const bool reciprocal = quotientByReciprocalOk(denom);
#if defined(__CUDA_ARCH__)
  const float r = reciprocal ? __frcp_rn(denom) : 0.0f;
#else
  const float r = reciprocal ? 1.0f / denom : 0.0f;
#endif
FA4JIT_UNROLL
  for (int i = 0; i < kValues / 2; ++i) {
    float lo = 0.0f, hi = 0.0f;
    if (reciprocal) {
      lo = quotientByReciprocal(x[2 * i], denom, r), hi = quotientByReciprocal(x[2 * i + 1], denom, r);
    } else if (denom != 0.0f) {
      lo = kvDivide(x[2 * i], denom), hi = kvDivide(x[2 * i + 1], denom);
    }
    out[i] = static_cast<uint8_t>(finiteFloatsToE2M1x2(lo, hi));
  }
}

// MXFP4 V: per 32 elements E = mxBlockExponent(amax_b) (docs/NUMERICS.md §1), codes E2M1(x 2^-E),
// the power of two applied exactly.
FA4JIT_HD uint8_t encodeVMxPair(float lo, float hi, float inverse_scale) {
  return static_cast<uint8_t>(finiteFloatsToE2M1x2(kvMultiply(lo, inverse_scale), kvMultiply(hi, inverse_scale)));
}
// The UE8M0 byte that marks a row that held a NaN or an Inf.
constexpr uint8_t kMxNaNScale = 0xFF;

FA4JIT_HD float vRowScale(float amax) {
  const float s = kvDivide(amax, 448.0f);
  return s > 0.0f ? s : 1.0f;
}
FA4JIT_HD uint8_t encodeV(float x, float s_v, float r, bool reciprocal) {
  return floatToE4M3(reciprocal ? quotientByReciprocal(x, s_v, r) : kvDivide(x, s_v));
}

static_assert(kMaxDecodeSplits <= merge::kMaxMergeParts, "the combine merges the splits in one pass");

FA4JIT_HD bool isFiniteValue(float v) { return (floatAsBits(v) & 0x7FFFFFFFu) < 0x7F800000u; }

} // namespace fa4jit::device::paged
