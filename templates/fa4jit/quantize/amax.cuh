#pragma once
// Pass 1 of every quantizer: per-head max |x| over the finite elements (the NVFP4 global scale,
// FP8's s_v and MXFP4's largest block exponent all derive from it) and the rows that hold a NaN
// or Inf. Partial maxima per chunk of rows instead of atomics: no workspace to clear, and the
// result does not depend on timing.
#include "fa4jit/quantize/load.cuh"

namespace fa4jit::device::quantize {

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)

FA4JIT_DEVICE int32_t *firstNonFiniteRow(const QuantizeParams &p) { return reinterpret_cast<int32_t *>(p.nonfinite_rows); }
FA4JIT_DEVICE uint32_t *nonfiniteMask(const QuantizeParams &p, int bh) {
  return reinterpret_cast<uint32_t *>(p.nonfinite_rows + static_cast<uint64_t>(p.batch) * p.heads * 4) +
         static_cast<int64_t>(bh) * nonfiniteMaskWords(p.seqlen);
}

// Whether row `row` of head bh holds a NaN or Inf (the slow path: only runs where one was seen).
template <class T> FA4JIT_DEVICE bool rowHasNonFinite(const QuantizeParams &p, int bh, int row, bool vec_ok) {
  const int64_t base = headOffset(p, bh) + static_cast<int64_t>(row) * p.x_row_stride;
  bool bad = false;
  for (int c = 0; c < T::kHeadDim; c += T::kVec) {
    float v[T::kVec];
    loadRun<T, T::kVec>(p, base + c, vec_ok, v);
#pragma unroll
    for (int k = 0; k < T::kVec; ++k)
      bad |= !isFiniteFloat(v[k]);
  }
  return bad;
}

