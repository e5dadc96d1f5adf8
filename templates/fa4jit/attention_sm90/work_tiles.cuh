#pragma once
// The work of the wgmma attention grid: one work tile is block_m query rows (128 or 192) of one
// (batch, query head). Without `persistent` every CTA computes the work tile of its block index
// (grid ceil(Sq / 128) x Hq x B). With it (FlashAttention-3's persistent tile scheduler) the grid
// is at most one CTA per SM, and CTA i computes work tiles i, i + gridDim.x, ...: one CTA's
// prologue (Q load, the first K/V tiles) and epilogue then overlap its neighbouring work tiles
// instead of costing each tile its own CTA launch, and the grid has no partial last wave.
// Work tile t: the m-block varies fastest, so the CTAs running at once share their heads' K/V in
// L2; causal grids visit each head's m-blocks longest first (the last rows see the most keys).
#include "fa4jit/attention/params.cuh"
#include "fa4jit/attention_sm90/layout.cuh"

namespace fa4jit::device::attention_sm90 {

struct WorkTile {
  int m_block, hq, b, rows; // rows: block_m
  FA4JIT_DEVICE int m0() const { return m_block * rows; }
  // The kv head the query head reads (GQA), and both heads' indices over batch x heads.
  FA4JIT_DEVICE int hkv(const attention::AttentionParams &p) const { return hq / (p.heads_q / p.heads_kv); }
  FA4JIT_DEVICE int headQ(const attention::AttentionParams &p) const { return b * p.heads_q + hq; }
  FA4JIT_DEVICE int headKv(const attention::AttentionParams &p) const { return b * p.heads_kv + hkv(p); }
};

FA4JIT_DEVICE int qBlocks(const attention::AttentionParams &p, int rows) { return (p.seqlen_q + rows - 1) / rows; }

// Every work tile of the launch: qBlocks x Hq x B.
FA4JIT_DEVICE int workTileCount(const attention::AttentionParams &p, int rows) {
  return qBlocks(p, rows) * p.heads_q * p.batch;
}

template <bool kCausal> FA4JIT_DEVICE WorkTile workTileOf(int t, const attention::AttentionParams &p, int rows) {
  const int blocks = qBlocks(p, rows);
  const int within = t % blocks, head = t / blocks;
  return {kCausal ? blocks - 1 - within : within, head % p.heads_q, head / p.heads_q, rows};
}

// Runs fn(WorkTile) for each work tile of this CTA, in order.
template <class C, class Fn> FA4JIT_DEVICE void forEachWorkTile(const attention::AttentionParams &p, Fn &&fn) {
  if constexpr (C::persistent) {
    const int count = workTileCount(p, C::block_m);
    for (int t = static_cast<int>(blockIdx.x); t < count; t += static_cast<int>(gridDim.x))
      fn(workTileOf<C::causal>(t, p, C::block_m));
  } else {
    fn(WorkTile{static_cast<int>(blockIdx.x), static_cast<int>(blockIdx.y), static_cast<int>(blockIdx.z), C::block_m});
  }
}

} // namespace fa4jit::device::attention_sm90
