#pragma once
// Run-time arguments of the attention backward's three launches (docs/NUMERICS.md §3 for what
// they compute, docs/ARCHITECTURE.md §11 for the passes). Host-compilable: the runtime fills this
// exact struct and passes it by value to each entry point; the static_asserts pin its bytes.
//
// Units as in attention/params.cuh: device addresses as uint64; strides in elements of the
// tensor's storage unit (BF16 elements for q, k, o, d_o, dq, dk, dv; bytes for the NVFP4 payload
// rows [S, D/2] and the V^T payload rows [D, Skp] (FP8) or [D, Skp/2] (MXFP4); bytes per
// (batch, head) for scale-factor tensors). The innermost dimension is contiguous; every base
// address and byte stride is a multiple of 16.
#include "fa4jit/attention_sm90/smem_desc.cuh"
#include "fa4jit/common.cuh"

namespace fa4jit::device::attention_backward {

struct BackwardParams {
  // The BF16 tensors: inputs q, k ([B,H,S,D]; read when the dS products take BF16 Q/K), the
  // forward's output o, the incoming gradient d_o, and the outputs dq ([B,Hq,Sq,D]), dk, dv
  // ([B,Hkv,Sk,D]).
  uint64_t q, k, o, d_o, dq, dk, dv;
  uint64_t lse; // float [B,Hq,Sq], dense, natural log as the forward wrote it (-inf: no key seen)
  // What the training forward saved: NVFP4 Q and K (payload, UE4M3 scales in the SF layout, FP32
  // global scale per head) and V^T (E4M3 with a float s_v per head, or MXFP4 with UE8M0 scales
  // and an int32 v_shift per head).
  uint64_t q_payload, q_sf, q_global_scale;
  uint64_t k_payload, k_sf, k_global_scale;
  uint64_t v_payload, v_sf, v_head_scalar;
  // Workspace, all dense: delta float [B*Hq*Sqp]; do_amax uint32 [B*Hq] (bits of max |dO|, zero
  // before the prep launch); dq_accum float [B*Hq*Sq*D] (zeroed by the prep launch);
  // dq_semaphore int32 [B*Hq*ceil(Sq/block_m)] (deterministic mode; zeroed by the prep launch).
  uint64_t delta, do_amax, dq_accum, dq_semaphore;
  // The stage launch's per-query operands of the main pass, per (batch * Hq + head), rows padded
  // with zeros to Sqp = seqlen_q rounded up to kStageRows: q8 E4M3 [Sqp][D] (Q widened as the
  // forward widens it), qb BF16 (Q as the dK product reads it: [Sqp][D] for the mma.sync main
  // pass, transposed [D][Sqp] for the wgmma one), do8 E4M3 [Sqp][D]
  // (dO / s_dO), do_t E4M3 [D][Sqp] (the same bytes transposed, queries permuted within each 16),
  // lse2 float [Sqp] (LSE * log2(e); +inf where no key was seen and past the end).
  uint64_t q8, qb, do8, do_t, lse2;

  int64_t q_batch_stride, q_head_stride, q_row_stride;
  int64_t k_batch_stride, k_head_stride, k_row_stride;
  int64_t o_batch_stride, o_head_stride, o_row_stride;
  int64_t do_batch_stride, do_head_stride, do_row_stride;
  int64_t dq_batch_stride, dq_head_stride, dq_row_stride;
  int64_t dk_batch_stride, dk_head_stride, dk_row_stride;
  int64_t dv_batch_stride, dv_head_stride, dv_row_stride;
  int64_t q_payload_head_bytes, q_payload_row_bytes, q_sf_head_bytes; // per (batch * Hq + head)
  int64_t k_payload_head_bytes, k_payload_row_bytes, k_sf_head_bytes; // per (batch * Hkv + head)
  int64_t v_payload_head_bytes, v_payload_row_bytes, v_sf_head_bytes; // per (batch * Hkv + head)

