#pragma once
// mbarriers, the proxy fences around them, and the bulk copy (TMA engine without a tensor map)
// that completes on them: sm_90+ PTX shared by the sm_90a wgmma kernel (attention_sm90/) and the
// sm_100a tcgen05 kernel (attention_sm100/).
#include "fa4jit/common.cuh"

namespace fa4jit::device {

FA4JIT_DEVICE uint32_t smemAddr(const void *p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }

FA4JIT_DEVICE void mbarrierInit(uint32_t bar, uint32_t arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(arrivals) : "memory");
}

// Makes mbarrier.init visible to the other threads and the async proxy (bulk copies,
// tcgen05.commit) before first use.
FA4JIT_DEVICE void fenceMbarrierInit() { asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory"); }

// Generic-proxy writes to shared memory (st.shared, cp.async) become visible to the async proxy
// (wgmma / tcgen05 operand reads) only after this fence (and a barrier between threads).
FA4JIT_DEVICE void fenceProxyAsyncShared() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

// Release-arrive: this thread's earlier shared-memory writes happen before the phase completes.
FA4JIT_DEVICE void mbarrierArrive(uint32_t bar) {
  asm volatile("{\n .reg .b64 st;\n mbarrier.arrive.shared::cta.b64 st, [%0];\n}\n" ::"r"(bar) : "memory");
}

// Arrive that also announces `bytes` of asynchronous (bulk copy) writes the phase must wait for.
FA4JIT_DEVICE void mbarrierArriveExpectTx(uint32_t bar, uint32_t bytes) {
  asm volatile("{\n .reg .b64 st;\n mbarrier.arrive.expect_tx.shared::cta.b64 st, [%0], %1;\n}\n" ::"r"(bar), "r"(bytes)
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

// `bytes` (a multiple of 16, 16-byte aligned addresses) from global to shared on the bulk-copy
// engine; the mbarrier's transaction count drops by `bytes` when they have landed.
FA4JIT_DEVICE void bulkCopyG2S(uint32_t smem_dst, const void *gmem_src, uint32_t bytes, uint32_t bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
                   smem_dst),
               "l"(gmem_src), "r"(bytes), "r"(bar)
               : "memory");
}

} // namespace fa4jit::device
