#pragma once
// Small real kernels the runtime tests compile (and, on the GPU machine, run).

// sm_90a only: wgmma fences and setmaxnreg do not assemble for plain sm_90.
inline const char *kSm90aKernel = R"(
extern "C" __global__ void __launch_bounds__(384, 1) warpgroup_probe(float *out) {
  if (threadIdx.x >= 128) {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 240;\n");
  } else {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
  }
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
  out[threadIdx.x] = 1.0f;
}
)";

// sm_100a only: tensor memory allocation (one warp allocates, deallocates, relinquishes).
inline const char *kSm100aKernel = R"(
extern "C" __global__ void tmem_probe(unsigned *out) {
  __shared__ unsigned base;
  const unsigned slot = static_cast<unsigned>(__cvta_generic_to_shared(&base));
  if (threadIdx.x < 32) {
    asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], 32;\n" :: "r"(slot));
    asm volatile("tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;\n");
  }
  __syncthreads();
  out[threadIdx.x] = base;
  __syncthreads();
  if (threadIdx.x < 32)
    asm volatile("tcgen05.dealloc.cta_group::1.sync.aligned.b32 %0, 32;\n" :: "r"(base));
}
)";

// Any architecture: out[i] = a * x[i] + y[i] through shared memory, written with an explicit
// fmaf (the default flags do not contract a*b+c).
inline const char *kSaxpyKernel = R"(
#include "fa4jit/common.cuh"
extern "C" __global__ void saxpy(float a, const float *x, const float *y, float *out, int n) {
  __shared__ float tile[256];
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  tile[threadIdx.x] = i < n ? x[i] : 0.0f;
  __syncthreads();
  if (i < n)
    out[i] = fmaf(a, tile[threadIdx.x], y[i]);
}
)";
