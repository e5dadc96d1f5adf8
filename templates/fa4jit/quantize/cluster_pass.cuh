#pragma once
// The one-pass quantizer of the formats whose codes need the head's maximum before any is written:
// NVFP4 and E4M3 rows (the global scale g) and FP8 V^T (s_v). One cluster of CTAs per head: each
// CTA copies a slice of whole 128-row tiles of x into shared memory (x is read once), reduces the
// slice's max |x| and non-finite rows, the CTAs exchange those through the cluster's shared window,
// and each encodes its slice from shared memory, bit-identical to the two passes.
//   <name>_cluster  grid (ctas, batch * heads), cluster (ctas, 1, 1), block T::kThreads, dynamic
//                   shared memory quantizeClusterSliceBytes(seqlen, head_dim, element bytes, ctas);
//                   x must allow 16-byte vector loads (vectorLoadsOk), which the engine checks
//                   before it chooses this pass. amax_chunks and amax_partial are unused.
// Clusters exist from sm_90 on; the generator emits this entry point there only.
#include "fa4jit/cluster.cuh"
#include "fa4jit/quantize/e4m3_rows.cuh"
#include "fa4jit/quantize/nvfp4.cuh"
#include "fa4jit/quantize/vt_fp8.cuh"

namespace fa4jit::device::quantize {

#if (defined(__CUDACC__) || defined(__CUDACC_RTC__)) && (!defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900)

template <class T> constexpr int kVectorsPerRow = T::kHeadDim / T::kVec;

// Copies rows [first, end) of head bh into the slice (row r at slice row r - first) with 16-byte
// asynchronous copies and waits for the CTA. For V^T it zeroes the slice's rows from end - first to
// `rows`: keys past S then read as 0, which is what V^T's padding keys encode to (the row-major
// encodes discard what they read of rows past S).
template <class T>
FA4JIT_DEVICE void stageSlice(const QuantizeParams &p, int bh, int first, int end, int rows, uint4 *slice) {
  const uint8_t *x = reinterpret_cast<const uint8_t *>(p.x);
  const int64_t head = headOffset(p, bh);
  const uint32_t base = static_cast<uint32_t>(__cvta_generic_to_shared(slice));
  const int n = (end - first) * kVectorsPerRow<T>;
  for (int i = threadIdx.x; i < n; i += T::kThreads) {
    const int row = first + i / kVectorsPerRow<T>;
    const int col = (i % kVectorsPerRow<T>) * T::kVec;
    const uint8_t *src = x + (head + static_cast<int64_t>(row) * p.x_row_stride + col) * T::kElemBytes;
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(base + 16u * static_cast<uint32_t>(i)), "l"(src)
                 : "memory");
  }
  asm volatile("cp.async.commit_group;\n" ::: "memory");
  if constexpr (!T::kRowMajor)
    for (int i = n + static_cast<int>(threadIdx.x); i < rows * kVectorsPerRow<T>; i += T::kThreads)
      slice[i] = make_uint4(0u, 0u, 0u, 0u);
  asm volatile("cp.async.wait_group 0;\n" ::: "memory");
  __syncthreads();
}

// The slice's element (row, col) as FP32.
template <class T> FA4JIT_DEVICE float stagedElement(const uint4 *slice, int row, int col) {
  if constexpr (T::kInputFp32)
    return reinterpret_cast<const float *>(slice)[row * T::kHeadDim + col];
  else
    return elementToFloat<T>(reinterpret_cast<const uint16_t *>(slice)[row * T::kHeadDim + col]);
}

template <class T> FA4JIT_DEVICE bool stagedRowHasNonFinite(const uint4 *slice, int row) {
  bool bad = false;
  for (int c = 0; c < T::kHeadDim; ++c)
    bad |= !isFiniteFloat(stagedElement<T>(slice, row, c));
  return bad;
}

// Max |x| over the finite elements of the slice's first `n` vectors, and whether one is NaN or Inf;
// every thread gets both. BF16 and FP16 reduce their bit patterns as the amax pass does
// (chunkAmaxBf16Bits) and go element by element only where a NaN or Inf shows.
template <class T> FA4JIT_DEVICE void sliceAmax(const uint4 *slice, int n, float &m, bool &bad) {
  m = 0.0f;
  bad = false;
  if constexpr (!T::kInputFp32) {
    uint32_t m2 = 0u;
    for (int i = threadIdx.x; i < n; i += T::kThreads) {
      const uint4 w = slice[i];
      m2 = maxU16x2(maxU16x2(m2, maxU16x2(w.x & 0x7FFF7FFFu, w.y & 0x7FFF7FFFu)),
                    maxU16x2(w.z & 0x7FFF7FFFu, w.w & 0x7FFF7FFFu));
    }
    const uint32_t bits = (m2 & 0xFFFFu) > (m2 >> 16) ? (m2 & 0xFFFFu) : (m2 >> 16);
    m = elementToFloat<T>(static_cast<uint16_t>(bits));
    bad = bits >= T::kInfBits16;
  }
  if (T::kInputFp32 || __syncthreads_or(bad) != 0) {
    m = 0.0f;
    bad = false;
    for (int i = threadIdx.x; i < n * T::kVec; i += T::kThreads) {
      const float a = fabsf(stagedElement<T>(slice, i / T::kHeadDim, i % T::kHeadDim));
      if (a <= 3.402823466e38f) // finite (NaN compares false)
        m = fmaxf(m, a);
      else
        bad = true;
    }
  }
  bad = __syncthreads_or(bad) != 0;
  m = blockMax<T::kThreads>(m);
}

