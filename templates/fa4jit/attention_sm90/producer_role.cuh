#pragma once
// Warpgroup 0 of the wgmma attention kernel: for each work tile of its CTA (work_tiles.cuh) it
// provides Q and fills the `stages`-deep ring of K / V^T tiles (full/empty mbarriers per stage;
// fence.proxy.async before each signal because wgmma reads shared memory through the async
// proxy). The ring position runs on across work tiles.
//   Q: without `persistent` every producer thread widens its share once, with the launch's
//      registers (kernel.cuh gives them up afterwards); with it one thread bulk-copies each work
//      tile's Q image (widen_q.cuh) once the consumers have released the previous Q (q_empty).
//   K/V: prewidened, one thread moves each stage's image (widen_kv.cuh) with one bulk copy;
//      in-kernel, all 128 threads widen each tile into the stage.
//   Tensor maps (bf16): one thread loads each work tile's Q and each stage's K and V by TMA from
//      the tensors as they are (tensor_maps.cuh); V lands [keys][D], which PV reads N-major.
//   Fused widening (persistent, prewidened): the images are written in the kernel by the producer
//      warpgroup's spare warps (widen_ahead.cuh), which also hand the thread its work tiles; it
//      copies a head's K/V images once they are complete.
#include "fa4jit/attention/config.cuh"
#include "fa4jit/attention/params.cuh"
#include "fa4jit/attention_sm90/cluster.cuh"
#include "fa4jit/attention_sm90/layout.cuh"
#include "fa4jit/attention_sm90/producer.cuh"
#include "fa4jit/attention_sm90/sync.cuh"
#include "fa4jit/attention_sm90/tensor_maps.cuh"
#include "fa4jit/attention_sm90/widen_ahead.cuh"
#include "fa4jit/attention_sm90/widen_q.cuh"
#include "fa4jit/attention_sm90/work_tiles.cuh"
#include "fa4jit/mbarrier.cuh"

