#pragma once
// The widening pass of the wgmma kernel with prewidened K/V (KvStaging::Prewidened): one CTA of
// 128 threads per (K/V tile, kv head, batch) writes the tile's shared-memory image, K [block_n][D]
// then V^T [D][block_n], E4M3 and 128-byte swizzled exactly as the in-kernel producer would
// (the same produce* functions, a global destination), to
//   kv_tiles + ((b * Hkv + hkv) * ceil(Sk / block_n) + tile) * stage_bytes.
// The attention kernel's producer then moves each stage with one bulk copy. Widened in the kernel,
// every CTA of the attention grid re-reads and re-widens the same FP4 tiles; here that work is
// done once per forward, at 2 bytes per element of extra traffic.
// The bf16 route has nothing to widen but its tiles still need the swizzle and V the transpose
// (BF16 V^T [D][block_n]); this pass repacks them, at 4 bytes per element of extra traffic.
//
// Launch: grid (ceil(Sk / block_n), Hkv, B), block 128, no shared memory.
#include "fa4jit/attention/params.cuh"
#include "fa4jit/attention_sm90/layout.cuh"
#include "fa4jit/attention_sm90/producer.cuh"

namespace fa4jit::device::attention_sm90 {

template <class C, class S> FA4JIT_DEVICE void widenKvTiles(const attention::AttentionParams &p) {
  constexpr Sm90Layout L = S::kLayout;
  const int tile = static_cast<int>(blockIdx.x);
  const int hkv = static_cast<int>(blockIdx.y), b = static_cast<int>(blockIdx.z);
  const int sk = p.seqlen_k;
  const int n_tiles = (sk + S::kBlockN - 1) / S::kBlockN;
  const int ptid = static_cast<int>(threadIdx.x);
  const int head_kv = b * p.heads_kv + hkv;
  uint8_t *image = reinterpret_cast<uint8_t *>(p.kv_tiles) +
                   (static_cast<int64_t>(head_kv) * n_tiles + tile) * static_cast<int64_t>(L.stage_bytes);
  const int key0 = tile * S::kBlockN;
  const int k_valid = sk - key0 < S::kBlockN ? sk - key0 : S::kBlockN;
  uint8_t *v_image = image + (L.v_offset - L.k_offset);
  if constexpr (C::route == attention::Route::Bf16) {
    const uint16_t *kg = reinterpret_cast<const uint16_t *>(p.k) + b * p.k_batch_stride + hkv * p.k_head_stride;
    const uint16_t *vg = reinterpret_cast<const uint16_t *>(p.v) + b * p.v_batch_stride + hkv * p.v_head_stride;
    produceBf16Rows<S::kHeadDim, S::kBlockN>(image, kg + key0 * p.k_row_stride, static_cast<int>(p.k_row_stride),
                                             k_valid, ptid);
    produceBf16Vt<S::kHeadDim, S::kBlockN>(v_image, vg + key0 * p.v_row_stride, static_cast<int>(p.v_row_stride),
                                           k_valid, ptid);
  } else {
    produceKvTile<C, S::kHeadDim, S::kBlockN>(image, v_image, kvHeadSources<C>(p, b, hkv, head_kv), p, key0, k_valid,
                                              exp2Int(-C::qk_widen_shift), ptid);
  }
}

} // namespace fa4jit::device::attention_sm90
