#pragma once
// The order of the wgmma attention grid's work tiles (work_tiles.cuh runs them): which m-block of
// which (batch, query head) the t-th work tile is, and with `kv_multicast` which pair of m-blocks
// the u-th cluster unit is. Host-compilable, so that a CPU test can check that every m-block is
// visited exactly once.
#include "fa4jit/attention/params.cuh"

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

template <bool kCausal> FA4JIT_HD WorkTile workTileOf(int t, const attention::AttentionParams &p, int rows) {
  const int blocks = qBlocks(p, rows);
  const int within = t % blocks, head = t / blocks;
  const int m_block = kCausal ? blocks - 1 - within : within;
  return {m_block, head % p.heads_q, head / p.heads_q, rows, m_block};
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
