#pragma once
// The Q images of the persistent wgmma kernel (TileSpec::persistent): one CTA of 128 threads per
// (block_m-row Q block, query head, batch) writes the block's shared-memory Q tile, exactly as the
// producer would (produceQTile: E4M3 from NVFP4 or BF16 repacked, 128-byte swizzled), to
//   q_tiles + ((b * Hq + hq) * ceil(Sq / block_m) + m_block) * q_bytes.
// A persistent CTA loads the Q of its next work tile while its consumers still finish the current
// one; with the image that load is one bulk copy by the producer's single thread (the producer
// warpgroup keeps 24 registers, too few to widen NVFP4 itself), at 2 bytes per Q element of extra
// traffic (4 on the bf16 route).
//
// Launch: grid (ceil(Sq / block_m), Hq, B), block 128, no shared memory.
#include "fa4jit/attention/params.cuh"
#include "fa4jit/attention_sm90/layout.cuh"
#include "fa4jit/attention_sm90/producer.cuh"

namespace fa4jit::device::attention_sm90 {

// The Q image of a work tile (m_block of query head head_q = b * Hq + hq).
template <class S> FA4JIT_DEVICE const uint8_t *qImage(const attention::AttentionParams &p, int head_q, int m_block) {
  const int blocks = (p.seqlen_q + S::kBlockRows - 1) / S::kBlockRows;
  return reinterpret_cast<const uint8_t *>(p.q_tiles) +
         (static_cast<int64_t>(head_q) * blocks + m_block) * static_cast<int64_t>(S::kLayout.q_bytes);
}

template <class C, class S> FA4JIT_DEVICE void widenQTiles(const attention::AttentionParams &p) {
  const int m_block = static_cast<int>(blockIdx.x);
  const int hq = static_cast<int>(blockIdx.y), b = static_cast<int>(blockIdx.z);
  uint8_t *image = const_cast<uint8_t *>(qImage<S>(p, b * p.heads_q + hq, m_block));
  produceQTile<C, S::kHeadDim, S::kBlockRows>(image, p, m_block * S::kBlockRows, hq, b, static_cast<int>(threadIdx.x));
}

} // namespace fa4jit::device::attention_sm90
