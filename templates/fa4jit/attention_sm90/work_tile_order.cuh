#pragma once
// The order of the wgmma attention grid's work tiles (work_tiles.cuh runs them): which m-block of
// which (batch, query head) the t-th work tile is, and with `kv_multicast` which pair of m-blocks
// the u-th cluster unit is. Host-compilable, so that a CPU test can check that every m-block is
// visited exactly once.
#include "fa4jit/attention/params.cuh"
#include "fa4jit/attention_sm90/layout.cuh"

namespace fa4jit::device::attention_sm90 {

struct WorkTile {
  int m_block, hq, b, rows; // rows: block_m
  int key_m_block;          // the m-block whose visible keys set the ring's tile count
  FA4JIT_HD int m0() const { return m_block * rows; }
  // The kv head the query head reads (GQA), and both heads' indices over batch x heads.
  FA4JIT_HD int hkv(const attention::AttentionParams &p) const { return hq / (p.heads_q / p.heads_kv); }
  FA4JIT_HD int headQ(const attention::AttentionParams &p) const { return b * p.heads_q + hq; }
  FA4JIT_HD int headKv(const attention::AttentionParams &p) const { return b * p.heads_kv + hkv(p); }
};

FA4JIT_HD int qBlocks(const attention::AttentionParams &p, int rows) { return (p.seqlen_q + rows - 1) / rows; }

// Every work tile of the launch: qBlocks x Hq x B.
FA4JIT_HD int workTileCount(const attention::AttentionParams &p, int rows) {
  return qBlocks(p, rows) * p.heads_q * p.batch;
}

// A ragged last m-block (seqlen_q not a multiple of block_m) in which a consumer warpgroup (64
// rows) has no row: that consumer skips the tile's MMAs and softmax (consumer_role.cuh), so the
// tile costs a fraction of a full one.
FA4JIT_HD bool cheapLastBlock(const attention::AttentionParams &p, int rows) {
  const int tail = p.seqlen_q % rows;
  return tail != 0 && p.seqlen_q > rows && rows - tail >= kRowsPerConsumer;
}

// Without causal masking, each head's m-blocks in order, the heads one after the other. With a
// cheap last block (above) two orders put the cheap tiles where they shorten the grid:
// - the persistent grid's static stride (CTA i: tiles i, i + stride, ...; `stride` > 0): each
//   head's m-blocks rotate by the step at which its first tile runs (tile t's step is t / stride),
//   so that the CTAs take their turns at the cheap block instead of the same few CTAs running
//   only those. (Head-major, a stride that is a multiple of the block count gave every cheap tile
//   to the same CTAs: at 4096 rows, 192-row blocks and 132 CTAs, CTAs 21, 43, ... ran only those
//   and the others 22 or 21 full tiles, so skipping the empty consumers' work shortened nothing.)
//   The heads running at once are the same as head-major, each with all its m-blocks.
// - the grid of one CTA per work tile (`stride` 0): every head's full blocks first, the cheap ones
//   last, so that the hardware's hand-out ends with its shortest tiles.
template <bool kCausal>
FA4JIT_HD WorkTile workTileOf(int t, const attention::AttentionParams &p, int rows, int stride = 0) {
  const int blocks = qBlocks(p, rows);
  if (!kCausal && cheapLastBlock(p, rows)) {
    int head, m_block;
    if (stride > 0) {
      head = t / blocks;
      const int step = static_cast<int>(static_cast<long long>(head) * blocks / stride);
      m_block = (t % blocks + step) % blocks;
    } else {
      const int full = (blocks - 1) * p.heads_q * p.batch;
      head = t < full ? t / (blocks - 1) : t - full, m_block = t < full ? t % (blocks - 1) : blocks - 1;
    }
    return {m_block, head % p.heads_q, head / p.heads_q, rows, m_block};
  }
  const int within = t % blocks, head = t / blocks;
  const int m_block = kCausal ? blocks - 1 - within : within;
  return {m_block, head % p.heads_q, head / p.heads_q, rows, m_block};
}

// Causal grids of one CTA per work tile: the hardware hands CTAs out in linear block order as SMs
// free up, a greedy list schedule, which ends within one work tile of the ideal only if the longest
// tiles come first. So the block index runs over groups of `group` consecutive heads (b * Hq + hq:
// GQA siblings, who read the same K/V, fall together), within a group every m-block longest first
// and its heads fastest: the CTAs running at once share few heads' K/V, which stay in L2. (Plain
// head-major order, as without causal masking, ended with the last heads' longest tiles: ~6% over
// the ideal makespan in a model of 132 SMs at 4k-32k keys; this order 0.3-4%.)
// The most heads of one group: as many as keep their K/V images (bytes_per_key) within 24 MiB.
FA4JIT_HD int causalGroupHeads(const attention::AttentionParams &p, int bytes_per_key) {
  constexpr long long kGroupBytes = 24ll << 20; // of the H200's 50 MB L2
  const int heads = p.heads_q * p.batch;
  const long long fit = kGroupBytes / (static_cast<long long>(p.seqlen_k) * bytes_per_key);
  return fit < 1 ? 1 : fit > heads ? heads : static_cast<int>(fit);
}

// The groups are as equal as the head count allows (sizes base + 1, then base): a small last group
// would start its longest tiles when the other SMs are about to finish.
struct CausalGroups {
  int count, base, extra; // `extra` groups of base + 1 heads, then groups of base
  FA4JIT_HD static CausalGroups of(int heads, int most) {
    const int count = (heads + most - 1) / most;
    return {count, heads / count, heads % count};
  }
};

FA4JIT_HD WorkTile causalWorkTileOf(int t, const attention::AttentionParams &p, int rows, int group_most) {
  const int blocks = qBlocks(p, rows);
  const CausalGroups g = CausalGroups::of(p.heads_q * p.batch, group_most);
  const int big_tiles = (g.base + 1) * blocks; // tiles of one larger group
  int g0, size, r;
  if (t < g.extra * big_tiles) {
    g0 = t / big_tiles * (g.base + 1), size = g.base + 1, r = t % big_tiles;
  } else {
    const int u = t - g.extra * big_tiles;
    g0 = g.extra * (g.base + 1) + u / (g.base * blocks) * g.base, size = g.base, r = u % (g.base * blocks);
  }
  const int head = g0 + r % size, m_block = blocks - 1 - r / size;
  return {m_block, head % p.heads_q, head / p.heads_q, rows, m_block};
}

// The work tile of block `linear` (x + gridDim.x * (y + gridDim.y * z)) of the grid with one CTA
// per work tile, (qBlocks, Hq, B): without causal masking the block's own m-block and head.
template <bool kCausal>
FA4JIT_HD WorkTile gridWorkTileOf(int linear, const attention::AttentionParams &p, int rows, int bytes_per_key) {
  if constexpr (kCausal)
    return causalWorkTileOf(linear, p, rows, causalGroupHeads(p, bytes_per_key));
  else
    return workTileOf<false>(linear, p, rows);
}

// The multicast units: pairs of m-blocks, ceil(qBlocks / 2) per (batch, query head).
FA4JIT_HD int pairUnitCount(const attention::AttentionParams &p, int rows) {
  return (qBlocks(p, rows) + 1) / 2 * p.heads_q * p.batch;
}

template <bool kCausal>
FA4JIT_HD WorkTile pairWorkTileOf(int u, int rank, const attention::AttentionParams &p, int rows) {
  const int blocks = qBlocks(p, rows), pairs = (blocks + 1) / 2;
  const int within = u % pairs, head = u / pairs;
  const int pair = kCausal ? pairs - 1 - within : within;
  const int last = 2 * pair + 1 < blocks ? 2 * pair + 1 : blocks - 1;
  return {2 * pair + rank, head % p.heads_q, head / p.heads_q, rows, last};
}

} // namespace fa4jit::device::attention_sm90
