#pragma once
// The append kernel: new tokens' K and V rows quantized into their cache pages (params.cuh has the
// layout and the row rule). The code generator emits a struct with exactly these static constexpr
// members and instantiates appendKv with it:
//
//   struct MyConfig {
//     static constexpr int head_dim;      // 64, 128, 256
//     static constexpr int threads;       // CTA size
//     static constexpr int value_format;  // 0: E4M3 V with a row scale, 1: MXFP4 V
//   };
//
// head_dim / 16 lanes per (token, head) row, one 16-element NVFP4 block each: a lane reads 32 bytes of
// K and 32 of V, writes 8 payload bytes and a scale of K and 16 bytes of FP8 V (8 of MXFP4 V, whose
// 32-element block two neighbouring lanes share). The row's maxima are reduced over its lanes with
// shuffles, so the kernel reads each input once and is bound by memory.
#include "fa4jit/common.cuh"
#include "fa4jit/paged/params.cuh"

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
namespace fa4jit::device::paged {

template <class C> struct AppendTraits {
  static constexpr int kHeadDim = C::head_dim;
  static constexpr int kThreads = C::threads;
  static_assert(kHeadDim == 64 || kHeadDim == 128 || kHeadDim == 256, "head_dim must be 64, 128 or 256");
  static_assert(kThreads >= 64 && kThreads <= 512 && (kThreads & (kThreads - 1)) == 0,
                "threads must be a power of two in [64, 512]");
  static constexpr int kLanesPerRow = kHeadDim / 16;
  static constexpr int kRowsPerCta = kThreads / kLanesPerRow;
  static constexpr bool kMxfp4V = C::value_format == 1;
};

FA4JIT_HD constexpr int appendRowsPerCta(int threads, int head_dim) { return threads / (head_dim / 16); }

// 16 BF16 values from 32 bytes.
FA4JIT_DEVICE void loadSixteenBf16(uint64_t address, float (&v)[16]) {
  const uint4 a = *reinterpret_cast<const uint4 *>(address), b = *reinterpret_cast<const uint4 *>(address + 16);
  const uint32_t w[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
#pragma unroll
  for (int i = 0; i < 8; ++i)
    v[2 * i] = bitsAsFloat(w[i] << 16), v[2 * i + 1] = bitsAsFloat(w[i] & 0xFFFF0000u);
}

// The maximum over the row's kLanes lanes (consecutive lanes of one warp).
template <int kLanes> FA4JIT_DEVICE float rowMax(float x) {
#pragma unroll
  for (int offset = kLanes / 2; offset > 0; offset /= 2)
    x = fmaxf(x, __shfl_xor_sync(0xFFFFFFFFu, x, offset));
  return x;
}
template <int kLanes> FA4JIT_DEVICE bool rowAny(bool x) {
  uint32_t v = x ? 1u : 0u;
#pragma unroll
  for (int offset = kLanes / 2; offset > 0; offset /= 2)
    v |= __shfl_xor_sync(0xFFFFFFFFu, v, offset);
  return v != 0u;
}

// Zeroes the non-finite values; whether there was one.
FA4JIT_DEVICE bool zeroNonFiniteValues(float (&v)[16]) {
  bool bad = false;
#pragma unroll
  for (int i = 0; i < 16; ++i)
    if (!isFiniteValue(v[i])) {
      bad = true;
      v[i] = 0.0f;
    }
  return bad;
}

// grid ceil(tokens * kv_heads / kRowsPerCta), block kThreads. Rows of skipped tokens (negative slot)
// and slots past the cache write nothing.
template <class C> FA4JIT_DEVICE void appendKv(const AppendParams &p) {
  using T = AppendTraits<C>;
  constexpr int kLanes = T::kLanesPerRow;
  const int lane = static_cast<int>(threadIdx.x) % kLanes;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * T::kRowsPerCta + threadIdx.x / kLanes;
  const int heads = p.cache.kv_heads;
  const bool in_range = row < static_cast<int64_t>(p.tokens) * heads;
  const int64_t token = in_range ? row / heads : 0;
  const int head = in_range ? static_cast<int>(row % heads) : 0;
  const int64_t slot = in_range ? reinterpret_cast<const int64_t *>(p.slot_mapping)[token] : -1;
  const int64_t capacity = static_cast<int64_t>(p.cache.pages) * p.cache.page_size;
  // (whole rows agree on `active`, and a row's lanes are consecutive lanes of one warp, so the
  // shuffles below run with every lane of the warp present)
  const bool active = slot >= 0 && slot < capacity;
  float k[16], v[16];
  if (active) {
    loadSixteenBf16(p.k + (token * p.k_token_stride + head * p.k_head_stride + lane * 16) * 2, k);
    loadSixteenBf16(p.v + (token * p.v_token_stride + head * p.v_head_stride + lane * 16) * 2, v);
  } else {
#pragma unroll
    for (int i = 0; i < 16; ++i)
      k[i] = v[i] = 0.0f;
  }
  const bool k_bad = rowAny<kLanes>(zeroNonFiniteValues(k)), v_bad = rowAny<kLanes>(zeroNonFiniteValues(v));
  float k_amax_b = 0.0f, v_amax = 0.0f;
#pragma unroll
  for (int i = 0; i < 16; ++i)
    k_amax_b = fmaxf(k_amax_b, fabsf(k[i])), v_amax = fmaxf(v_amax, fabsf(v[i]));
  const float g = kRowScale(rowMax<kLanes>(k_amax_b));
  const float s_v = vRowScale(rowMax<kLanes>(v_amax));
  const float v_amax_mx = fmaxf(v_amax, __shfl_xor_sync(0xFFFFFFFFu, v_amax, 1)); // (MXFP4: the lane pair's block)
  if (!active)
    return;
  const uint8_t s = kBlockScale(k_amax_b, g);
  uint8_t k_codes[8];
  encodeKBlock<16>(k, s, g, k_codes);
  uint32_t v_words[4] = {0u, 0u, 0u, 0u};
  const int v_exponent = quantize::mxBlockExponent(v_amax_mx);
  if constexpr (T::kMxfp4V) {
    const float inverse = exp2Int(-v_exponent); // (exact: the codes see x 2^-E unrounded)
#pragma unroll
    for (int i = 0; i < 8; ++i)
      v_words[i / 4] |= static_cast<uint32_t>(encodeVMxPair(v[2 * i], v[2 * i + 1], inverse)) << (8 * (i % 4));
  } else {
    const bool v_reciprocal = quotientByReciprocalOk(s_v);
    const float v_r = v_reciprocal ? __frcp_rn(s_v) : 0.0f;
#pragma unroll
    for (int w = 0; w < 4; ++w)
      v_words[w] = static_cast<uint32_t>(encodeV(v[4 * w], s_v, v_r, v_reciprocal)) |
                   static_cast<uint32_t>(encodeV(v[4 * w + 1], s_v, v_r, v_reciprocal)) << 8 |
                   static_cast<uint32_t>(encodeV(v[4 * w + 2], s_v, v_r, v_reciprocal)) << 16 |
                   static_cast<uint32_t>(encodeV(v[4 * w + 3], s_v, v_r, v_reciprocal)) << 24;
  }
  const PagedCacheView &c = p.cache;
  const int64_t cache_row = cacheRowIndex(c, slot / c.page_size, head, static_cast<int>(slot % c.page_size));
  uint32_t kw[2] = {0u, 0u};
#pragma unroll
  for (int i = 0; i < 8; ++i)
    kw[i / 4] |= static_cast<uint32_t>(k_codes[i]) << (8 * (i % 4));
  if (k_bad)
    kw[0] = kw[1] = 0u;
  if (v_bad)
#pragma unroll
    for (int w = 0; w < 4; ++w)
      v_words[w] = 0u;
  const float nan = bitsAsFloat(0x7FC00000u);
  *reinterpret_cast<uint2 *>(c.k_codes + cache_row * (T::kHeadDim / 2) + lane * 8) = make_uint2(kw[0], kw[1]);
  reinterpret_cast<uint8_t *>(c.k_block_scales)[cache_row * (T::kHeadDim / 16) + lane] = k_bad ? uint8_t(0) : s;
  if constexpr (T::kMxfp4V) {
    *reinterpret_cast<uint2 *>(c.v_codes + cache_row * (T::kHeadDim / 2) + lane * 8) = make_uint2(v_words[0], v_words[1]);
    if (lane % 2 == 0)
      reinterpret_cast<uint8_t *>(c.v_block_scales)[cache_row * (T::kHeadDim / 32) + lane / 2] =
          v_bad ? kMxNaNScale : exponentToUE8M0(v_exponent);
  } else {
    *reinterpret_cast<uint4 *>(c.v_codes + cache_row * T::kHeadDim + lane * 16) =
        make_uint4(v_words[0], v_words[1], v_words[2], v_words[3]);
  }
  if (lane == 0) {
    reinterpret_cast<float *>(c.k_row_scales)[cache_row] = k_bad ? nan : g;
    if constexpr (!T::kMxfp4V)
      reinterpret_cast<float *>(c.v_row_scales)[cache_row] = v_bad ? nan : s_v;
  }
}

} // namespace fa4jit::device::paged
#endif
