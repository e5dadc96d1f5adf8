#pragma once
// S = Q K^T for one warp's 16 query rows and one key tile, and the causal / key-range mask
// (NUMERICS.md §2.1). s[nt][i] follows the m16n8 accumulator layout of mma.cuh:
//   (lane, nt, i) -> (row g + 8*(i/2), key 8*nt + 2q + i%2).
#include "fa4jit/attention/config.cuh"
#include "fa4jit/attention/key_order.cuh"
#include "fa4jit/attention/mma.cuh"
#include "fa4jit/score_terms.cuh"

namespace fa4jit::device::attention {

FA4JIT_DEVICE uint32_t lds32(const uint8_t *p) { return *reinterpret_cast<const uint32_t *>(p); }

FA4JIT_DEVICE float negInf() { return __int_as_float(0xff800000); }

// q_warp: the warp's 16 rows of Q in shared memory; k_tile: the key tile [block_n][pitch].
template <class C>
FA4JIT_DEVICE void computeScores(float (&s)[AttentionTraits<C>::kSTiles][4], const uint8_t *q_warp,
                                 const uint8_t *k_tile, int lane) {
  using T = AttentionTraits<C>;
  constexpr int P = T::kQkPitch;
  const int g = lane / 4, q = lane % 4;
#pragma unroll
  for (int nt = 0; nt < T::kSTiles; ++nt)
    s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.0f;
  if constexpr (T::kQkBf16) {
#pragma unroll
    for (int kk = 0; kk < T::kHeadDim / 16; ++kk) {
      const uint8_t *qa = q_warp + g * P + (kk * 16 + 2 * q) * 2;
      const uint32_t a0 = lds32(qa), a1 = lds32(qa + 8 * P), a2 = lds32(qa + 16), a3 = lds32(qa + 8 * P + 16);
#pragma unroll
      for (int nt = 0; nt < T::kSTiles; ++nt) {
        const uint8_t *kb = k_tile + (nt * 8 + g) * P + (kk * 16 + 2 * q) * 2;
        sm80_mma_m16n8k16_f32_bf16(s[nt], a0, a1, a2, a3, lds32(kb), lds32(kb + 16));
      }
    }
  } else {
#pragma unroll 1
    for (int kk = 0; kk < T::kHeadDim / 32; ++kk) {
      const uint8_t *qa = q_warp + g * P + kk * 32 + 4 * q;
      const uint32_t a0 = lds32(qa), a1 = lds32(qa + 8 * P), a2 = lds32(qa + 16), a3 = lds32(qa + 8 * P + 16);
#pragma unroll
      for (int nt = 0; nt < T::kSTiles; ++nt) {
        const uint8_t *kb = k_tile + (nt * 8 + g) * P + kk * 32 + 4 * q;
        sm89_mma_m16n8k32_f32_e4m3(s[nt], a0, a1, a2, a3, lds32(kb), lds32(kb + 16));
      }
    }
  }
}

// The tile-relative key of S column 8 nt + 2 q + e of this thread (q = lane % 4): the column
// itself, or with thread key blocks (TileSpec::thread_key_blocks) the key order of key_order.cuh,
// where a 32-key block spans one thread (128-key groups) or two and four (96-key tiles).
template <class C> FA4JIT_HD constexpr int tileKey(int nt, int q, int e) {
  using T = AttentionTraits<C>;
  return T::kThreadKeyBlocks ? threadBlockKeyOf<T::kBlockN>(nt, q, e) : nt * 8 + 2 * q + e;
}

// Keys at or beyond a row's visible count (causal limit, or seqlen_k) get acc = -inf; the
// multiplier is applied later, folded into each route's FFMA (score_terms.cuh), so tiles without
// a masked key need no per-element pass at all. vis[r]: number of visible keys of this thread's
// row g + 8r; key0: first key of the tile.
template <class C>
FA4JIT_DEVICE void maskScores(float (&s)[AttentionTraits<C>::kSTiles][4], const int (&vis)[2], int key0, int lane) {
  using T = AttentionTraits<C>;
  const int q = lane % 4;
#pragma unroll
  for (int nt = 0; nt < T::kSTiles; ++nt) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int key = key0 + tileKey<C>(nt, q, i & 1);
      s[nt][i] = key < vis[i / 2] ? s[nt][i] : negInf();
    }
  }
}

} // namespace fa4jit::device::attention