namespace fa4jit::device::attention_sm90 {

using attention::StageAblation;

// The shared-memory addresses both roles use (kernel.cuh fills them).
struct CtaBuffers {
  uint8_t *smem;     // 1024-byte aligned base
  uint32_t base;     // its shared-window address
  uint32_t bar_full, bar_empty, bar_q, bar_q_empty;
  int *work_slot; // two slots, by Q's phase, of the handed-out work tile (work_tiles.cuh)
  int widen_offset; // the widener warps' slots and mbarriers (fused widening, widen_ahead.cuh)
};

// Key tiles one work tile needs: up to the last visible key of its last row.
template <class C, int kBlockN> FA4JIT_DEVICE int workTileKeyTiles(const attention::AttentionParams &p, int m0) {
  const int last_row = (p.seqlen_q < m0 + C::block_m ? p.seqlen_q : m0 + C::block_m) - 1;
  return (attention::visibleKeys<C::causal>(last_row, p.seqlen_q, p.seqlen_k) + kBlockN - 1) / kBlockN;
}

// Which of a stage's tiles this CTA's producer loads: both, or with kv_multicast its half (rank
// 0 K, rank 1 V^T: the same bytes), multicast into both CTAs of the cluster.
struct StageShare {
  bool k, v;
};
template <class C> FA4JIT_DEVICE StageShare stageShare(int rank) {
  if constexpr (C::kv_multicast)
    return {rank == 0, rank != 0};
  else
    return {true, true};
}

// The stage's K and V tiles of keys key0.. by tensor maps: K [block_n][D] and V [block_n][D],
// each D / 64 boxes (out-of-range keys arrive as zeros), on the stage's full mbarrier.
template <class S>
FA4JIT_DEVICE void loadKvByTensorMaps(const CtaBuffers &cta, const AttentionTensorMaps *maps, int stage, int key0,
                                      int hkv, int b) {
  constexpr Sm90Layout L = S::kLayout;
  const uint32_t bar = cta.bar_full + 8 * stage;
  const uint32_t k_dst = cta.base + L.k_offset + stage * L.stage_stride;
  const uint32_t v_dst = cta.base + L.v_offset + stage * L.stage_stride;
  mbarrierArriveExpectTx(bar, static_cast<uint32_t>(L.stage_bytes));
  tensorMapLoadTile<S::kHeadDim, S::kBlockN>(k_dst, &maps->k, key0, hkv, b, bar);
  tensorMapLoadTile<S::kHeadDim, S::kBlockN>(v_dst, &maps->v, key0, hkv, b, bar);
}

template <class C> FA4JIT_DEVICE void copyImagePart(uint32_t dst, const uint8_t *src, uint32_t bytes, uint32_t bar) {
  if constexpr (C::kv_multicast)
    bulkCopyG2SMulticast(dst, src, bytes, bar);
  else
    bulkCopyG2S(dst, src, bytes, bar);
}

// The stage's prewidened image (widen_kv.cuh) by bulk copies, on the stage's full mbarrier.
template <class C, class S>
FA4JIT_DEVICE void copyKvImage(const CtaBuffers &cta, int stage, const uint8_t *src, StageShare share) {
  constexpr Sm90Layout L = S::kLayout;
  const uint32_t bar = cta.bar_full + 8 * stage;
  const uint32_t dst = cta.base + L.k_offset + stage * L.stage_stride;
  constexpr uint32_t kToV = static_cast<uint32_t>(L.v_offset - L.k_offset);
  mbarrierArriveExpectTx(bar, static_cast<uint32_t>(L.stage_bytes));
  if constexpr (L.v_blocks == 1 || !C::mma_row_sum) { // the image is the stage as it lies
    if (share.k && share.v) {
      copyImagePart<C>(dst, src, static_cast<uint32_t>(L.stage_bytes), bar);
    } else if (share.k) {
      copyImagePart<C>(dst, src, kToV, bar);
    } else {
      copyImagePart<C>(dst + kToV, src + kToV, static_cast<uint32_t>(L.stage_bytes) - kToV, bar);
    }
  } else {
    // K, then each of V^T's column blocks to its place past the previous block's row-sum rows.
    constexpr uint32_t kVBlock = S::kHeadDim * kSwizzleBytes;
    if (share.k)
      copyImagePart<C>(dst, src, kToV, bar);
    if (share.v) {
#pragma unroll
      for (int blk = 0; blk < L.v_blocks; ++blk)
        copyImagePart<C>(dst + kToV + blk * L.v_block_stride, src + kToV + blk * kVBlock, kVBlock, bar);
    }
  }
}

template <class C, class S>
FA4JIT_DEVICE void produceWork(const attention::AttentionParams &p, const CtaBuffers &cta, int ptid,
                               const AttentionTensorMaps *maps) {
  constexpr Sm90Layout L = S::kLayout;
  const int sk = p.seqlen_k;
  const int tiles_per_head = (sk + S::kBlockN - 1) / S::kBlockN;
  RingCursor<S::kStages> at;
  uint32_t q_parity = 0u;
  const StageShare share = stageShare<C>(C::kv_multicast ? clusterCtaRank() : 0);
  int ready_head = -1; // (fused widening: the kv head whose images were last seen complete)
  auto produceTile = [&](const WorkTile w) {
    const int m0 = w.m0(), head_q = w.headQ(p), head_kv = w.headKv(p);
    const int n_tiles = workTileKeyTiles<C, S::kBlockN>(p, w.key_m_block * w.rows);
    if constexpr (C::persistent || C::kv_tensor_map) {
      // (the consumers of the previous work tile have released Q; the first wait passes)
      mbarrierWait(cta.bar_q_empty, q_parity ^ 1u);
      if constexpr (S::kHandsOutWork)
        publishWorkTile(cta.work_slot + 4 * q_parity, w, p, at); // (released by the arrive on bar_q below)
      if (C::kv_multicast && m0 >= p.seqlen_q) { // (a pair's empty second half: no Q image to copy)
        mbarrierArrive(cta.bar_q);
      } else {
        mbarrierArriveExpectTx(cta.bar_q, static_cast<uint32_t>(L.q_bytes));
        if constexpr (C::kv_tensor_map)
          tensorMapLoadTile<S::kHeadDim, S::kBlockRows>(cta.base + L.q_offset, &maps->q, m0, w.hq, w.b, cta.bar_q);
        else
          bulkCopyG2S(cta.base + L.q_offset, qImage<S>(p, head_q, w.m_block), static_cast<uint32_t>(L.q_bytes),
                      cta.bar_q);
      }
      q_parity ^= 1u;
    }
    if constexpr (S::kOneThreadProducer) {
      // One thread moves each stage: its prewidened image by bulk copies, or K and V by tensor maps.
      const uint8_t *images = reinterpret_cast<const uint8_t *>(p.kv_tiles) +
                              static_cast<int64_t>(head_kv) * tiles_per_head * static_cast<int64_t>(L.stage_bytes);
      const int hkv = w.hkv(p); // (a division: once per work tile)
      if constexpr (C::fused_widening)
        awaitKvHeadWidened<C, S>(p, head_kv, ready_head);
      for (int tile = 0; tile < n_tiles; ++tile, at.advance()) {
        const int stage = at.stage;
        mbarrierWait(cta.bar_empty + 8 * stage, at.parity ^ 1u);
        if constexpr (C::ablation == StageAblation::SkipLoads)
          mbarrierArrive(cta.bar_full + 8 * stage);
        else if constexpr (C::kv_tensor_map)
          loadKvByTensorMaps<S>(cta, maps, stage, tile * S::kBlockN, hkv, w.b);
        else
          copyKvImage<C, S>(cta, stage, images + static_cast<int64_t>(tile) * L.stage_bytes, share);
      }
    } else {
      // In-kernel widening (FP8-fed routes): every producer thread widens its share of each tile.
      const KvHeadSources src = kvHeadSources<C>(p, w.b, w.hkv(p), head_kv);
      [[maybe_unused]] const float pre = exp2Int(-C::qk_widen_shift);
      for (int tile = 0; tile < n_tiles; ++tile, at.advance()) {
        const int stage = at.stage;
        mbarrierWait(cta.bar_empty + 8 * stage, at.parity ^ 1u);
        uint8_t *k_tile = cta.smem + L.k_offset + stage * L.stage_stride;
        uint8_t *v_tile = cta.smem + L.v_offset + stage * L.stage_stride;
        const int key0 = tile * S::kBlockN;
        const int k_valid = sk - key0 < S::kBlockN ? sk - key0 : S::kBlockN;
        if constexpr (C::ablation != StageAblation::SkipLoads)
          produceKvTile<C, S::kHeadDim, S::kBlockN>(k_tile, v_tile, src, p, key0, k_valid, pre, ptid);
        fenceProxyAsyncShared();
        mbarrierArrive(cta.bar_full + 8 * stage);
      }
    }
  };
  if constexpr (C::fused_widening)
    receiveWidenedTiles<C>(p, WidenerBuffers{cta.base + static_cast<uint32_t>(cta.widen_offset)}, produceTile);
  else if constexpr (S::kHandsOutWork)
    handOutWorkTiles<C, S>(p, produceTile);
  else
    forEachWorkTile<C, S>(p, produceTile);
  if constexpr (S::kHandsOutWork) {
    // The end (m-block -1), once the consumers have released the last tile's Q (q_empty).
    mbarrierWait(cta.bar_q_empty, q_parity ^ 1u);
    publishEnd(cta.work_slot + 4 * q_parity);
    mbarrierArrive(cta.bar_q);
    if constexpr (!C::fused_widening) // (the widener warps took the tickets: they finish)
      finishHandingOut(p);
  }
  if constexpr (C::fused_widening)
    finishWidening(p, WidenerBuffers{cta.base + static_cast<uint32_t>(cta.widen_offset)});
  if constexpr (C::kv_multicast) {
    // Every stage's last release, the peer's consumers' remote arrives included, before this CTA
    // may finish (cluster.cuh); a stage never filled passes at once.
    for (int s = 0; s < S::kStages; ++s, at.advance())
      mbarrierWait(cta.bar_empty + 8 * at.stage, at.parity ^ 1u);
  }
}

} // namespace fa4jit::device::attention_sm90
