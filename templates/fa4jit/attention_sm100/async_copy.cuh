#pragma once
// Asynchronous global -> shared copies of the sm_100a kernel (the mbarriers and the bulk copy
// are fa4jit/mbarrier.cuh's, shared with the sm_90a kernel).
//  - cp.async.bulk (the bulk-copy engine, TMA without a tensor map): contiguous runs of bytes, here
//    the 512-byte scale-factor atoms, which the quantizer already writes in the layout tcgen05.cp
//    reads (NUMERICS.md §1.1); completion counted in bytes on an mbarrier (complete_tx).
//  - cp.async 16-byte copies: FP4/FP8 payload rows into the no-swizzle core-matrix layout of the
//    UMMA descriptor (descriptors.cuh). A bulk copy lands a row contiguously, but that layout puts
//    a row's 16-byte chunks 128 bytes apart; a tensor-map TMA with a swizzled layout would do it
//    in one instruction but needs a CUtensorMap kernel argument beyond AttentionParams.
#include "fa4jit/common.cuh"
#include "fa4jit/mbarrier.cuh"

namespace fa4jit::device::sm100 {

using device::bulkCopyG2S;
using device::fenceMbarrierInit;
using device::fenceProxyAsyncShared;
using device::mbarrierArrive;
using device::mbarrierArriveExpectTx;
using device::mbarrierInit;
using device::mbarrierWait;

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
