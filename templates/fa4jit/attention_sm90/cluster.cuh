#pragma once
// Two-CTA clusters of the wgmma attention kernel (config `kv_multicast`): the two CTAs of a cluster
// run adjacent m-blocks of one (batch, query head), so they read the same K/V tiles; each producer
// loads one half of every stage (K, or V^T / V) and multicasts it into both CTAs' shared memory,
// which halves the ring's L2 reads. A stage may then be refilled only once the consumers of both
// CTAs have released it: each consumer warp arrives on its own CTA's empty mbarrier and on the
// peer's (through the cluster's shared window), and each producer, before it exits, waits for the
// last release of every stage, so that no arrive ever targets a CTA that has finished.
#include "fa4jit/cluster.cuh"

namespace fa4jit::device::attention_sm90 {

constexpr int kClusterCtas = 2;
constexpr uint16_t kClusterMask = 0x3u; // multicast to both CTAs of the cluster

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
// Arrive on the mbarrier at the same offset of CTA `rank` of the cluster (`bar`: this CTA's
// shared-window address of it), with the default (CTA-scope) release, as CUTLASS's cluster
// barriers: what it orders is the consumer's wgmma reads of the stage, complete before it. The
// cluster-scope release (.release.cluster) put MEMBAR.ALL.GPU before every arrive (SASS): 42%
// slower at nvfp8 D128 16k on the H200.
FA4JIT_DEVICE void mbarrierArriveCluster(uint32_t bar, int rank) {
  asm volatile("{\n .reg .b32 remote;\n"
               " mapa.shared::cluster.u32 remote, %0, %1;\n"
               " mbarrier.arrive.shared::cluster.b64 _, [remote];\n}\n" ::"r"(bar),
               "r"(rank)
               : "memory");
}

// `bytes` from global memory into shared memory at `smem_dst` of both CTAs of the cluster, each
// completing on its own mbarrier at `bar` (the same offsets in every CTA).
FA4JIT_DEVICE void bulkCopyG2SMulticast(uint32_t smem_dst, const void *gmem_src, uint32_t bytes, uint32_t bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1], %2, "
               "[%3], %4;\n" ::"r"(smem_dst),
               "l"(gmem_src), "r"(bytes), "r"(bar), "h"(kClusterMask)
               : "memory");
}
#endif

} // namespace fa4jit::device::attention_sm90
