#pragma once
// Pass 1 of every quantizer: per-head max |x| (the NVFP4 global scale, FP8's s_v and MXFP4's
// largest block exponent all derive from it) and the non-finite check. Partial maxima per chunk
// of rows instead of atomics: no workspace to clear, and the result does not depend on timing.
#include "fa4jit/quantize/load.cuh"

namespace fa4jit::device::quantize {

// grid (amax_chunks, batch * heads), block T::kThreads.
template <class C> FA4JIT_DEVICE void amaxPass(const QuantizeParams &p) {
  using T = QuantizeTraits<C>;
  constexpr int kVecPerRow = T::kHeadDim / T::kVec;
  const int bh = blockIdx.y;
  const int chunk = blockIdx.x;
  const int rows_per_chunk = (p.seqlen + p.amax_chunks - 1) / p.amax_chunks;
  const int r0 = chunk * rows_per_chunk;
  const int r1 = r0 + rows_per_chunk < p.seqlen ? r0 + rows_per_chunk : p.seqlen;
  const int n = r1 > r0 ? (r1 - r0) * kVecPerRow : 0;
  const int64_t base = headOffset(p, bh);
  const bool vec_ok = vectorLoadsOk<T>(p);
  float m = 0.0f;
  bool bad = false;
  for (int i = threadIdx.x; i < n; i += T::kThreads) {
    const int row = r0 + i / kVecPerRow;
    const int col = (i % kVecPerRow) * T::kVec;
    float v[T::kVec];
    loadRun<T, T::kVec>(p, base + row * p.x_row_stride + col, vec_ok, v);
#pragma unroll
    for (int k = 0; k < T::kVec; ++k) {
      bad |= !isFiniteFloat(v[k]);
      m = fmaxf(m, fabsf(v[k]));
    }
  }
  const bool any_bad = __syncthreads_or(bad) != 0;
  m = blockMax<T::kThreads>(m);
  if (threadIdx.x == 0) {
    reinterpret_cast<float *>(p.amax_partial)[static_cast<int64_t>(bh) * p.amax_chunks + chunk] = m;
    if (any_bad)
      atomicOr(reinterpret_cast<int *>(p.nonfinite), 1);
  }
}

// Max |x| of head bh from the partials of pass 1; every thread of the CTA must call it.
template <class T> FA4JIT_DEVICE float headAmax(const QuantizeParams &p, int bh) {
  const float *partial = reinterpret_cast<const float *>(p.amax_partial) + static_cast<int64_t>(bh) * p.amax_chunks;
  float m = 0.0f;
  for (int i = threadIdx.x; i < p.amax_chunks; i += T::kThreads)
    m = fmaxf(m, partial[i]);
  return blockMax<T::kThreads>(m);
}

} // namespace fa4jit::device::quantize
