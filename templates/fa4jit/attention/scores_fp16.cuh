#pragma once
// The per-tile passes over FP16 scores (score_tile.cuh's s[nt][2], scores_fp16): the mask and the
// row and block maxima, two keys per instruction. A maximum of FP16 values is an FP16 value,
// exact in FP32, so what leaves here is what the FP32 passes of scores.cuh and softmax.cuh give
// for the same accumulators.
#include "fa4jit/attention/config.cuh"
#include "fa4jit/attention/half2.cuh"
#include "fa4jit/attention/scores.cuh"
#include "fa4jit/formats.cuh"

namespace fa4jit::device::attention {

constexpr uint32_t kHalfNegInf = 0xfc00u;

FA4JIT_DEVICE uint32_t half2MaxBits(uint32_t a, uint32_t b) { return half2Max(Half2{a}, Half2{b}).u; }

// Keys at or beyond a row's visible count get -inf (as maskScores): each half of a pair apart.
template <class C>
FA4JIT_DEVICE void maskScores(uint32_t (&s)[AttentionTraits<C>::kSTiles][2], const int (&vis)[2], int key0, int lane) {
  using T = AttentionTraits<C>;
  const int q = lane % 4;
#pragma unroll
  for (int nt = 0; nt < T::kSTiles; ++nt) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      // (in place, one half at a time: the masked arm holds no more registers than S itself)
      if (key0 + tileKey<C>(nt, q, 0) >= vis[r])
        s[nt][r] = (s[nt][r] & 0xffff0000u) | kHalfNegInf;
      if (key0 + tileKey<C>(nt, q, 1) >= vis[r])
        s[nt][r] = (s[nt][r] & 0x0000ffffu) | (kHalfNegInf << 16);
    }
  }
}

// The row maxima of a whole tile on FP16 pairs (nvfp8's tile max, no blocks): per row a tree of
// HMNMX2 over the row's registers (four chains, then two levels), both rows' halves in one
// register (two PRMT, one HMNMX2), and the quad's two shuffles for both rows at once.
template <class CV>
FA4JIT_DEVICE void rowTileMaxOnly(const uint32_t (&s)[AttentionTraits<CV>::kSTiles][2], float (&tile_max)[2]) {
  constexpr int kTiles = AttentionTraits<CV>::kSTiles;
  static_assert(kTiles % 4 == 0, "FP16 scores: tiles of whole 32-key k-steps");
  uint32_t v[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    uint32_t m[4] = {s[0][r], s[1][r], s[2][r], s[3][r]};
#pragma unroll
    for (int nt = 4; nt < kTiles; ++nt)
      m[nt % 4] = half2MaxBits(m[nt % 4], s[nt][r]);
    v[r] = half2MaxBits(half2MaxBits(m[0], m[1]), half2MaxBits(m[2], m[3]));
  }
  uint32_t tile = half2MaxBits(bytePerm(v[0], v[1], 0x5410u), bytePerm(v[0], v[1], 0x7632u));
  tile = half2MaxBits(tile, __shfl_xor_sync(0xffffffffu, tile, 1));
  tile = half2MaxBits(tile, __shfl_xor_sync(0xffffffffu, tile, 2));
  tile_max[0] = halfLowToFloat(tile);
  tile_max[1] = halfHighToFloat(tile);
}

// Direct-P's block maxima and the tile max (softmax.cuh's rowTileMax) on FP16 pairs, for the
// blocks as a thread meets them (key_order.cuh's ThreadBlocks: per k-step with quad blocks, per
// 32 or 16 of its columns with thread key blocks): per k-step and row three HMNMX2, one per
// further k-step of a block, then both rows' halves in one register (two PRMT, one HMNMX2), so
// the shuffles a block spans (0, 1 or 2) serve both rows at once; the tile max likewise from the
// blocks' packed maxima.
template <class CV>
FA4JIT_DEVICE void rowBlockMax(const uint32_t (&s)[AttentionTraits<CV>::kSTiles][2],
                               float (&block_max)[AttentionTraits<CV>::kBlockN / 32][2], float (&tile_max)[2]) {
  using T = AttentionTraits<CV>;
  using B = typename T::Blocks;
  constexpr int kSteps = T::kBlockN / 32;
  static_assert(T::kSTiles == 4 * kSteps, "FP16 scores: Direct-P's blocks of whole 32-key k-steps");
  uint32_t v[B::kBlocks][2]; // per block and row: two partial maxima
#pragma unroll
  for (int kb = 0; kb < kSteps; ++kb)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const uint32_t step = half2MaxBits(half2MaxBits(s[4 * kb][r], s[4 * kb + 1][r]),
                                         half2MaxBits(s[4 * kb + 2][r], s[4 * kb + 3][r]));
      const int b = B::blockOfStep(kb);
      v[b][r] = B::startsBlock(kb) ? step : half2MaxBits(v[b][r], step);
    }
  uint32_t m[B::kBlocks]; // per block: {row 0, row 1}
  uint32_t tile = 0u;
#pragma unroll
  for (int b = 0; b < B::kBlocks; ++b) {
    m[b] = half2MaxBits(bytePerm(v[b][0], v[b][1], 0x5410u), bytePerm(v[b][0], v[b][1], 0x7632u));
    if (B::lanesOf(b) >= 2)
      m[b] = half2MaxBits(m[b], __shfl_xor_sync(0xffffffffu, m[b], 1));
    if (B::lanesOf(b) == 4)
      m[b] = half2MaxBits(m[b], __shfl_xor_sync(0xffffffffu, m[b], 2));
    tile = b == 0 ? m[b] : half2MaxBits(tile, m[b]);
  }
#pragma unroll
  for (int kb = 0; kb < kSteps; ++kb) {
    block_max[kb][0] = halfLowToFloat(m[B::blockOfStep(kb)]);
    block_max[kb][1] = halfHighToFloat(m[B::blockOfStep(kb)]);
  }
  // the tile max over the threads that share the row's narrowest block
  if constexpr (B::fewestLanes() == 1)
    tile = half2MaxBits(tile, __shfl_xor_sync(0xffffffffu, tile, 1));
  if constexpr (B::fewestLanes() <= 2)
    tile = half2MaxBits(tile, __shfl_xor_sync(0xffffffffu, tile, 2));
  tile_max[0] = halfLowToFloat(tile);
  tile_max[1] = halfHighToFloat(tile);
}

// rowTileMax on FP16 pairs: with Direct-P's block maxima (kBlocks) or the tile's alone.
template <class CV, bool kBlocks>
FA4JIT_DEVICE void rowTileMax(const uint32_t (&s)[AttentionTraits<CV>::kSTiles][2],
                              float (&block_max)[AttentionTraits<CV>::kBlockN / 32][2], float (&tile_max)[2]) {
  if constexpr (kBlocks)
    rowBlockMax<CV>(s, block_max, tile_max);
  else
    rowTileMaxOnly<CV>(s, tile_max);
}

} // namespace fa4jit::device::attention
