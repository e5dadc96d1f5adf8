#pragma once
// Warpgroups 1 and 2 of the wgmma attention kernel: for each work tile of the CTA (work_tiles.cuh)
// a consumer takes its 64 query rows through the ring (consumer.cuh) and writes O and the LSE of
// those rows (the mma.sync path's epilogue); in the persistent causal grid, for each work tile its
// producer hands out (work_tiles.cuh). The ring position and the Q phase run on across work
// tiles; with `persistent` the consumer releases Q (q_empty) as soon as its last S of the tile is
// complete, so the next tile's Q arrives during this tile's last softmax, PV and epilogue.
#include "fa4jit/attention/config.cuh"
#include "fa4jit/attention/epilogue.cuh"
#include "fa4jit/attention/params.cuh"
#include "fa4jit/attention/softmax.cuh"
#include "fa4jit/attention_sm90/consumer.cuh"
#include "fa4jit/attention_sm90/producer_role.cuh"
#include "fa4jit/attention_sm90/work_tiles.cuh"

namespace fa4jit::device::attention_sm90 {

// This thread's consumer warpgroup, read again from %tid.x: a volatile read is not hoisted out of
// the work-tile loop, so the index is not one more value held (or, with 160 registers, spilled)
// across it.
struct ConsumerThread {
  int c, ctid; // consumer warpgroup, thread within it
};
FA4JIT_DEVICE ConsumerThread consumerThreadNow() {
  uint32_t tid;
  asm volatile("mov.u32 %0, %%tid.x;" : "=r"(tid));
  const int wg = __shfl_sync(0xffffffffu, static_cast<int>(tid / kWarpgroupThreads), 0);
  return {wg - 1, static_cast<int>(tid) - wg * kWarpgroupThreads};
}

// O's factor of the head's V (NUMERICS.md §2): s_v (nvfp8), 2^v_shift (directp), 1 (bf16).
template <class C> FA4JIT_DEVICE float outputFactor(const attention::AttentionParams &p, int head_kv) {
  if constexpr (C::route == attention::Route::Nvfp8)
    return reinterpret_cast<const float *>(p.v_scale)[head_kv];
  else if constexpr (C::route == attention::Route::DirectP)
    return exp2Int(reinterpret_cast<const int32_t *>(p.v_shift)[head_kv]);
  else
    return 1.0f;
}

template <class C, class S> FA4JIT_DEVICE void consumeWork(const attention::AttentionParams &p, const CtaBuffers &cta,
                                                           int c_launch, int ctid_launch) {
  using CV = typename S::CV;
  using T = typename S::T;
  constexpr Sm90Layout L = S::kLayout;
  const int lane_launch = ctid_launch % 32, warp_launch = ctid_launch / 32;
  const int sq = p.seqlen_q, sk = p.seqlen_k;
  const RingView ring{cta.base, static_cast<uint32_t>(L.k_offset), static_cast<uint32_t>(L.v_offset),
                      static_cast<uint32_t>(L.stage_stride), cta.bar_full, cta.bar_empty};
  const QRelease q_release{C::persistent ? cta.bar_q_empty : 0u};
  int ring_tiles = 0; // K/V tiles of the previous work tiles: where this one's start in the ring
  uint32_t q_parity = 0u;
  // ring_first: where the work tile's K/V tiles start in the ring (handed-out tiles: from the slot).
  auto consumeTile = [&](const WorkTile w, int ring_first) {
    int c = c_launch, lane = lane_launch, warp = warp_launch;
    if constexpr (S::kHandsOutWork) {
      const ConsumerThread me = consumerThreadNow();
      c = me.c, lane = me.ctid % 32, warp = me.ctid / 32;
    }
    const int g = lane / 4;
    const int m0 = w.m0(), head_q = w.headQ(p), head_kv = w.headKv(p);
    const int n_tiles = workTileKeyTiles<C, S::kBlockN>(p, w.key_m_block * w.rows); // (multicast: the pair's)
    const int row_base = m0 + c * kRowsPerConsumer + warp * 16;
    const int wg_row0 = m0 + c * kRowsPerConsumer;
    // Keys consumer cc's rows see. With non-causal ping-pong every consumer counts every tile, even
    // one whose rows all lie beyond seqlen_q (a ragged last m-block), so that they always take turns
    // (a turn decision known at compile time: ptxas keeps one issue path); such a consumer only
    // passes its turns and releases the stages (`idle` below). Causal consumers take turns when
    // their counts agree.
    auto consumerKeys = [&](int cc) {
      const int row0 = m0 + cc * kRowsPerConsumer;
      const int last = (sq < row0 + kRowsPerConsumer ? sq : row0 + kRowsPerConsumer) - 1;
      return (row0 < sq || (C::pingpong && !C::causal)) ? attention::visibleKeys<C::causal>(last, sq, sk) : 0;
    };
    const int wg_keys = consumerKeys(c);
    const int wg_unmasked = attention::visibleKeys<C::causal>(wg_row0, sq, sk);
    const int vis[2] = {attention::visibleKeys<C::causal>(row_base + g, sq, sk),
                        attention::visibleKeys<C::causal>(row_base + g + 8, sq, sk)};

    float score_mul = C::score_scale; // the bf16 route's (no per-head scales)
    if constexpr (!S::kBf16) {
      const float gq = reinterpret_cast<const float *>(p.q_global_scale)[head_q];
      const float gk = reinterpret_cast<const float *>(p.k_global_scale)[head_kv];
      score_mul = (gq * gk) * C::score_scale; // NUMERICS.md §2.1: this order, in FP32
    }

    float o[OAccumulator<C>::kTiles][4]; // with mma_row_sum, one more n8 tile: l in its column 0
#pragma unroll
    for (int dt = 0; dt < OAccumulator<C>::kTiles; ++dt)
      o[dt][0] = o[dt][1] = o[dt][2] = o[dt][3] = 0.0f;
    attention::SoftmaxRows st;
    attention::softmaxInit(st);

    // FP16 scores form y in FP16 on the unmasked arm, with the multiplier in FP16, and in FP32 on
    // the masked one (NUMERICS.md §2.3): a head whose multiplier (or, with the pieces folded onto
    // S, a piece's slope times it) overflows FP16 runs every tile there.
    const float mul = scoreMultiplier(score_mul);
    constexpr DirectPCoefficients kCoef = C::classifier; // (a copy: the member has no device definition)
    const bool fp16_mul = !attention::ScoreTile<CV>::kFp16 ||
                          directpHalfMultiplierFits(kCoef, mul, attention::PiecesFromScoresOf<CV>::value);
    const ConsumerRows rows{mul, {vis[0], vis[1]}, fp16_mul ? wg_unmasked : 0, lane};
    const int n_mine = (wg_keys + S::kBlockN - 1) / S::kBlockN;
    bool same_tiles = true; // every consumer of the CTA runs as many tiles as this one
#pragma unroll
    for (int cc = 0; cc < S::kConsumers; ++cc)
      same_tiles = same_tiles && (consumerKeys(cc) + S::kBlockN - 1) / S::kBlockN == n_mine;
    const bool take_turns = C::pingpong && same_tiles;
    // (formed here, not captured: the compiler then keeps it in a uniform register)
    const uint32_t q_lo = consumerQDescriptorLo<S::kBlockRows>(cta.base + L.q_offset, c * kRowsPerConsumer);
    mbarrierWait(cta.bar_q, q_parity);
    q_parity ^= 1u;
    // (a consumer whose rows all lie past sq skips its tiles' math: computed on zero Q rows, a 64-row
    // last block of three consumers would cost as much as a full one)
    const bool idle = C::pingpong && !C::causal && wg_row0 >= sq;
    consumeTiles<C, CV, S::kHeadDim, S::kBlockN, S::kStages>(o, st, ring, q_lo, n_mine, n_tiles, rows, c, take_turns,
                                                             ring_first, q_release, idle);
    if constexpr (!S::kHandsOutWork)
      ring_tiles += n_tiles;

    // The epilogue reads its thread, rows and V factor again (handed-out tiles: their tile too,
    // see receiveWorkTiles) instead of holding them across the main loop: with three consumers
    // of 160 registers those values were what ptxas spilled (NVRTC 13.0: directp D128 on 128-key
    // tiles with FP16 scores, 16 bytes, one reload per tile in the loop).
    WorkTile we = w;
    if constexpr (S::kHandsOutWork)
      we = readWorkTile<C>(p, cta.work_slot + 4 * (q_parity ^ 1u));
    const ConsumerThread mine = consumerThreadNow();
    const int lane_e = mine.ctid % 32;
    const int row_base_e = we.m0() + mine.c * kRowsPerConsumer + mine.ctid / 32 * 16;
    const int head_q_e = we.headQ(p);
    const float out_e = S::kBf16 ? 1.0f : outputFactor<C>(p, we.headKv(p));
    uint16_t *o_rows = reinterpret_cast<uint16_t *>(p.o) + we.b * p.o_batch_stride + we.hq * p.o_head_stride +
                       row_base_e * p.o_row_stride;
    float *lse_rows = p.lse == 0 ? nullptr
                                 : reinterpret_cast<float *>(p.lse) + static_cast<int64_t>(head_q_e) * sq + row_base_e;
    if constexpr (C::mma_row_sum) {
      // l of rows g and g + 8 is O's column head_dim: held by the quad's lane 0 (2q + i = 0), so
      // the epilogue's quad sum of st.l gives it to all four.
      st.l[0] = lane_e % 4 == 0 ? o[T::kOTiles][0] : 0.0f;
      st.l[1] = lane_e % 4 == 0 ? o[T::kOTiles][2] : 0.0f;
    }
    attention::writeOutput<CV>(reinterpret_cast<float(&)[T::kOTiles][4]>(o), st, out_e, o_rows, p.o_row_stride,
                               lse_rows, row_base_e, sq, lane_e, p.o_fp16 != 0);
  };
  if constexpr (S::kHandsOutWork)
    receiveWorkTiles<C>(p, cta.work_slot, cta.bar_q, q_parity, consumeTile);
  else
    forEachWorkTile<C, S>(p, [&](const WorkTile w) { consumeTile(w, ring_tiles); });
}

} // namespace fa4jit::device::attention_sm90
