#pragma once
// The registers of one S tile, in one of two forms (TileSpec / OperandSpec::scores_fp16,
// NUMERICS.md §2.1):
//   FP32 accumulators s[nt][4], mma.cuh's m16n8 layout: (lane, nt, i) -> (row g + 8*(i/2),
//   column 8 nt + 2 q + i % 2);
//   FP16 pairs s[nt][2] (the directp wgmma kernel's QK^T with FP16 accumulators): register r
//   holds row g + 8 r, its column 8 nt + 2 q in the low half and 8 nt + 2 q + 1 in the high one.
// Columns are tile keys through tileKey (scores.cuh). The helpers here let the code that reads S
// once per tile (the sampled anchor, the leave-one-out variants) take either form.
#include "fa4jit/attention/config.cuh"
#include "fa4jit/attention/half2.cuh"

namespace fa4jit::device::attention {

// C::scores_fp16 where the config has it (the wgmma kernels' configs bake it), else false.
template <class C> struct ScoresFp16Of {
  template <class X> FA4JIT_HD static constexpr bool get(decltype(&X::scores_fp16)) { return X::scores_fp16; }
  template <class X> FA4JIT_HD static constexpr bool get(...) { return false; }
  static constexpr bool value = get<C>(nullptr);
};

template <bool kCond, class A, class B> struct SelectType {
  using type = A;
};
template <class A, class B> struct SelectType<false, A, B> {
  using type = B;
};

template <class C> struct ScoreTile {
  static constexpr bool kFp16 = ScoresFp16Of<C>::value;
  static constexpr int kTiles = AttentionTraits<C>::kSTiles;
  static constexpr int kRegs = kFp16 ? 2 : 4; // per n8 tile
  using Elem = typename SelectType<kFp16, uint32_t, float>::type;
  using Regs = Elem[kTiles][kRegs];
};
template <class C> using ScoreRegs = typename ScoreTile<C>::Regs;

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
// Row r's value in column 8 nt + 2 q + e, as FP32 (an FP16 value converts exactly).
template <int kTiles> FA4JIT_DEVICE float scoreValue(const float (&s)[kTiles][4], int nt, int r, int e) {
  return s[nt][2 * r + e];
}
template <int kTiles> FA4JIT_DEVICE float scoreValue(const uint32_t (&s)[kTiles][2], int nt, int r, int e) {
  return e == 0 ? halfLowToFloat(s[nt][r]) : halfHighToFloat(s[nt][r]);
}

// The bits of register i of the tile (i < kTiles * kRegs, tile-major), for the leave-one-out
// variants that feed S's registers on as if they were P.
template <int kTiles> FA4JIT_DEVICE uint32_t scoreBits(const float (&s)[kTiles][4], int i) {
  return __float_as_uint(s[i % kTiles][(i / kTiles) % 4]);
}
template <int kTiles> FA4JIT_DEVICE uint32_t scoreBits(const uint32_t (&s)[kTiles][2], int i) {
  return s[i % kTiles][(i / kTiles) % 2];
}

template <int kTiles> FA4JIT_DEVICE void clearScores(float (&s)[kTiles][4]) {
#pragma unroll
  for (int j = 0; j < kTiles; ++j)
    s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.0f;
}
template <int kTiles> FA4JIT_DEVICE void clearScores(uint32_t (&s)[kTiles][2]) {
#pragma unroll
  for (int j = 0; j < kTiles; ++j)
    s[j][0] = s[j][1] = 0u;
}
#endif

} // namespace fa4jit::device::attention
