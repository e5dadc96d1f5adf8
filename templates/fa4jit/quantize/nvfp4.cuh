#pragma once
// Pass 2 for Q and K: NVFP4 rows (docs/NUMERICS.md §1), bit-identical to formats::quantizeNvfp4.
// One thread per 16-element block: it owns one UE4M3 scale and 8 payload bytes, so the payload
// store is one 8-byte vector and neighbouring threads write neighbouring bytes of a row. A CTA
// encodes kNvfp4TilesPerCta row tiles of one head, one after the other.
#include "fa4jit/quantize/amax.cuh"

namespace fa4jit::device::quantize {

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)

// The 16 elements of one block as raw 16-byte vectors (two for BF16/FP16, four for FP32): held across
// a tile's encoding in half the registers of the FP32 values.
template <class T> using BlockVectors = uint4[T::kElemBytes];

template <class T, class Reads = PlainReads>
FA4JIT_DEVICE void loadBlockVectors(const QuantizeParams &p, int64_t off, BlockVectors<T> &w, const Reads &read = {}) {
  const uint4 *src = reinterpret_cast<const uint4 *>(reinterpret_cast<const uint8_t *>(p.x) + off * T::kElemBytes);
#pragma unroll
  for (int i = 0; i < T::kElemBytes; ++i)
    w[i] = read(src + i);
}

template <class T> FA4JIT_DEVICE void unpackBlockVectors(const BlockVectors<T> &w, float (&v)[16]) {
#pragma unroll
  for (int i = 0; i < T::kElemBytes; ++i) {
    const uint32_t words[4] = {w[i].x, w[i].y, w[i].z, w[i].w};
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      if constexpr (T::kInputFp32) {
        v[4 * i + j] = bitsAsFloat(words[j]);
      } else {
        wordToFloats<T>(words[j], v[8 * i + 2 * j], v[8 * i + 2 * j + 1]);
      }
    }
  }
}

// NVFP4's per-head global scale g = amax / (6 * 448) in FP32, 1 where that underflows to 0 as on
// the host (docs/NUMERICS.md §1; __fdiv_rn keeps one rounding under --use_fast_math too). E4M3 Q/K
// share it (§1.4).
FA4JIT_DEVICE float nvfp4GlobalScale(float amax) {
  const float g = __fdiv_rn(amax, 448.0f * 6.0f);
  return g > 0.0f ? g : 1.0f;
}

// The E2M1 sign bits of a block's 16 values, as Nvfp4BlockEncoder takes them.
FA4JIT_DEVICE void nvfp4SignsOf(const float (&v)[16], uint32_t (&signs)[2]) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float half[8];
#pragma unroll
    for (int i = 0; i < 8; ++i)
      half[i] = v[8 * h + i];
    signs[h] = e2m1SignsOfFloats8(half);
  }
}

// The same from the block's 16-bit words (BF16/FP16 input), where they still hold the values the
// codes encode (no element zeroed): a quotient by the positive scale has its element's sign.
template <class T> FA4JIT_DEVICE void nvfp4SignsOfWords(const BlockVectors<T> &w, uint32_t (&signs)[2]) {
  static_assert(!T::kInputFp32, "16-bit input only");
#pragma unroll
  for (int h = 0; h < 2; ++h)
    signs[h] = e2m1SignsOfHalves8(w[h].x, w[h].y, w[h].z, w[h].w);
}

// One 16-element block's NVFP4 encoding (docs/NUMERICS.md §1) under the head's global scale: its
// UE4M3 scale and 8 payload bytes. Shared by the two-pass and the cluster encode. Every division
// is §1's, in FP32 with one rounding (__fdiv_rn / __fmul_rn keep that under --use_fast_math too).
struct Nvfp4BlockEncoder {
  float g, six_g, six_g_reciprocal;
  bool scale_by_reciprocal; // (the block scale's quotient by reciprocal, exact there: formats.cuh)
  FA4JIT_DEVICE explicit Nvfp4BlockEncoder(float head_amax)
      : g(nvfp4GlobalScale(head_amax)), six_g(__fmul_rn(6.0f, g)), six_g_reciprocal(__frcp_rn(six_g)),
        scale_by_reciprocal(quotientByReciprocalOk(six_g)) {}
  // The block's scale byte; its codes into `codes` (element 2i in the low nibble of byte i).
  // `signs`: the codes' sign bits, bit 4n + 3 of word n / 8 for element n (a quotient by the
  // positive scale has its element's sign), from the input's 16-bit words where the caller has them.
  FA4JIT_DEVICE uint8_t operator()(const float (&v)[16], const uint32_t (&signs)[2], uint2 &codes) const {
    float amax_b = 0.0f;
#pragma unroll
    for (int i = 0; i < 16; ++i)
      amax_b = fmaxf(amax_b, fabsf(v[i]));
    const float s_quotient = scale_by_reciprocal ? quotientByReciprocal(amax_b, six_g, six_g_reciprocal)
                                                 : __fdiv_rn(amax_b, six_g);
    // (s_quotient is not negative and not NaN: UE4M3 is E4M3's conversion there)
    const uint8_t s = amax_b == 0.0f ? uint8_t(0) : floatToE4M3(s_quotient);
    // s_b * g can underflow to 0 for a subnormal g: such blocks hold code 0, as on the host.
    const float denom = __fmul_rn(e4m3ToFloatNotNan(s), g);
    uint32_t w[2] = {0u, 0u};
    if (quotientByReciprocalOk(denom)) { // (the E2M1 codes of the exact quotients, formats.cuh)
      const float r = __frcp_rn(denom);
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float q[8];
#pragma unroll
        for (int i = 0; i < 8; ++i)
          q[i] = quotientByReciprocal(v[8 * h + i], denom, r);
        w[h] = finiteFloatsToE2M1x8(q, signs[h]);
      }
    } else if (denom != 0.0f) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float q[8];
#pragma unroll
        for (int i = 0; i < 8; ++i)
          q[i] = __fdiv_rn(v[8 * h + i], denom);
        w[h] = finiteFloatsToE2M1x8(q, signs[h]);
      }
    }
    codes = make_uint2(w[0], w[1]);
    return s;
  }
};

