#pragma once
// Shared-memory layout of the warp-specialized wgmma attention kernel (host-compilable: the code
// generator's independent computation is pinned against kSharedBytes by a static_assert).
//
//   [pad to 1024] Q [block_m rows][D] | stage 0: K [block_n][D], V^T [D][block_n] | stage 1 ... |
//   mbarriers: full[stages], empty[stages], q_full, q_empty (the persistent kernel's)
//   | the handed-out work tile (persistent causal grid: work_tiles.cuh), 32 bytes
//   | the spare producer warps' work tiles, mbarriers, shape and staging (fused widening: widen_ahead.cuh)
// Every operand tile (E4M3, or BF16 on the bf16 route) is a swizzled K-major tile (smem_desc.cuh) at a 1024-byte aligned offset.
#include "fa4jit/attention_sm90/smem_desc.cuh"

namespace fa4jit::device::attention_sm90 {

constexpr int kRowsPerConsumer = 64; // the wgmma M
constexpr int kWarpgroupThreads = 128;
// A CTA's query rows (block_m) are its consumer warpgroups' 64 each: two (128 rows) or three
// (192 rows: a third warp per scheduler to issue while the other two wait on their softmax's
// dependency chains, FlashAttention-3's choice at D = 64), after one producer warpgroup.
FA4JIT_HD constexpr int consumerWarpgroups(int block_m) { return block_m / kRowsPerConsumer; }
FA4JIT_HD constexpr int ctaThreads(int block_m) { return (1 + consumerWarpgroups(block_m)) * kWarpgroupThreads; }
// setmaxnreg budgets, filling the launch allocation (65536 / threads per thread, a multiple of 8).
// Two consumers: with in-kernel widening the producer widens FP4 with 4 loads in flight and
// spills below 64: 128 * 64 + 256 * 216 = 63488 <= 384 * 168; with one producer thread (prewidened
// or tensor-map tiles, bulk or TMA copies) it keeps 24: 128 * 24 + 256 * 240 = 64512, room for O
// at D = 256 beside S and BF16 P. Three consumers (one producer thread only): 128 * 32 + 384 * 160
// = 65536 = 512 * 128 (FlashAttention-3's split).
// A producer thread that also hands out work tiles (work_tiles.cuh) spilled its loop state at 24,
// and the spare producer warps that widen K/V and Q (widen_ahead.cuh) need more than 24 too
// (`wide_producer`): with two consumers the producer keeps 32, they 232 (128 * 32 + 256 * 232 =
// 63488; at 224 the directp D256 consumers spilled).
FA4JIT_HD constexpr int producerRegisters(bool one_thread, int consumers, bool wide_producer = false) {
  return consumers == 3 || wide_producer ? 32 : one_thread ? 24 : 64;
}
FA4JIT_HD constexpr int consumerRegisters(bool one_thread, int consumers, bool wide_producer = false) {
  return consumers == 3 ? 160 : wide_producer ? 232 : one_thread ? 240 : 216;
}
static_assert(kWarpgroupThreads * producerRegisters(true, 2) + 2 * kWarpgroupThreads * consumerRegisters(true, 2) <=
                  384 * 168,
              "register split exceeds the launch allocation");
static_assert(kWarpgroupThreads * producerRegisters(false, 2) + 2 * kWarpgroupThreads * consumerRegisters(false, 2) <=
                  384 * 168,
              "register split exceeds the launch allocation");
static_assert(kWarpgroupThreads * producerRegisters(true, 2, true) + 2 * kWarpgroupThreads * consumerRegisters(true, 2, true) <=
                  384 * 168,
              "register split exceeds the launch allocation");
static_assert(kWarpgroupThreads * producerRegisters(true, 3) + 3 * kWarpgroupThreads * consumerRegisters(true, 3) <=
                  512 * 128,
              "register split exceeds the launch allocation");

// stage_bytes: one stage's K and V^T, the bulk-copied image; stage_stride: the distance between
// stages, which with mma_row_sum also holds V^T's 8 row-sum rows (written once, never copied over).
// q_bytes: the Q tile, which the persistent kernel bulk-copies from its image (widen_q.cuh).
// V^T has v_blocks 128-byte column blocks, v_block_stride bytes apart: head_dim rows each, and with
// mma_row_sum 8 row-sum rows after them in every block (the PV wgmma's N = head_dim + 8 rows run
// on into them), so that the blocks of a 192-key V^T each carry their own.
// The fused widening's shared memory (widen_ahead.cuh): 128 bytes of mbarriers, slots and shape,
// then a 6 KiB staging area for each of the three widener warps (widen_staged.cuh).
constexpr int kWidenerSharedBytes = 128 + 3 * 6144;

struct Sm90Layout {
  int q_offset, q_bytes, k_offset, v_offset, stage_bytes, stage_stride, row_sum_offset, barrier_offset, shared_bytes;
  int work_slot_offset; // (after the mbarriers; only kernels with work_slot reserve its 32 bytes)
  int widen_offset;     // (after the work slot; only kernels with widen_ahead reserve kWidenerSharedBytes)
  int v_blocks, v_block_stride;
};

// The row-sum rows under V^T (mma_row_sum): row 0 E4M3 ones (0x38), rows 1-7 zeros, so the PV
// wgmma's column head_dim is sum_k P[r][k] = l, and columns head_dim+1..+7 stay 0.
constexpr int kRowSumRows = 8;
constexpr uint32_t kE4m3OnesX4 = 0x38383838u;

// Operands of elem_bytes each: 1 for the FP8-fed routes (E4M3), 2 for the bf16 route. The tiles
// are the same shapes in bytes along the reduction dimension: Q [block_m][D], K [block_n][D] and
// V^T [D][block_n] (plus the row-sum rows per column block). stage_bytes is the bulk-copied
// image of a stage (widen_kv.cuh: K, then V^T's column blocks of head_dim rows each, no row-sum
// rows); with one V^T column block or no row-sum rows the image is the stage as it lies in shared
// memory. shared_bytes includes 1024 bytes of slack for aligning the dynamic shared-memory base at
// run time. work_slot: 32 bytes after the mbarriers, two slots (by Q's phase) of the work tile the
// producer has handed out (the persistent causal grid, work_tiles.cuh). v_by_keys (tensor maps): V
// lies as in the tensor, [block_n][D] in K's shape, which differs from V^T's bytes when block_n * elem_bytes is not a multiple of 128 (80 BF16 keys: 40 KiB
// against V^T's two column blocks of 32 KiB each at D = 256). widen_ahead: kWidenerSharedBytes after
// the work slot (16-byte aligned there) for the spare producer warps that widen K/V and Q in the
// kernel (widen_ahead.cuh's WidenerBuffers).
FA4JIT_HD constexpr Sm90Layout sm90AttentionLayout(int head_dim, int block_m, int block_n, int stages, int elem_bytes,
                                                   bool row_sum, bool v_by_keys = false, bool work_slot = false,
                                                   bool widen_ahead = false) {
  const int q = operandTileBytes(block_m, head_dim * elem_bytes);
  const int k = operandTileBytes(block_n, head_dim * elem_bytes);
  const int v_blocks = operandColumnBlocks(block_n * elem_bytes);
  const int v_block_stride = (head_dim + (row_sum ? kRowSumRows : 0)) * kSwizzleBytes;
  const int image = k + (v_by_keys ? k : v_blocks * head_dim * kSwizzleBytes);
  const int stride = v_by_keys ? image : k + v_blocks * v_block_stride;
  const int barriers = q + stages * stride;
  const int slot = barriers + 8 * (2 * stages + 2);
  const int widen = slot + (work_slot ? 32 : 0);
  return {0,      q,        q, q + k, image, stride, q + k + head_dim * kSwizzleBytes, barriers,
          kSwizzleAtom + widen + (widen_ahead ? kWidenerSharedBytes : 0), slot, widen, v_blocks, v_block_stride};
}

} // namespace fa4jit::device::attention_sm90
