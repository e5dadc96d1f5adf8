#pragma once
// Thread-block clusters (sm_90 and later): a CTA's rank and the cluster's size, the cluster-wide
// barrier, and reads of a peer CTA's shared memory through the cluster's shared window.
#include "fa4jit/common.cuh"

namespace fa4jit::device {

#if (defined(__CUDACC__) || defined(__CUDACC_RTC__)) && (!defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900)
FA4JIT_DEVICE int clusterCtaRank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return static_cast<int>(r);
}

FA4JIT_DEVICE int clusterCtaCount() {
  uint32_t n;
  asm volatile("mov.u32 %0, %%cluster_nctarank;\n" : "=r"(n));
  return static_cast<int>(n);
}

// Every thread of every CTA of the cluster: what each wrote before it (shared or global memory)
// is visible to all after it.
FA4JIT_DEVICE void clusterSync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n"
               "barrier.cluster.wait.acquire.aligned;\n" ::
                   : "memory");
}

// The two halves of clusterSync, for work between them: arrive once this CTA's reads of its peers
// are done, wait before it exits (a CTA's shared memory must outlive its peers' reads of it).
FA4JIT_DEVICE void clusterArrive() { asm volatile("barrier.cluster.arrive.release.aligned;\n" ::: "memory"); }
FA4JIT_DEVICE void clusterWait() { asm volatile("barrier.cluster.wait.acquire.aligned;\n" ::: "memory"); }

// The 32-bit word at this CTA's shared address `addr`, read in CTA `rank` of the cluster.
FA4JIT_DEVICE uint32_t loadSharedOfCta(uint32_t addr, int rank) {
  uint32_t v;
  asm volatile("{\n .reg .b32 remote;\n"
               " mapa.shared::cluster.u32 remote, %1, %2;\n"
               " ld.shared::cluster.u32 %0, [remote];\n}\n"
               : "=r"(v)
               : "r"(addr), "r"(rank)
               : "memory");
  return v;
}
#endif

} // namespace fa4jit::device