struct ClusterHead {
  float amax;      // max |x| over the head's finite elements
  bool nonfinite;  // some element of the head is NaN or Inf
  int first_row;   // the head's first row holding one (kNoNonFiniteRow: none)
};

// The head's maximum and first non-finite row from every CTA's slice result; every thread of every
// CTA of the cluster calls it. Warp 0 reads one CTA's record per lane through the cluster's
// shared window (so a cluster holds at most 32 CTAs; the engine launches up to 16). Ends with this
// CTA's arrival at the cluster barrier that clusterWait completes.
FA4JIT_DEVICE ClusterHead exchangeSliceResults(float m, bool bad, int first_row, int ctas) {
  __shared__ uint32_t record[2]; // this CTA's max |x| bits (sign bit: a NaN or Inf), first such row
  __shared__ ClusterHead head;
  if (threadIdx.x == 0) {
    record[0] = floatAsBits(m) | (bad ? 0x80000000u : 0u);
    record[1] = static_cast<uint32_t>(first_row);
  }
  clusterSync();
  if (threadIdx.x < 32) {
    const uint32_t at = static_cast<uint32_t>(__cvta_generic_to_shared(record));
    const int lane = static_cast<int>(threadIdx.x);
    uint32_t word = 0u;
    int row = kNoNonFiniteRow;
    if (lane < ctas) {
      word = loadSharedOfCta(at, lane);
      if ((word >> 31) != 0u)
        row = static_cast<int>(loadSharedOfCta(at + 4u, lane));
    }
    float a = bitsAsFloat(word & 0x7FFFFFFFu);
    bool any = (word >> 31) != 0u;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      a = fmaxf(a, __shfl_xor_sync(0xFFFFFFFFu, a, o));
      const int r = __shfl_xor_sync(0xFFFFFFFFu, row, o);
      row = r < row ? r : row;
    }
    any = __any_sync(0xFFFFFFFFu, any);
    if (lane == 0)
      head = {a, any, row};
  }
  clusterArrive();
  __syncthreads();
  return head;
}

// The per-block encoder of a row-major format.
template <class T, bool kNvfp4 = T::kFormat == Format::Nvfp4> struct RowEncoderOf {
  using type = Nvfp4BlockEncoder;
};
template <class T> struct RowEncoderOf<T, false> {
  using type = E4m3RowEncoder<T::kCodeShift>;
};

