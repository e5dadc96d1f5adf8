#pragma once
// mbarriers and asynchronous global -> shared copies (sm_90+ PTX, used by the sm_100a kernel).
//  - cp.async.bulk (the bulk-copy engine, TMA without a tensor map): contiguous runs of bytes, here
//    the 512-byte scale-factor atoms, which the quantizer already writes in the layout tcgen05.cp
//    reads (NUMERICS.md §1.1); completion counted in bytes on an mbarrier (complete_tx).
//  - cp.async 16-byte copies: FP4/FP8 payload rows into the no-swizzle core-matrix layout of the
//    UMMA descriptor (descriptors.cuh). A bulk copy lands a row contiguously, but that layout puts
//    a row's 16-byte chunks 128 bytes apart; a tensor-map TMA with a swizzled layout would do it
//    in one instruction but needs a CUtensorMap kernel argument beyond AttentionParams.
#include "fa4jit/common.cuh"

namespace fa4jit::device::sm100 {

FA4JIT_DEVICE void mbarrierInit(uint32_t mbar, uint32_t arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(mbar), "r"(arrivals) : "memory");
}

// Makes mbarrier.init visible to the async proxy (bulk copies, tcgen05.commit) before first use.
FA4JIT_DEVICE void fenceMbarrierInit() { asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }

// Generic-proxy writes to shared memory (st.shared, cp.async) become visible to the async proxy
// (tcgen05.mma / tcgen05.cp operand reads) only after this fence (and a barrier between threads).
FA4JIT_DEVICE void fenceProxyAsyncShared() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }

FA4JIT_DEVICE void mbarrierArriveExpectTx(uint32_t mbar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(mbar), "r"(bytes) : "memory");
}

FA4JIT_DEVICE void mbarrierArrive(uint32_t mbar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(mbar) : "memory");
}

// Blocks until the phase with the given parity has completed.
FA4JIT_DEVICE void mbarrierWait(uint32_t mbar, uint32_t parity) {
  asm volatile("{\n .reg .pred done;\n"
               "wait_%=:\n"
               " mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
               " @!done bra wait_%=;\n}" ::"r"(mbar),
               "r"(parity)
               : "memory");
}

// `bytes` (a multiple of 16, 16-byte aligned addresses) from global to shared; the mbarrier's
// transaction count drops by `bytes` when they have landed.
FA4JIT_DEVICE void bulkCopyG2S(uint32_t smem_dst, const void *gmem_src, uint32_t bytes, uint32_t mbar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                   smem_dst),
               "l"(gmem_src), "r"(bytes), "r"(mbar)
               : "memory");
}

// 16 bytes, zero-filled when `valid` is false (rows past the sequence end).
FA4JIT_DEVICE void cpAsync16(uint32_t smem_dst, const void *gmem_src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(smem_dst), "l"(gmem_src),
               "r"(valid ? 16u : 0u)
               : "memory");
}

// The calling thread's cp.async copies issued so far arrive on the mbarrier when complete
// (.noinc: the arrival is one of the barrier's expected arrivals).
FA4JIT_DEVICE void cpAsyncArriveOn(uint32_t mbar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(mbar) : "memory");
}

} // namespace fa4jit::device::sm100
