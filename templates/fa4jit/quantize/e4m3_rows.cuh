#pragma once
// Pass 2 for E4M3 Q/K (docs/NUMERICS.md §1.4), bit-identical to formats::quantizeE4m3Rows: code
// E4M3(x / d) with d = g * 2^code_shift and g NVFP4's per-head global scale, so that the codes are
// the tile image the wgmma kernel's E4M3 widening of NVFP4 would write, rounded once from x. The
// walk is nvfp4EncodePass's: one thread per 16 elements (one 16-byte store), kNvfp4TilesPerCta
// row tiles per CTA with the next tile's loads in flight.
#include "fa4jit/quantize/nvfp4.cuh"

namespace fa4jit::device::quantize {

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)

// One 16-element block's E4M3 codes under the head's global scale. Shared by the two-pass and the
// cluster encode.
template <int kCodeShift> struct E4m3RowEncoder {
  float g, d, r, cap;
  bool by_reciprocal;
  // g exactly as NVFP4's, then d = g * 2^shift (exact: g <= FLT_MAX / 2688).
  FA4JIT_DEVICE explicit E4m3RowEncoder(float head_amax)
      : g(nvfp4GlobalScale(head_amax)), d(__fmul_rn(g, exp2Int(kCodeShift))), r(__frcp_rn(d)),
        // Quotients are capped at 17/16 of the nominal largest, 6 * 448 * 2^-shift: only a
        // subnormal g reaches the cap, and the codes stay within FP16 scores' bound (NUMERICS.md
        // §1.4).
        cap(__fmul_rn(exp2Int(-kCodeShift), 2856.0f)),
        by_reciprocal(quotientByReciprocalOk(d)) {} // (the E4M3 codes of the exact quotients, formats.cuh)
  // The block's 16 codes, element i in byte i; v is overwritten.
  FA4JIT_DEVICE uint4 operator()(float (&v)[16]) const {
    if (by_reciprocal) { // (one branch around each loop: a select per element spilled on sm_100a)
#pragma unroll
      for (int i = 0; i < 16; ++i)
        v[i] = quotientByReciprocal(v[i], d, r);
    } else {
#pragma unroll
      for (int i = 0; i < 16; ++i)
        v[i] = __fdiv_rn(v[i], d);
    }
#pragma unroll
    for (int i = 0; i < 16; ++i)
      v[i] = fminf(fmaxf(v[i], -cap), cap);
    uint32_t w[4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
      w[i] = static_cast<uint32_t>(floatsToE4M3x2(v[4 * i], v[4 * i + 1])) |
             (static_cast<uint32_t>(floatsToE4M3x2(v[4 * i + 2], v[4 * i + 3])) << 16);
    return make_uint4(w[0], w[1], w[2], w[3]);
  }
};

// Encodes row group `group` of head bh, as nvfp4EncodeGroup.
template <class C, class HeadOf, class Reads = PlainReads>
FA4JIT_DEVICE void e4m3RowsEncodeGroup(const QuantizeParams &p, int bh, int group, const HeadOf &headOf,
                                       const Reads &read = {}) {
  using T = QuantizeTraits<C>;
  const RowBlockWalk walk = rowBlockWalk<T>(p, bh, group);
  const int first_row = walk.first_row, blk = walk.blk;
  const bool vec_ok = walk.vec_ok;
  const auto blockOffset = [=](int row) { return walk.offset(row); };
  BlockVectors<T> next{};
  if (vec_ok && first_row < p.seqlen)
    loadBlockVectors<T>(p, blockOffset(first_row), next, read);
  const HeadAmax head = headOf();
  const E4m3RowEncoder<T::kCodeShift> encoder(head.amax);
  if (group == 0) { // (before the tiles: nothing of it stays live across them)
    if (threadIdx.x == 0)
      reinterpret_cast<float *>(p.head_scalar)[bh] = encoder.g;
    writeFirstNonFiniteRow<T>(p, bh, head.nonfinite);
  }
  uint8_t *payload = reinterpret_cast<uint8_t *>(p.payload) + static_cast<int64_t>(bh) * p.seqlen * T::kHeadDim;

  for (int t = 0; t < kNvfp4TilesPerCta; ++t) {
    const int row = first_row + t * T::kRowsPerCta;
    if (row >= p.seqlen)
      break;
    float v[16];
    if (vec_ok) {
      unpackBlockVectors<T>(next, v);
      const int following = row + T::kRowsPerCta;
      if (t + 1 < kNvfp4TilesPerCta && following < p.seqlen) // in flight while this tile encodes
        loadBlockVectors<T>(p, blockOffset(following), next, read);
    } else {
      loadRun<T, 16>(p, blockOffset(row), false, v);
    }
    if (head.nonfinite) // (uniform over the CTA; the common case skips the test per element)
      zeroNonFinite(v);
    *reinterpret_cast<uint4 *>(payload + static_cast<int64_t>(row) * T::kHeadDim + blk * 16) = encoder(v);
  }
}

// grid quantizeEncodeGrid (x over row groups of S padded to 128, y = batch * heads), block
// T::kThreads.
template <class C> FA4JIT_DEVICE void e4m3RowsEncodePass(const QuantizeParams &p) {
  const int bh = blockIdx.y;
  e4m3RowsEncodeGroup<C>(p, bh, blockIdx.x, [&] { return headAmax<QuantizeTraits<C>>(p, bh); });
}

#endif // CUDA compilers

} // namespace fa4jit::device::quantize
