#pragma once
// Synchronization of the warp-specialized wgmma path: mbarriers (full/empty signalling of the
// shared-memory ring), the generic-to-async proxy fence, and warpgroup register reallocation.
#include "fa4jit/common.cuh"

namespace fa4jit::device::attention_sm90 {

FA4JIT_DEVICE uint32_t smemAddr(const void *p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }

FA4JIT_DEVICE void mbarrierInit(uint32_t bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}

// Makes the initialized barriers visible to the other threads (and the async proxy) before use.
FA4JIT_DEVICE void mbarrierInitFence() { asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory"); }

// Release-arrive: this thread's earlier shared-memory writes happen before the phase completes.
FA4JIT_DEVICE void mbarrierArrive(uint32_t bar) {
  asm volatile("{\n .reg .b64 st;\n mbarrier.arrive.shared::cta.b64 st, [%0];\n}\n" ::"r"(bar) : "memory");
}

// Arrive that also announces `bytes` of asynchronous (bulk copy) writes the phase must wait for.
FA4JIT_DEVICE void mbarrierArriveExpectTx(uint32_t bar, uint32_t bytes) {
  asm volatile("{\n .reg .b64 st;\n mbarrier.arrive.expect_tx.shared::cta.b64 st, [%0], %1;\n}\n" ::"r"(bar), "r"(bytes)
               : "memory");
}

// One bulk copy global -> shared on the TMA engine (no tensor map: a contiguous byte range), which
// completes `bytes` of the barrier's transaction count. Addresses 16-byte aligned, bytes % 16 == 0.
FA4JIT_DEVICE void bulkCopyGlobalToShared(uint32_t smem_dst, const void *gmem_src, uint32_t bytes, uint32_t bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
                   smem_dst),
               "l"(gmem_src), "r"(bytes), "r"(bar)
               : "memory");
}

// Waits until the phase with the given parity has completed (acquire). A fresh barrier is in
// phase 0, so waiting for parity 1 returns at once: producers start their empty waits there.
FA4JIT_DEVICE void mbarrierWait(uint32_t bar, uint32_t parity) {
  asm volatile("{\n .reg .pred done;\n"
               "WAIT_%=:\n"
               " mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
               " @!done bra WAIT_%=;\n}\n" ::"r"(bar),
               "r"(parity)
               : "memory");
}

// Ordinary st.shared (generic proxy) must be made visible to wgmma's operand reads (async proxy).
FA4JIT_DEVICE void fenceProxyAsyncShared() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

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
