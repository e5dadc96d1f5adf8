#pragma once
// Shared-memory layout of the warp-specialized wgmma attention kernel (host-compilable: the code
// generator's independent computation is pinned against kSharedBytes by a static_assert).
//
//   [pad to 1024] Q [128 rows][D] | stage 0: K [block_n][D], V^T [D][block_n] | stage 1 ... |
//   mbarriers: full[stages], empty[stages], q_full
// Every operand tile is a swizzled K-major tile (smem_desc.cuh) at a 1024-byte aligned offset.
#include "fa4jit/attention_sm90/smem_desc.cuh"

namespace fa4jit::device::attention_sm90 {

constexpr int kConsumerWarpgroups = 2;
constexpr int kRowsPerConsumer = 64;                              // the wgmma M
constexpr int kBlockRows = kConsumerWarpgroups * kRowsPerConsumer; // query rows per CTA
constexpr int kWarpgroupThreads = 128;
constexpr int kCtaThreads = (1 + kConsumerWarpgroups) * kWarpgroupThreads; // producer + consumers
// setmaxnreg budgets: 128 * 64 + 256 * 216 = 63488 <= 384 * 168 (the launch allocation). The
// producer widens FP4 with 4 loads in flight and spills below 64.
constexpr int kProducerRegisters = 64;
constexpr int kConsumerRegisters = 216;

struct Sm90Layout {
  int q_offset, k_offset, v_offset, stage_bytes, barrier_offset, shared_bytes;
};

// FP8 operands (1 byte per element). shared_bytes includes 1024 bytes of slack for aligning the
// dynamic shared-memory base at run time.
FA4JIT_HD constexpr Sm90Layout sm90AttentionLayout(int head_dim, int block_n, int stages) {
  const int q = operandTileBytes(kBlockRows, head_dim);
  const int k = operandTileBytes(block_n, head_dim);
  const int v = operandTileBytes(head_dim, block_n);
  const int stage = k + v;
  const int barriers = q + stages * stage;
  return {0, q, q + k, stage, barriers, kSwizzleAtom + barriers + 8 * (2 * stages + 1)};
}

} // namespace fa4jit::device::attention_sm90
