#pragma once
// Synchronization of the warp-specialized wgmma path: the mbarriers of fa4jit/mbarrier.cuh
// (full/empty signalling of the shared-memory ring), named barriers, and warpgroup register
// reallocation.
#include "fa4jit/common.cuh"
#include "fa4jit/mbarrier.cuh"

namespace fa4jit::device::attention_sm90 {

using device::bulkCopyG2S;
using device::fenceMbarrierInit;
using device::fenceProxyAsyncShared;
using device::mbarrierArrive;
using device::mbarrierArriveExpectTx;
using device::mbarrierInit;
using device::mbarrierWait;
using device::smemAddr;

// Named barriers (ids 1..15; 0 is __syncthreads'): `threads` counts every participant, the
// syncing and the arriving ones (the consumers' ping-pong: 128 sync + 128 arrive).
FA4JIT_DEVICE void namedBarrierSync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
FA4JIT_DEVICE void namedBarrierArrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// Warpgroup register budgets: the producer gives registers back, the consumers take them (the
// totals must fit the 64K-register file at 384 or 512 threads; layout.cuh).
template <int kRegs> FA4JIT_DEVICE void warpgroupRegDealloc() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kRegs));
#endif
}
template <int kRegs> FA4JIT_DEVICE void warpgroupRegAlloc() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kRegs));
#endif
}

// A tile's ring stage and the phase parity of its mbarriers (one phase per pass over the ring),
// advanced tile by tile: tile % kStages and (tile / kStages) & 1 without the division, which
// cost ~10 instructions per tile in the consumer's issue path (two of them, for S_j and PV_{j-1}).
template <int kStages> struct RingCursor {
  int stage = 0;
  uint32_t parity = 0u;
  // The position of the n-th tile through the ring.
  FA4JIT_DEVICE static RingCursor of(int n) { return {n % kStages, static_cast<uint32_t>(n / kStages) & 1u}; }
  FA4JIT_DEVICE void advance() {
    if (++stage == kStages) {
      stage = 0;
      parity ^= 1u;
    }
  }
};

} // namespace fa4jit::device::attention_sm90
