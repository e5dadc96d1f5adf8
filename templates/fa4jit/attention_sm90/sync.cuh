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
// totals must fit the 64K-register file at 384 threads).
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

} // namespace fa4jit::device::attention_sm90
