#pragma once
// MXFP4 V^T for the directp route (docs/NUMERICS.md §1), bit-identical to formats::quantizeMxfp4
// applied to one head's V^T with padded_cols = Skp, plus the per-head v_shift of §2.3. The codes
// and scales depend on each 32-key block alone, so this pass needs the amax pass only for v_shift
// and the non-finite rows, which it can also finish itself (one-pass mode, params.cuh).
#include "fa4jit/quantize/vt.cuh"

namespace fa4jit::device::quantize {

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)

// One-pass mode (p.sync != 0): every CTA adds its max |x| and non-finite flag to its head's words
// in `sync` and counts itself ended; the last CTA of the head (it sees all the others' words)
// writes v_shift, the row bitmask and the first non-finite row, and clears the words for the next
// launch. No CTA waits for another. With a NaN or Inf in the head, that CTA finds the rows by
// reading the head again (the rare slow path). Every thread calls it.
template <class T>
FA4JIT_DEVICE void finishMxfp4Head(const QuantizeParams &p, int bh, float cta_amax, bool nonfinite) {
  __shared__ uint32_t head_words[2];
  __shared__ bool last;
  const float m = blockMax<T::kThreads>(cta_amax);
  const bool any_bad = __syncthreads_or(nonfinite) != 0;
  if (threadIdx.x == 0) {
    uint32_t *words = reinterpret_cast<uint32_t *>(p.sync) + static_cast<int64_t>(bh) * kSyncWordsPerHead;
    uint32_t *ended = words, *max_bits = words + 1, *flag = words + 2;
    atomicMax(max_bits, floatAsBits(m));
    if (any_bad)
      atomicOr(flag, 1u);
    __threadfence();
    last = atomicAdd(ended, 1u) == gridDim.x * gridDim.y - 1u;
    if (last) {
      __threadfence();
      head_words[0] = atomicExch(max_bits, 0u);
      head_words[1] = atomicExch(flag, 0u);
      *ended = 0u;
    }
  }
  __syncthreads();
  if (!last)
    return;
  if (threadIdx.x == 0)
    reinterpret_cast<int32_t *>(p.head_scalar)[bh] = mxBlockExponent(bitsAsFloat(head_words[0])) - 6;
  const bool head_bad = head_words[1] != 0u;
  const bool vec_ok = vectorLoadsOk<T>(p);
  uint32_t *mask = nonfiniteMask(p, bh);
  const int words = static_cast<int>(nonfiniteMaskWords(p.seqlen));
  for (int w = threadIdx.x; w < words; w += T::kThreads) {
    uint32_t bits = 0;
    if (head_bad)
      for (int r = 0; r < kRowsPerMaskWord && w * kRowsPerMaskWord + r < p.seqlen; ++r)
        if (rowHasNonFinite<T>(p, bh, w * kRowsPerMaskWord + r, vec_ok))
          bits |= 1u << r;
    mask[w] = bits;
  }
  writeFirstNonFiniteRow<T>(p, bh, head_bad);
}

// grid quantizeEncodeGrid (x over groups of kVtTilesPerCta key tiles, y over head-dim tiles,
// z = batch * heads), block T::kThreads. After the amax pass (p.sync == 0), or alone
// (finishMxfp4Head).
template <class C> FA4JIT_DEVICE void vtMxfp4EncodePass(const QuantizeParams &p) {
  using T = QuantizeTraits<C>;
  __shared__ float tile[T::kDims][T::kTilePitch];
  const int bh = blockIdx.z;
  const int d0 = blockIdx.y * T::kDims;
  const int64_t skp = quantizePaddedKeys(p.seqlen);
  const int scale_cols = static_cast<int>(skp / 32);
  const int first_k = blockIdx.x * kVtTilesPerCta * kVtKeyTile;
  const bool vec_ok = vectorLoadsOk<T>(p);
  const bool one_pass = p.sync != 0;
  uint8_t *sf = reinterpret_cast<uint8_t *>(p.scales) +
                static_cast<int64_t>(bh) * quantizeScaleBytesPerHead(1, T::kHeadDim, p.seqlen);

  VtTileVectors<T> next{};
  if (vec_ok) // (before the head reduction: latencies overlap)
    loadVtTileVectors<T>(p, bh, first_k, d0, next);
  // v_shift = (largest block exponent of the head) - 6 = mxBlockExponent(head amax) - 6, since
  // floor and the clamp are monotone: the largest block of V^T then widens to E4M3 exactly.
  if (!one_pass && blockIdx.x == 0 && blockIdx.y == 0) {
    const HeadAmax head = headAmax<T>(p, bh);
    if (threadIdx.x == 0)
      reinterpret_cast<int32_t *>(p.head_scalar)[bh] = mxBlockExponent(head.amax) - 6;
    writeFirstNonFiniteRow<T>(p, bh, head.nonfinite);
  }
  const int d = d0 + static_cast<int>(threadIdx.x) % T::kDims;
  const int blk = static_cast<int>(threadIdx.x) / T::kDims;
  uint8_t *payload_row = reinterpret_cast<uint8_t *>(p.payload) + (static_cast<int64_t>(bh) * T::kHeadDim + d) * (skp / 2);
  float cta_amax = 0.0f; // (the largest block maximum: the head's, once every CTA's is in)
  bool nonfinite = false;
  forEachVtTile<T>(p, bh, first_k, d0, vec_ok, next, tile, nonfinite, [&](int k0, float (&v)[32]) {
    float amax_b = 0.0f;
#pragma unroll
    for (int i = 0; i < 32; ++i)
      amax_b = fmaxf(amax_b, fabsf(v[i]));
    cta_amax = fmaxf(cta_amax, amax_b);
    const int e = mxBlockExponent(amax_b);
    const float inv = exp2Int(-e); // exact power of two: the codes see x * 2^-e unrounded
    uint32_t w[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      float x[8];
#pragma unroll
      for (int i = 0; i < 8; ++i)
        x[i] = __fmul_rn(v[8 * j + i], inv);
      w[j] = finiteFloatsToE2M1x8(x);
    }
    *reinterpret_cast<uint4 *>(payload_row + (k0 + blk * 32) / 2) = make_uint4(w[0], w[1], w[2], w[3]);
    sf[scaleFactorOffset(d, k0 / 32 + blk, scale_cols)] = exponentToUE8M0(e);
    zeroVtScalePadding<T>(sf, k0, scale_cols);
  });
  if (one_pass)
    finishMxfp4Head<T>(p, bh, cta_amax, nonfinite);
}

#endif // CUDA compilers

} // namespace fa4jit::device::quantize
