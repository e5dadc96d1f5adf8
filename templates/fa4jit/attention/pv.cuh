#pragma once
// O += P V for one warp's 16 rows and one key tile. o[dt][i] follows the m16n8 accumulator layout:
//   (lane, dt, i) -> (row g + 8*(i/2), head-dim column 8*dt + 2q + i%2).
#include "fa4jit/attention/config.cuh"
#include "fa4jit/attention/mma.cuh"
#include "fa4jit/attention/scores.cuh"

namespace fa4jit::device::attention {

// bf16 route: V [key][d] BF16 in shared memory; ldmatrix.x4.trans yields the B fragments of two
// n8 head-dim tiles for 16 keys. Lane i addresses key 16ks + 8((i/8)%2) + i%8, column 16dp + 8(i/16).
template <class C>
FA4JIT_DEVICE void accumulatePVBf16(float (&o)[AttentionTraits<C>::kOTiles][4],
                                    const uint32_t (&pa)[AttentionTraits<C>::kBlockN / 16][4],
                                    const uint8_t *v_tile, int lane) {
  using T = AttentionTraits<C>;
  const uint32_t base = sharedAddress(v_tile) +
                        static_cast<uint32_t>((8 * ((lane / 8) % 2) + lane % 8) * T::kVPitch + 16 * (lane / 16));
#pragma unroll
  for (int ks = 0; ks < T::kBlockN / 16; ++ks) {
#pragma unroll
    for (int dp = 0; dp < T::kHeadDim / 16; ++dp) {
      uint32_t b[4];
      sm75_ldmatrix_x4_trans_b16(b, base + static_cast<uint32_t>(ks * 16 * T::kVPitch + dp * 32));
      sm80_mma_m16n8k16_f32_bf16(o[2 * dp], pa[ks][0], pa[ks][1], pa[ks][2], pa[ks][3], b[0], b[1]);
      sm80_mma_m16n8k16_f32_bf16(o[2 * dp + 1], pa[ks][0], pa[ks][1], pa[ks][2], pa[ks][3], b[2], b[3]);
    }
  }
}

// FP8-fed routes: V^T [d][key] E4M3 in shared memory, keys permuted within each 16 to match the
// P fragment (tile_load.cuh), so b0/b1 are plain 32-bit loads at keys 32kb + 4q and + 16.
template <class C>
FA4JIT_DEVICE void accumulatePVFp8(float (&o)[AttentionTraits<C>::kOTiles][4],
                                   const uint32_t (&pa)[AttentionTraits<C>::kBlockN / 32][4],
                                   const uint8_t *vt_tile, int lane) {
  using T = AttentionTraits<C>;
  const int g = lane / 4, q = lane % 4;
#pragma unroll
  for (int kb = 0; kb < T::kBlockN / 32; ++kb) {
#pragma unroll
    for (int dt = 0; dt < T::kOTiles; ++dt) {
      const uint8_t *vb = vt_tile + (dt * 8 + g) * T::kVPitch + kb * 32 + 4 * q;
      sm89_mma_m16n8k32_f32_e4m3(o[dt], pa[kb][0], pa[kb][1], pa[kb][2], pa[kb][3], lds32(vb), lds32(vb + 16));
      // Next to a 128-register O (D = 256) ptxas would hoist every tile's B loads ahead of the
      // MMAs and spill; a compiler fence every 8 tiles bounds the loads in flight to 16 registers.
      if (dt % 8 == 7)
        asm volatile("" ::: "memory");
    }
  }
}

} // namespace fa4jit::device::attention
