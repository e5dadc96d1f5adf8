#pragma once
// Run-time arguments of one attention-forward launch (docs/NUMERICS.md §1 for what each tensor
// holds). Host-compilable: the runtime fills this exact struct and passes it by value as the one
// kernel argument, so host and device must agree on its bytes; the static_asserts pin the layout.
//
// Units. Pointers are device addresses stored as uint64 (identical layout on both sides, no
// pointer-size questions for NVRTC). Strides count elements of the tensor's storage unit:
//   BF16 tensors (bf16 route Q/K/V, O): bf16 elements;
//   FP4 payloads (NVFP4 Q/K rows [S, D/2], MXFP4 V^T rows [D, Skp/2]): bytes (two codes each);
//   FP8 V^T rows [D, Skp]: bytes;
//   scale-factor tensors: bytes, per (batch, head) only (inside a head the SF layout of
//   NUMERICS.md §1.1 fixes every offset).
// The innermost dimension is always contiguous (head dim for Q/K/O and bf16 V, keys for V^T).
// Row strides are int64 here but offsets inside one tile are formed in 32 bits (fewer registers
// for the loop-invariant addressing): row_stride * 256 must stay below 2^31.
// Alignment: every base address and every stride in bytes must be a multiple of 16 (tiles move in
// 16-byte vectors). Per-head scalars (global scales, s_v, v_shift) are dense arrays indexed
// [batch * heads + head] with heads = Hq for Q, Hkv for K and V.
#include "fa4jit/common.cuh"

namespace fa4jit::device::attention {

struct AttentionParams {
  // Operands (device addresses). Unused ones are 0 (e.g. *_sf for the bf16 route).
  uint64_t q;       // bf16 [B,Hq,Sq,D] | NVFP4 payload [B,Hq,Sq,D/2]
  uint64_t k;       // bf16 [B,Hkv,Sk,D] | NVFP4 payload [B,Hkv,Sk,D/2]
  uint64_t v;       // bf16 [B,Hkv,Sk,D] | FP8 V^T [B,Hkv,D,Skp] | MXFP4 V^T [B,Hkv,D,Skp/2]
  uint64_t q_sf;    // UE4M3, rows = Sq (padded to 128), D/16 columns
  uint64_t k_sf;    // UE4M3, rows = Sk (padded to 128), D/16 columns
  uint64_t v_sf;    // UE8M0, rows = D, Skp/32 columns (directp)
  uint64_t q_global_scale; // float [B*Hq]  (NVFP4 g of Q)
  uint64_t k_global_scale; // float [B*Hkv] (NVFP4 g of K)
  uint64_t v_scale;        // float [B*Hkv] s_v (nvfp8)
  uint64_t v_shift;        // int32 [B*Hkv] (directp, E4m3 widening)
  uint64_t o;       // bf16 or fp16 (o_fp16) [B,Hq,Sq,D]
  uint64_t lse;     // float [B,Hq,Sq], dense; 0 = do not write
  // wgmma kernels with prewidened K/V (attention_sm90/widen_kv.cuh): the shared-memory images of
  // every K/V tile, [B*Hkv][ceil(Sk / block_n)][stage bytes], written by the widening entry point
  // and read by the attention entry point; 0 for every other kernel.
  uint64_t kv_tiles;
  // The persistent wgmma kernel (attention_sm90/widen_q.cuh): the shared-memory images of every
  // 128-row Q block, [B*Hq][ceil(Sq / 128)][Q tile bytes], written by its Q widening entry point;
  // 0 for every other kernel.
  uint64_t q_tiles;
  // The persistent causal wgmma kernel (attention_sm90/work_tiles.cuh): two int32 counters, the
  // next work tile's ticket and the CTAs finished; zero before each launch, left zero after it (so
  // one launch at a time per counter). 0 for every other kernel.
  uint64_t work_counter;
  // The persistent wgmma kernel that widens its own K/V tiles and Q blocks (TileSpec::fused_widening,
  // attention_sm90/widen_ahead.cuh): uint32 words, [0] the CTAs finished, [1] the next K/V piece
  // ticket, then per kv head (b * Hkv + hkv) the pieces of its K/V images written; all zero before
  // each launch and left zero after it. 0 for every other kernel.
  uint64_t widen_state;
  // Quantized routes: each operand's nonfinite_rows from its quantizer (quantize/params.cuh), read
  // by the <name>_nonfinite_rows entry point (attention/nonfinite_rows.cuh); 0 = none held NaN/Inf.
  uint64_t q_nonfinite_rows, k_nonfinite_rows, v_nonfinite_rows;

  int64_t q_batch_stride, q_head_stride, q_row_stride;
  int64_t k_batch_stride, k_head_stride, k_row_stride;
  int64_t v_batch_stride, v_head_stride, v_row_stride; // row = key (bf16) or head-dim row (V^T)
  int64_t o_batch_stride, o_head_stride, o_row_stride;
  int64_t q_sf_batch_stride, q_sf_head_stride;
  int64_t k_sf_batch_stride, k_sf_head_stride;
  int64_t v_sf_batch_stride, v_sf_head_stride;

  int32_t batch;
  int32_t heads_q;
  int32_t heads_kv;  // heads_q % heads_kv == 0; query head h reads kv head h / (heads_q / heads_kv)
  int32_t seqlen_q;  // >= 1
  int32_t seqlen_k;  // >= 1; Skp = seqlen_k rounded up to 128 (V^T padding)
  int32_t o_fp16;    // 1: O is written as FP16, 0: as BF16 (a run-time choice: one branch per output row)
};

// The launch that goes with these parameters (the runtime computes the same numbers):
//   grid  = (ceil(seqlen_q / block_m), heads_q, batch), block = (warps * 32, 1, 1),
//   dynamic shared memory = attentionSharedBytes(...) below (opt in above 48 KiB with
//   CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES).
static_assert(sizeof(AttentionParams) == 19 * 8 + 18 * 8 + 6 * 4, "AttentionParams layout changed");
static_assert(alignof(AttentionParams) == 8, "AttentionParams alignment changed");

// Shared-memory bytes of one CTA. Rows are padded by 16 bytes so that the 8 rows a quad-group of
// an mma fragment touches fall into distinct 4-byte banks (row pitch / 16 is odd).
//   qk_bytes: 2 when Q and K reach the tensor core as BF16 (bf16 route or Bf16 widening), else 1.
//   v_key_major: bf16 route (V [keys][D] bf16); otherwise V^T [D][keys] FP8.
FA4JIT_HD constexpr int attentionQkPitch(int head_dim, int qk_bytes) { return head_dim * qk_bytes + 16; }
FA4JIT_HD constexpr int attentionVPitch(int head_dim, int block_n, bool v_key_major) {
  return v_key_major ? head_dim * 2 + 16 : block_n + 16;
}
FA4JIT_HD constexpr int attentionVRows(int head_dim, int block_n, bool v_key_major) {
  return v_key_major ? block_n : head_dim;
}
FA4JIT_HD constexpr int attentionSharedBytes(int head_dim, int block_m, int block_n, int qk_bytes,
                                             bool v_key_major) {
  return (block_m + block_n) * attentionQkPitch(head_dim, qk_bytes) +
         attentionVRows(head_dim, block_n, v_key_major) * attentionVPitch(head_dim, block_n, v_key_major);
}

} // namespace fa4jit::device::attention