// What one thread of a row-major encode (NVFP4, E4M3 rows) reads: its 16-element block `blk` of
// rows first_row, first_row + kRowsPerCta, ... (kNvfp4TilesPerCta of them, row group `group`) of
// head bh.
struct RowBlockWalk {
  int first_row, blk;
  bool vec_ok;
  int64_t head_off, row_stride;
  FA4JIT_DEVICE int64_t offset(int row) const { return head_off + static_cast<int64_t>(row) * row_stride + blk * 16; }
};
template <class T> FA4JIT_DEVICE RowBlockWalk rowBlockWalk(const QuantizeParams &p, int bh, int group) {
  RowBlockWalk w;
  w.first_row = group * rowGroupRows(T::kThreads, T::kHeadDim) + static_cast<int>(threadIdx.x) / T::kBlocksPerRow;
  w.blk = static_cast<int>(threadIdx.x) % T::kBlocksPerRow;
  w.vec_ok = vectorLoadsOk<T>(p);
  w.head_off = headOffset(p, bh);
  w.row_stride = p.x_row_stride;
  return w;
}

// Encodes row group `group` of head bh (rowGroupRows rows of S padded to 128); headOf() returns
// the head's HeadAmax, called by every thread once the group's first loads are in flight. Group 0
// also writes the head's scalar and first non-finite row. Every thread of the CTA calls it; `read`:
// how the aligned input is read.
template <class C, class HeadOf, class Reads = PlainReads>
FA4JIT_DEVICE void nvfp4EncodeGroup(const QuantizeParams &p, int bh, int group, const HeadOf &headOf,
                                    const Reads &read = {}) {
  using T = QuantizeTraits<C>;
  const int padded_rows = (p.seqlen + 127) / 128 * 128;
  const RowBlockWalk walk = rowBlockWalk<T>(p, bh, group);
  const int first_row = walk.first_row, blk = walk.blk;
  const bool vec_ok = walk.vec_ok;
  const auto blockOffset = [=](int row) { return walk.offset(row); };
  // The first tile's values are loaded before the head's maximum is reduced (that reduction waits
  // at CTA barriers, which loads cannot cross): both latencies overlap.
  BlockVectors<T> next{};
  if (vec_ok && first_row < p.seqlen)
    loadBlockVectors<T>(p, blockOffset(first_row), next, read);
  const HeadAmax head = headOf();
  const Nvfp4BlockEncoder encoder(head.amax);
  if (group == 0) { // (before the tiles: nothing of it stays live across them)
    if (threadIdx.x == 0)
      reinterpret_cast<float *>(p.head_scalar)[bh] = encoder.g;
    writeFirstNonFiniteRow<T>(p, bh, head.nonfinite);
  }
  uint8_t *sf = reinterpret_cast<uint8_t *>(p.scales) +
                static_cast<int64_t>(bh) * quantizeScaleBytesPerHead(0, T::kHeadDim, p.seqlen);
  uint8_t *payload = reinterpret_cast<uint8_t *>(p.payload) + static_cast<int64_t>(bh) * p.seqlen * (T::kHeadDim / 2);

  for (int t = 0; t < kNvfp4TilesPerCta; ++t) {
    const int row = first_row + t * T::kRowsPerCta;
    if (row >= padded_rows) // (whole tiles: kRowsPerCta divides 128)
      break;
    float v[16];
    uint32_t signs[2];
    if (vec_ok) {
      unpackBlockVectors<T>(next, v);
      if constexpr (!T::kInputFp32) // (before the next load reuses the words)
        if (!head.nonfinite)
          nvfp4SignsOfWords<T>(next, signs);
      const int following = row + T::kRowsPerCta;
      if (t + 1 < kNvfp4TilesPerCta && following < p.seqlen) // in flight while this tile encodes
        loadBlockVectors<T>(p, blockOffset(following), next, read);
    } else if (row < p.seqlen) {
      loadRun<T, 16>(p, blockOffset(row), false, v);
    }
    const int64_t sf_off = scaleFactorOffsetOf<T::kBlocksPerRow>(uint32_t(row), uint32_t(blk));
    if (row >= p.seqlen) {
      sf[sf_off] = 0; // padding rows of the last 128-row scale atom
      continue;
    }
    if (head.nonfinite) // (uniform over the CTA; the common case skips the test per element)
      zeroNonFinite(v);
    if (T::kInputFp32 || !vec_ok || head.nonfinite) // (a zeroed element's code is +0)
      nvfp4SignsOf(v, signs);
    uint2 codes;
    const uint8_t s = encoder(v, signs, codes);
    *reinterpret_cast<uint2 *>(payload + static_cast<int64_t>(row) * (T::kHeadDim / 2) + blk * 8) = codes;
    sf[sf_off] = s;
  }
}

// grid quantizeEncodeGrid (x over row groups of S padded to 128, y = batch * heads), block
// T::kThreads.
template <class C> FA4JIT_DEVICE void nvfp4EncodePass(const QuantizeParams &p) {
  const int bh = blockIdx.y;
  nvfp4EncodeGroup<C>(p, bh, blockIdx.x, [&] { return headAmax<QuantizeTraits<C>>(p, bh); });
}

#endif // CUDA compilers

} // namespace fa4jit::device::quantize