template <class C> FA4JIT_DEVICE void clusterPass(const QuantizeParams &p) {
  using T = QuantizeTraits<C>;
  static_assert(T::kFormat != Format::Mxfp4, "MXFP4 V^T runs in one pass without a cluster (vt_mxfp4.cuh)");
  extern __shared__ uint4 slice[];
  __shared__ int slice_first_bad;
  const int ctas = clusterCtaCount();
  const int bh = blockIdx.y;
  const int rows = quantizeClusterRowsPerCta(p.seqlen, ctas);
  const int first = clusterCtaRank() * rows; // (a multiple of 128: whole words of the row bitmask)
  const int end = first < p.seqlen ? (first + rows < p.seqlen ? first + rows : p.seqlen) : first;
  stageSlice<T>(p, bh, first, end, rows, slice);

  float m;
  bool bad;
  sliceAmax<T>(slice, (end - first) * kVectorsPerRow<T>, m, bad);
  // The slice's words of the row bitmask: zeros, unless a row held a NaN or Inf.
  if (threadIdx.x == 0)
    slice_first_bad = kNoNonFiniteRow;
  __syncthreads();
  uint32_t *mask = nonfiniteMask(p, bh);
  const int words_end = (end + kRowsPerMaskWord - 1) / kRowsPerMaskWord;
  for (int w = first / kRowsPerMaskWord + static_cast<int>(threadIdx.x); w < words_end; w += T::kThreads) {
    uint32_t bits = 0u;
    if (bad)
      for (int r = 0; r < kRowsPerMaskWord && w * kRowsPerMaskWord + r < end; ++r)
        if (stagedRowHasNonFinite<T>(slice, w * kRowsPerMaskWord + r - first))
          bits |= 1u << r;
    mask[w] = bits;
    if (bits != 0u)
      atomicMin(&slice_first_bad, w * kRowsPerMaskWord + __ffs(static_cast<int>(bits)) - 1);
  }
  __syncthreads();
  const ClusterHead head = exchangeSliceResults(m, bad, slice_first_bad, ctas);

  if constexpr (T::kRowMajor) {
    // One thread per 16-element block, kRowsPerCta rows at a time; NVFP4 also writes the scale
    // bytes of the last 128-row atom's padding rows (0).
    const typename RowEncoderOf<T>::type encoder(head.amax);
    if (clusterCtaRank() == 0 && threadIdx.x == 0) {
      reinterpret_cast<float *>(p.head_scalar)[bh] = encoder.g;
      firstNonFiniteRow(p)[bh] = head.first_row;
    }
    const int padded_rows = (p.seqlen + 127) / 128 * 128;
    const int encode_end = first + rows < padded_rows ? first + rows : padded_rows;
    const int blk = static_cast<int>(threadIdx.x) % T::kBlocksPerRow;
    constexpr int kVectorsPerBlock = 16 / T::kVec;
    for (int row = first + static_cast<int>(threadIdx.x) / T::kBlocksPerRow; row < encode_end; row += T::kRowsPerCta) {
      BlockVectors<T> w;
#pragma unroll
      for (int i = 0; i < kVectorsPerBlock; ++i)
        w[i] = slice[(row - first) * kVectorsPerRow<T> + blk * kVectorsPerBlock + i];
      float v[16];
      unpackBlockVectors<T>(w, v);
      if (head.nonfinite) // (uniform over the cluster; the common case skips the test per element)
        zeroNonFinite(v);
      if constexpr (T::kFormat == Format::Nvfp4) {
        uint8_t *sf = reinterpret_cast<uint8_t *>(p.scales) +
                      static_cast<int64_t>(bh) * quantizeScaleBytesPerHead(0, T::kHeadDim, p.seqlen);
        const int64_t sf_off = scaleFactorOffsetOf<T::kBlocksPerRow>(uint32_t(row), uint32_t(blk));
        if (row >= p.seqlen) {
          sf[sf_off] = 0;
          continue;
        }
        uint32_t signs[2];
        if constexpr (!T::kInputFp32) // (from the 16-bit words where none was zeroed)
          if (!head.nonfinite)
            nvfp4SignsOfWords<T>(w, signs);
        if (T::kInputFp32 || head.nonfinite)
          nvfp4SignsOf(v, signs);
        uint2 codes;
        sf[sf_off] = encoder(v, signs, codes);
        *reinterpret_cast<uint2 *>(reinterpret_cast<uint8_t *>(p.payload) +
                                   (static_cast<int64_t>(bh) * p.seqlen + row) * (T::kHeadDim / 2) + blk * 8) = codes;
      } else {
        if (row >= p.seqlen)
          break;
        *reinterpret_cast<uint4 *>(reinterpret_cast<uint8_t *>(p.payload) +
                                   (static_cast<int64_t>(bh) * p.seqlen + row) * T::kHeadDim + blk * 16) = encoder(v);
      }
    }
  } else {
    // FP8 V^T: one thread per (head-dim row, 32-key block), kDims rows x 128 keys at a time; the
    // slice's padding keys are staged as 0.
    const Fp8VtEncoder<T> encoder(head.amax);
    if (clusterCtaRank() == 0 && threadIdx.x == 0) {
      reinterpret_cast<float *>(p.head_scalar)[bh] = encoder.s_v;
      firstNonFiniteRow(p)[bh] = head.first_row;
    }
    const int64_t skp = quantizePaddedKeys(p.seqlen);
    const int encode_end = first + rows < skp ? first + rows : static_cast<int>(skp);
    const int blk = static_cast<int>(threadIdx.x) / T::kDims;
    for (int d = static_cast<int>(threadIdx.x) % T::kDims; d < T::kHeadDim; d += T::kDims)
      for (int k0 = first; k0 < encode_end; k0 += kVtKeyTile) {
        float v[32];
#pragma unroll
        for (int pos = 0; pos < 32; ++pos)
          v[pos] = stagedElement<T>(slice, k0 - first + blk * 32 + vtKeyAt(pos, T::kPermuted), d);
        if (head.nonfinite)
          zeroNonFinite(v);
        encoder(v, p, bh, d, k0 + blk * 32);
      }
  }
  clusterWait();
}

#endif // CUDA compilers, sm_90 and later

} // namespace fa4jit::device::quantize
