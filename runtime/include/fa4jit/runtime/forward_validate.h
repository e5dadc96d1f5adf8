#pragma once
// Argument checks of the public API, as pure functions (testable without a GPU). Each error names
// the tensor and the field that is wrong and what was expected.
#include "fa4jit/runtime/engine.h"

#include "llvm/Support/Error.h"

namespace fa4jit::runtime {

// Byte size of one element of `t`.
int elementBytes(DType t);

// A [B, H, S, D] tensor: positive sizes, D in {64, 128, 256}, last stride 1, non-negative
// strides, base and every outer stride (in bytes) a multiple of 16 (kernels move 16-byte vectors).
// `allow_empty`: B, H or S may be 0, and the data pointer of such an empty tensor may be null.
llvm::Error validateTensor(const TensorDesc &t, const char *name, DType expected, bool allow_empty = false);
// The same for a tensor that may hold BF16 or FP16 (the attention inputs and output).
llvm::Error validateTensor16(const TensorDesc &t, const char *name, bool allow_empty = false);
// Whether the tensor has no elements (B, H or S is 0).
bool isEmpty(const TensorDesc &t);

// q [B, Hq, Sq, D], k and v [B, Hkv, Sk, D], o like q; Hq % Hkv == 0 (no query heads where there
// are no key/value heads); lse 4-byte aligned. Any of B, H, Sq, Sk may be 0 (see Engine::forward).
llvm::Error validateForwardShapes(const TensorDesc &q, const TensorDesc &k, const TensorDesc &v,
                                  const TensorDesc &o, std::uint64_t lse);

// Quantized operands agree with each other and with the route.
llvm::Error validateQuantizedForward(const QuantizedForwardArgs &args);

// The backward's operands agree with each other and with the P/V format and Q/K choice: q, k
// NVFP4 of one head dim (64 or 128), v FP8 (pv e4m3) or MXFP4 (pv mxfp4) with k's heads and length,
// BF16 o, d_o, dq like q, dk and dv like k, q_bf16 and k_bf16 like q and k when qk is bf16, lse
// 4-byte aligned and given.
llvm::Error validateBackward(const BackwardArgs &args);

// The merge's states agree: 1 .. kMaxMergeParts parts, each o a BF16, FP16 or F32 [B, H, S, D]
// tensor of the merged o's dtype and shape with its lse given, every lse 4-byte aligned. B, H or
// S may be 0 (nothing to merge).
llvm::Error validateMerge(const MergeArgs &args);

// A paged cache's dims (pages, kv heads >= 1; page size a power of two in [16, 256]; head dim 64 or
// 128) and its arrays (given, aligned as PagedKvCache says).
llvm::Error validatePagedCache(const PagedKvCache &cache);
// k and v BF16 [tokens, kv_heads, 1, head_dim] of the cache's heads and head dim, rows 16-byte
// aligned; slot_mapping given and 8-byte aligned. tokens may be 0.
llvm::Error validateAppendKv(const AppendKvArgs &args);
// q and o BF16 [batch, q_heads, queries, head_dim] with the cache's head dim and q_heads a multiple
// of its kv heads; block_table and seq_lens given and 4-byte aligned, block_table_stride >= 1;
// splits 0 .. 16; max_seq_len within the block table's capacity; lse 4-byte aligned. batch, heads
// or queries may be 0.
llvm::Error validateDecode(const DecodeArgs &args);

// The checking mode's host reads (FA4JIT_CHECK_FINITE, EngineOptions::nonfinite = Check): every
// sequence's length within its block table's capacity and every page its length reaches inside
// the cache; every slot of an append inside the cache or negative (skipped).
llvm::Error validateDecodeIndices(llvm::ArrayRef<std::int32_t> seq_lens, llvm::ArrayRef<std::int32_t> block_table,
                                  int block_table_stride, const PagedKvCache &cache);
llvm::Error validateAppendSlots(llvm::ArrayRef<std::int64_t> slots, const PagedKvCache &cache);

} // namespace fa4jit::runtime