  int32_t batch;
  int32_t heads_q;
  int32_t heads_kv;            // heads_q % heads_kv == 0
  int32_t seqlen_q;            // >= 1
  int32_t seqlen_k;            // >= 1; V^T rows hold Skp = seqlen_k rounded up to 128 keys
  int32_t dq_semaphore_blocks; // ceil(seqlen_q / block_m): the semaphores of one (batch, head)
  int32_t seqlen_q_padded;     // Sqp: seqlen_q rounded up to kStageRows
};

static_assert(sizeof(BackwardParams) == 26 * 8 + 30 * 8 + 8 * 4, "BackwardParams layout changed");
static_assert(alignof(BackwardParams) == 8, "BackwardParams alignment changed");

// The prep, stage and dq launches: grid (ceil(seqlen_q / kPrepRows), heads_q, batch),
// kPrepThreads threads, no dynamic shared memory. The main launch: grid (heads_kv, ceil(seqlen_k /
// block_n), batch), warps * 32 threads, backwardSharedBytes(...) of dynamic shared memory: the
// heads vary fastest, so that the causal mask's longest CTAs (the first key blocks) start first.
// The stage pads the query rows to whole kStageRows, a multiple of every block_m, so that the main
// pass copies whole blocks without bounds checks.
constexpr int kPrepRows = 64;
constexpr int kStageRows = kPrepRows;
constexpr int kPrepThreads = 256;
FA4JIT_HD constexpr int backwardPaddedQueries(int seqlen_q) {
  return (seqlen_q + kStageRows - 1) / kStageRows * kStageRows;
}

// Shared-memory rows: E4M3 rows of the head dim, BF16 rows of the head dim, the transposed dO
// rows of block_m queries and the dS^T rows of block_m BF16 values. Each pitch is an odd multiple
// of 16 bytes, so that the 8 rows one quad-group of an mma fragment reads fall into distinct banks.
FA4JIT_HD constexpr int backwardOddPitch(int bytes) { return (bytes / 16) % 2 ? bytes + 16 : bytes + 32; }
FA4JIT_HD constexpr int backwardFp8Pitch(int head_dim) { return backwardOddPitch(head_dim); }
FA4JIT_HD constexpr int backwardBf16Pitch(int head_dim) { return backwardOddPitch(2 * head_dim); }
FA4JIT_HD constexpr int backwardDoTPitch(int block_m) { return backwardOddPitch(block_m); }
FA4JIT_HD constexpr int backwardDsPitch(int block_m) { return backwardOddPitch(2 * block_m); }

// One query block's operands: Q (E4M3, BF16), dO (E4M3 rows and transposed), LSE2 and delta.
FA4JIT_HD constexpr int backwardQueryStageBytes(int head_dim, int block_m) {
  return block_m * (2 * backwardFp8Pitch(head_dim) + backwardBf16Pitch(head_dim)) +
         head_dim * backwardDoTPitch(block_m) + 2 * 4 * block_m;
}
// K (E4M3 for S, BF16 for dQ) and V (E4M3) of the CTA's key block, the dS^T tile, and two query
// blocks: the one in use and the next one in flight.
FA4JIT_HD constexpr int backwardSharedBytes(int head_dim, int block_m, int block_n) {
  return block_n * (2 * backwardFp8Pitch(head_dim) + backwardBf16Pitch(head_dim)) + block_n * backwardDsPitch(block_m) +
         2 * backwardQueryStageBytes(head_dim, block_m);
}

// The wgmma main pass (main_wgmma.cuh): swizzled K-major tiles (attention_sm90/smem_desc.cuh) of
// the key block (K and V in E4M3 [keys][D], K^T in BF16 [D][keys]), the dS tile (BF16 [queries]
// [keys]), and two query stages of Q, dO (E4M3 [queries][D]), dO^T (E4M3 [D][queries]), Q^T (BF16
// [D][queries]), LSE2 and delta; plus 1024 bytes to align the base for the swizzle.
FA4JIT_HD constexpr int backwardWgmmaStageBytes(int head_dim, int block_m) {
  using attention_sm90::operandTileBytes;
  return (2 * operandTileBytes(block_m, head_dim) + operandTileBytes(head_dim, block_m) +
          operandTileBytes(head_dim, 2 * block_m) + 8 * block_m + 1023) /
         1024 * 1024;
}
FA4JIT_HD constexpr int backwardWgmmaSharedBytes(int head_dim, int block_m, int block_n) {
  using attention_sm90::operandTileBytes;
  return 2 * operandTileBytes(block_n, head_dim) + operandTileBytes(head_dim, 2 * block_n) +
         operandTileBytes(block_m, 2 * block_n) + 2 * backwardWgmmaStageBytes(head_dim, block_m) + 1024;
}

} // namespace fa4jit::device::attention_backward
