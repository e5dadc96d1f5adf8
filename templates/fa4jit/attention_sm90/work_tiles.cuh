#pragma once
// The work of the wgmma attention grid: one work tile is block_m query rows (128 or 192) of one
// (batch, query head). Without `persistent` every CTA computes the work tile of its block index
// (grid ceil(Sq / 128) x Hq x B). With it (FlashAttention-3's persistent tile scheduler) the grid
// is at most one CTA per SM, and CTA i computes work tiles i, i + gridDim.x, ...: one CTA's
// prologue (Q load, the first K/V tiles) and epilogue then overlap its neighbouring work tiles
// instead of costing each tile its own CTA launch, and the grid has no partial last wave.
// Work tile t: the m-block varies fastest, so the CTAs running at once share their heads' K/V in
// L2; causal grids visit each head's m-blocks longest first (the last rows see the most keys), and
// with one CTA per work tile in groups of heads, all m-blocks of a group longest first
// (work_tile_order.cuh: the hardware's greedy hand-out then ends balanced).
// With `kv_multicast` (cluster.cuh) the unit is a pair of adjacent m-blocks of one head, one per
// CTA of a two-CTA cluster (rank 0 the even block): both CTAs run the pair's K/V tiles through
// their rings, as many as the pair's later block needs (key_m_block); with an odd number of
// m-blocks the last pair's second CTA has no rows (m_block == qBlocks) and only takes part in the
// loads and releases.
#include "fa4jit/attention/params.cuh"
#include "fa4jit/attention_sm90/cluster.cuh"
#include "fa4jit/attention_sm90/layout.cuh"
#include "fa4jit/attention_sm90/work_tile_order.cuh"

namespace fa4jit::device::attention_sm90 {

// The work tile of this CTA in the grid of one CTA per work tile.
template <class C, class S> FA4JIT_DEVICE WorkTile launchWorkTile(const attention::AttentionParams &p) {
  const int linear = static_cast<int>(blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z));
  return gridWorkTileOf<C::causal>(linear, p, C::block_m, S::kLayout.stage_bytes / S::kBlockN);
}

// Runs fn(WorkTile) for each work tile of this CTA, in order.
template <class C, class S, class Fn>
FA4JIT_DEVICE void forEachWorkTile(const attention::AttentionParams &p, Fn &&fn) {
  if constexpr (C::kv_multicast) {
    static_assert(C::persistent, "kv_multicast: the persistent grid's clusters loop over pairs of m-blocks");
    const int units = pairUnitCount(p, C::block_m), rank = clusterCtaRank();
    const int clusters = static_cast<int>(gridDim.x) / kClusterCtas;
    for (int u = static_cast<int>(blockIdx.x) / kClusterCtas; u < units; u += clusters)
      fn(pairWorkTileOf<C::causal>(u, rank, p, C::block_m));
  } else if constexpr (C::persistent) {
    const int count = workTileCount(p, C::block_m);
    for (int t = static_cast<int>(blockIdx.x); t < count; t += static_cast<int>(gridDim.x))
      fn(workTileOf<C::causal>(t, p, C::block_m));
  } else {
    fn(launchWorkTile<C, S>(p));
  }
}

} // namespace fa4jit::device::attention_sm90
