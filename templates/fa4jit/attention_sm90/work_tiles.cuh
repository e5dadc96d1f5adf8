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
// (work_tile_order.cuh: the hardware's greedy hand-out then ends balanced); without it, a ragged
// last m-block in which a consumer has no rows (a cheap tile) is placed so that the grid ends
// balanced too (rotated through the persistent stride; last in the grid of one CTA per tile).
// With `kv_multicast` (cluster.cuh) the unit is a pair of adjacent m-blocks of one head, one per
// CTA of a two-CTA cluster (rank 0 the even block): both CTAs run the pair's K/V tiles through
// their rings, as many as the pair's later block needs (key_m_block); with an odd number of
// m-blocks the last pair's second CTA has no rows (m_block == qBlocks) and only takes part in the
// loads and releases.
#include "fa4jit/attention/params.cuh"
#include "fa4jit/attention_sm90/cluster.cuh"
#include "fa4jit/attention_sm90/layout.cuh"
#include "fa4jit/attention_sm90/sync.cuh"
#include "fa4jit/attention_sm90/work_tile_order.cuh"
#include "fa4jit/mbarrier.cuh"

namespace fa4jit::device::attention_sm90 {

// The persistent causal grid hands its work tiles out at run time (FlashAttention-3's dynamic
// persistent scheduler): causal tiles differ in length, and a static stride (tile i, i + grid, ...)
// gave each CTA the same m-block of every head it visited, the longest to some, the shortest to
// others. Here CTA i starts with tile i of the grouped longest-first order (work_tile_order.cuh);
// whenever its producer starts a work tile it takes a ticket for the next one from the launch's
// counter (AttentionParams::work_counter), so the SMs that finish first take the next tiles, as the
// hardware's hand-out of one CTA per work tile does, without a CTA launch per tile.
// The producer publishes each tile (m-block, head and where its K/V tiles start in the ring) in
// shared memory, in the slot of its Q phase (work_slot + 4 * phase), before it arrives on Q's
// mbarrier and after the consumers have released the previous Q (q_empty); consumers read it once
// Q is there, and again for their epilogue (the slot is rewritten only for the tile after next,
// whose Q waits for their next QK^T), so they carry no work-tile state across the main loop but
// Q's phase: with it the three consumers' 160 registers spilled. M-block -1, published without a
// Q copy, ends their loop. The last CTA to finish resets the counter to zero for the next launch.
template <class C> FA4JIT_HD constexpr bool handsOutWorkTiles() {
  return C::persistent && C::causal && !C::kv_multicast;
}

// The K/V image bytes per key that size the causal order's groups of heads.
template <class S> FA4JIT_HD constexpr int kvImageBytesPerKey() { return S::kLayout.stage_bytes / S::kBlockN; }

// The producer's thread: fn(work tile) for each work tile it hands its CTA, in order.
template <class C, class S, class Fn>
FA4JIT_DEVICE void handOutWorkTiles(const attention::AttentionParams &p, Fn &&fn) {
  int *counter = reinterpret_cast<int *>(p.work_counter);
  const int count = workTileCount(p, C::block_m), group = causalGroupHeads(p, kvImageBytesPerKey<S>());
  for (int t = static_cast<int>(blockIdx.x); t < count;) {
    // (taken before the tile's loads, whose waits hide the atomic's round trip to L2)
    const int next = atomicAdd(counter, 1) + static_cast<int>(gridDim.x);
    fn(causalWorkTileOf(t, p, C::block_m, group));
    t = next;
  }
}

// The slot's words: the work tile's m-block (-1: no more), head (b * Hq + hq) and ring position
// of its first K/V tile (stage + stages * parity: what RingCursor::of needs of the tile count).
template <int kStages>
FA4JIT_DEVICE void publishWorkTile(int *work_slot, const WorkTile &w, const attention::AttentionParams &p,
                                   RingCursor<kStages> first) {
  work_slot[0] = w.m_block;
  work_slot[1] = w.b * p.heads_q + w.hq;
  work_slot[2] = first.stage + kStages * static_cast<int>(first.parity);
}
FA4JIT_DEVICE void publishEnd(int *work_slot) { work_slot[0] = -1; }

// The producer's thread, after its last work tile (and the end published): the launch's last CTA
// to get here, when every ticket has been taken, zeroes the counters for the next launch.
FA4JIT_DEVICE void finishHandingOut(const attention::AttentionParams &p) {
  int *counter = reinterpret_cast<int *>(p.work_counter);
  if (atomicAdd(counter + 1, 1) == static_cast<int>(gridDim.x) - 1) {
    atomicExch(counter, 0);
    atomicExch(counter + 1, 0);
  }
}

// A word of a slot, broadcast from lane 0: the compiler then knows it is warp-uniform, and so is
// the control flow and the ring position derived from it, whose stage descriptors then stay in
// uniform registers (read as they are, every wgmma of the main loop waited on an R2UR: 15 of
// them and 35 more instructions per key tile than with one CTA per work tile).
FA4JIT_DEVICE int slotWord(const int *slot, int i) {
  return __shfl_sync(0xffffffffu, static_cast<const volatile int *>(slot)[i], 0);
}

// The tile in a slot (the consumers' first read, and their epilogue's).
template <class C> FA4JIT_DEVICE WorkTile readWorkTile(const attention::AttentionParams &p, const int *slot) {
  const int m_block = slotWord(slot, 0), head = slotWord(slot, 1);
  return WorkTile{m_block, head % p.heads_q, head / p.heads_q, C::block_m, m_block};
}

// A consumer: fn(work tile, ring position of its first K/V tile) for each tile its producer
// publishes, until the end.
// q_parity is the phase of bar_q this work tile's Q completes (fn waits on it again and flips it).
template <class C, class Fn>
FA4JIT_DEVICE void receiveWorkTiles(const attention::AttentionParams &p, const int *work_slot, uint32_t bar_q,
                                    const uint32_t &q_parity, Fn &&fn) {
  for (;;) {
    mbarrierWait(bar_q, q_parity);
    const int *slot = work_slot + 4 * q_parity;
    if (slotWord(slot, 0) < 0)
      return;
    fn(readWorkTile<C>(p, slot), slotWord(slot, 2));
  }
}

// The work tile of this CTA in the grid of one CTA per work tile.
template <class C, class S> FA4JIT_DEVICE WorkTile launchWorkTile(const attention::AttentionParams &p) {
  const int linear = static_cast<int>(blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z));
  return gridWorkTileOf<C::causal>(linear, p, C::block_m, kvImageBytesPerKey<S>());
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
    static_assert(!handsOutWorkTiles<C>(), "the handed-out order: handOutWorkTiles and receiveWorkTiles");
    const int count = workTileCount(p, C::block_m);
    for (int t = static_cast<int>(blockIdx.x); t < count; t += static_cast<int>(gridDim.x))
      fn(workTileOf<C::causal>(t, p, C::block_m, static_cast<int>(gridDim.x)));
  } else {
    fn(launchWorkTile<C, S>(p));
  }
}

} // namespace fa4jit::device::attention_sm90