// Max |x| over the finite elements of vectors [0, n) of a chunk (vector i at element offset
// vectorOffset(i)), and whether any element is NaN or Inf, with kUnroll vector loads in flight per
// thread. Works for every input type and alignment.
template <class T, int kUnroll, class Offset>
FA4JIT_DEVICE void chunkAmaxFinite(const QuantizeParams &p, int64_t base, int n, bool vec_ok, Offset vectorOffset,
                                   float &m, bool &bad) {
  m = 0.0f;
  bad = false;
  for (int i0 = threadIdx.x; i0 < n; i0 += T::kThreads * kUnroll) {
    float v[kUnroll][T::kVec];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int i = i0 + u * T::kThreads;
      if (i < n) {
        loadRun<T, T::kVec>(p, base + vectorOffset(i), vec_ok, v[u]);
      } else {
#pragma unroll
        for (int k = 0; k < T::kVec; ++k)
          v[u][k] = 0.0f;
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
#pragma unroll
      for (int k = 0; k < T::kVec; ++k) {
        const float a = fabsf(v[u][k]);
        if (a <= 3.402823466e38f) // finite (NaN compares false)
          m = fmaxf(m, a);
        else
          bad = true;
      }
  }
}

// The same for 16-byte-aligned BF16 or FP16, on the bit patterns: with the sign cleared, their bits are
// ordered as the magnitudes are, so two per 32-bit word reduce with one packed 16-bit max, and the
// raw words keep twice as many loads in flight in the same registers. A maximum at or above the
// Inf pattern reveals a NaN or Inf; then the chunk is reduced again by chunkAmaxFinite.
FA4JIT_DEVICE uint32_t maxU16x2(uint32_t a, uint32_t b) {
#if __CUDA_ARCH__ >= 900
  uint32_t r;
  asm("max.u16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
  return r;
#else
  return __vmaxu2(a, b);
#endif
}

template <class T, class Offset, class Reads = PlainReads>
FA4JIT_DEVICE uint32_t chunkAmaxBf16Bits(const QuantizeParams &p, int64_t base, int n, Offset vectorOffset,
                                         const Reads &read = {}) {
  constexpr int kUnroll = 8;
  const uint4 *x = reinterpret_cast<const uint4 *>(reinterpret_cast<const uint16_t *>(p.x) + base);
  uint32_t m2 = 0u;
  for (int i0 = threadIdx.x; i0 < n; i0 += T::kThreads * kUnroll) {
    uint4 w[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int i = i0 + u * T::kThreads;
      w[u] = i < n ? read(x + vectorOffset(i) / 8) : make_uint4(0u, 0u, 0u, 0u);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      m2 = maxU16x2(maxU16x2(m2, maxU16x2(w[u].x & 0x7FFF7FFFu, w[u].y & 0x7FFF7FFFu)),
                    maxU16x2(w[u].z & 0x7FFF7FFFu, w[u].w & 0x7FFF7FFFu));
  }
  return m2;
}

// Max |x| and the non-finite rows of rows [r0, r1) of head bh (r0 a multiple of 32, r1 <= S): the
// partial at amax_partial[bh * amax_chunks + chunk] and the row bitmask's words of those rows.
// Every thread of the CTA calls it. kFp32Unroll: FP32 vector loads in flight per thread; `read`:
// how the aligned 16-bit input is read.
template <class T, int kFp32Unroll = 4, class Reads = PlainReads>
FA4JIT_DEVICE void amaxOfRows(const QuantizeParams &p, int bh, int r0, int r1, int chunk, const Reads &read = {}) {
  constexpr int kVecPerRow = T::kHeadDim / T::kVec;
  const int n = (r1 - r0) * kVecPerRow;
  const int64_t base = headOffset(p, bh) + static_cast<int64_t>(r0) * p.x_row_stride;
  const bool vec_ok = vectorLoadsOk<T>(p);
  const bool dense = p.x_row_stride == T::kHeadDim; // rows back to back: one flat run
  const int64_t row_stride = p.x_row_stride;
  const auto vectorOffset = [dense, row_stride](int i) -> int64_t {
    return dense ? static_cast<int64_t>(i) * T::kVec
                 : static_cast<int64_t>(i / kVecPerRow) * row_stride + (i % kVecPerRow) * T::kVec;
  };
  float m = 0.0f;
  bool bad = false;
  if constexpr (T::kInputFp32) {
    chunkAmaxFinite<T, kFp32Unroll>(p, base, n, vec_ok, vectorOffset, m, bad);
  } else {
    if (vec_ok) {
      const uint32_t m2 = chunkAmaxBf16Bits<T>(p, base, n, vectorOffset, read);
      const uint32_t bits = (m2 & 0xFFFFu) > (m2 >> 16) ? (m2 & 0xFFFFu) : (m2 >> 16);
      m = elementToFloat<T>(static_cast<uint16_t>(bits));
      bad = bits >= T::kInfBits16;
    }
    // Unaligned input, or a NaN/Inf somewhere in the chunk: the rare slow path, one load in
    // flight (it must not raise the kernel's register count).
    if (__syncthreads_or(!vec_ok || bad) != 0)
      chunkAmaxFinite<T, 1>(p, base, n, vec_ok, vectorOffset, m, bad);
  }
  const bool any_bad = __syncthreads_or(bad) != 0;
  m = blockMax<T::kThreads>(m);
  // This chunk's words of the row bitmask (r0 is a multiple of 32): zeros, unless a row held a
  // non-finite element; then each word's 32 rows are checked again.
  uint32_t *mask = nonfiniteMask(p, bh);
  const int w0 = r0 / kRowsPerMaskWord;
  const int w1 = r1 > r0 ? (r1 + kRowsPerMaskWord - 1) / kRowsPerMaskWord : w0; // (a chunk past S: none)
  for (int w = w0 + static_cast<int>(threadIdx.x); w < w1; w += T::kThreads) {
    uint32_t bits = 0;
    if (any_bad)
      for (int r = 0; r < kRowsPerMaskWord && w * kRowsPerMaskWord + r < r1; ++r)
        if (rowHasNonFinite<T>(p, bh, w * kRowsPerMaskWord + r, vec_ok))
          bits |= 1u << r;
    mask[w] = bits;
  }
  if (threadIdx.x == 0) // the sign bit of a partial (never set by a maximum of |x|) marks the chunk
    reinterpret_cast<uint32_t *>(p.amax_partial)[static_cast<int64_t>(bh) * p.amax_chunks + chunk] =
        floatAsBits(m) | (any_bad ? 0x80000000u : 0u);
}

// grid (amax_chunks, batch * heads), block T::kThreads.
template <class C> FA4JIT_DEVICE void amaxPass(const QuantizeParams &p) {
  using T = QuantizeTraits<C>;
  const int chunk = blockIdx.x;
  const int rows_per_chunk = amaxRowsPerChunk(p.seqlen, p.amax_chunks);
  const int64_t first = static_cast<int64_t>(chunk) * rows_per_chunk;
  const int r0 = first < p.seqlen ? static_cast<int>(first) : p.seqlen;
  const int r1 = r0 + rows_per_chunk < p.seqlen ? r0 + rows_per_chunk : p.seqlen;
  amaxOfRows<T>(p, blockIdx.y, r0, r1, chunk);
}

struct HeadAmax {
  float amax;     // max |x| over the head's finite elements
  bool nonfinite; // some element of the head is NaN or Inf
};

// The head's reduction of pass 1's partials; every thread of the CTA must call it.
template <class T> FA4JIT_DEVICE HeadAmax headAmax(const QuantizeParams &p, int bh) {
  const uint32_t *partial =
      reinterpret_cast<const uint32_t *>(p.amax_partial) + static_cast<int64_t>(bh) * p.amax_chunks;
  float m = 0.0f;
  bool bad = false;
  for (int i = threadIdx.x; i < p.amax_chunks; i += T::kThreads) {
    const uint32_t u = __ldcg(partial + i); // (L2: the pipelined pass reads partials of this launch)
    m = fmaxf(m, bitsAsFloat(u & 0x7FFFFFFFu));
    bad |= (u >> 31) != 0;
  }
  const bool any_bad = __syncthreads_or(bad) != 0;
  return {blockMax<T::kThreads>(m), any_bad};
}

// Writes the head's first non-finite row (kNoNonFiniteRow when none) from the row bitmask; one
// CTA per head calls it, with every thread.
template <class T> FA4JIT_DEVICE void writeFirstNonFiniteRow(const QuantizeParams &p, int bh, bool any_bad) {
  __shared__ int first;
  if (threadIdx.x == 0)
    first = kNoNonFiniteRow;
  __syncthreads();
  if (any_bad) {
    const uint32_t *mask = nonfiniteMask(p, bh);
    const int words = static_cast<int>(nonfiniteMaskWords(p.seqlen));
    for (int w = threadIdx.x; w < words; w += T::kThreads)
      if (const uint32_t bits = __ldcg(mask + w); bits != 0u) // (L2, as the partials)
        atomicMin(&first, w * kRowsPerMaskWord + __ffs(static_cast<int>(bits)) - 1);
  }
  __syncthreads();
  if (threadIdx.x == 0)
    firstNonFiniteRow(p)[bh] = first;
}

// Non-finite elements read as 0 in the encode passes (params.cuh); returns whether there was one.
template <int kN> FA4JIT_DEVICE bool zeroNonFinite(float (&v)[kN]) {
  bool any = false;
#pragma unroll
  for (int i = 0; i < kN; ++i) {
    any |= !isFiniteFloat(v[i]);
    v[i] = isFiniteFloat(v[i]) ? v[i] : 0.0f;
  }
  return any;
}

#endif // CUDA compilers

} // namespace fa4jit::device::quantize
