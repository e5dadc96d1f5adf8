#pragma once
// One consumer warpgroup's main loop over the K/V ring (64 query rows). Two orders, chosen by the
// config's `overlap`:
//   serial:  per tile, S = QK^T, wait, softmax and P, O += P V^T, wait, release the stage;
//   overlap: S_j = QK^T_j and O += P_{j-1} V^T_{j-1} are issued together, O taking tile
//            j-1's factor between the two; the per-element softmax of tile j runs while
//            PV_{j-1} is still in the tensor core; the packing of P_j into the A registers
//            waits for it (FlashAttention-3's intra-warpgroup overlap). A consumer then holds
//            two stages, so stages >= 2.
// The numerics are the same in both: the same P and l for each tile in the same order.
// `ablation` (config.cuh) leaves one stage out or runs it twice, for leave-one-out timing; such
// kernels compute garbage on purpose:
// fa4jit bench --routes nvfp8,directp --head-dims 128 --variants default,skip-loads,skip-qk,skip-softmax,skip-pv,softmax-twice
// The MMAs it issues are in consumer_mma.cuh, the two softmax phases in consumer_softmax.cuh.
#include "fa4jit/attention/config.cuh"
#include "fa4jit/attention/p_directp.cuh"
#include "fa4jit/attention/softmax.cuh"
#include "fa4jit/attention_sm90/cluster.cuh"
#include "fa4jit/attention_sm90/consumer_mma.cuh"
#include "fa4jit/attention_sm90/consumer_softmax.cuh"
#include "fa4jit/attention_sm90/layout.cuh"
#include "fa4jit/attention_sm90/sync.cuh"
#include "fa4jit/attention_sm90/wgmma.cuh"

namespace fa4jit::device::attention_sm90 {

using attention::AttentionTraits;
using attention::PendingP;
using attention::StageAblation;

// S for one tile (or, in the SkipQk variant, registers the compiler cannot see through).
template <class C, int kHeadDim, int kBlockN, class Scores>
FA4JIT_DEVICE void issueScores(Scores &s, uint32_t q_lo, uint32_t k_lo) {
  if constexpr (C::ablation == StageAblation::SkipQk) {
    attention::clearScores(s);
    sm90_fence_regs(s);
  } else {
    issueQK<C, kHeadDim, kBlockN>(s, q_lo, k_lo);
  }
}

template <class C, int kHeadDim, int kBlockN>
FA4JIT_DEVICE void issueValues(float (&o)[OAccumulator<C>::kTiles][4], const uint32_t (&pa)[POperand<C>::kSteps][4],
                               uint32_t v_lo) {
  if constexpr (C::ablation != StageAblation::SkipPv)
    issuePV<C, kHeadDim, kBlockN>(o, pa, v_lo);
}

// Ring addresses of one stage (Sm90Layout offsets from the aligned shared-memory base): the
// descriptor low words of its K and V^T tiles (smem_desc.cuh) and its mbarriers.
struct RingView {
  uint32_t base, k_offset, v_offset, stage_stride, bar_full, bar_empty;
  FA4JIT_DEVICE uint32_t k(int stage) const { return sw128DescriptorLo(base + k_offset) + stage * (stage_stride >> 4); }
  FA4JIT_DEVICE uint32_t v(int stage) const { return sw128DescriptorLo(base + v_offset) + stage * (stage_stride >> 4); }
  FA4JIT_DEVICE uint32_t full(int stage) const { return bar_full + 8 * stage; }
  FA4JIT_DEVICE uint32_t empty(int stage) const { return bar_empty + 8 * stage; }
};

// The consumers' turn-taking (config `pingpong`, FlashAttention-3's warp-scheduler barriers; in the
// overlapped loop one issue point per tile, in the serial loop two: its QK^T and its PV):
// before each wgmma issue point a consumer waits on its own named barrier, after it it arrives on
// the next consumer's (round robin over the two or three), so the tensor core serves them in turn
// and one's softmax meets the others' MMAs. Every consumer has `points` issue points; the last one
// arrives once up front (consumer 0 goes first) and skips its last arrive, so every barrier phase
// is completed and none is left pending at the end of a work tile. `on` is the work tile's
// decision, the same in every consumer: they take turns only when their tile counts are equal
// (always without causal masking, where the kernel runs every tile in each; with it, when all
// consumers' last rows end in the same tile).
struct PingPong {
  int consumer, consumers, points, done;
  bool on;
  static constexpr int kThreads = 2 * kWarpgroupThreads; // one consumer syncs, the previous arrives
  FA4JIT_DEVICE static int barrierOf(int c) { return 1 + c; }
  FA4JIT_DEVICE void start() const {
    if (on && consumer == consumers - 1 && points > 0)
      namedBarrierArrive(barrierOf(0), kThreads);
  }
  FA4JIT_DEVICE void beforeIssue() const {
    if (on)
      namedBarrierSync(barrierOf(consumer), kThreads);
  }
  FA4JIT_DEVICE void afterIssue() {
    ++done;
    if (on && (consumer != consumers - 1 || done < points)) {
      uint32_t tid; // (read again: held across the loop, the id was what ptxas spilled)
      asm volatile("mov.u32 %0, %%tid.x;" : "=r"(tid));
      const int next = static_cast<int>(tid / kWarpgroupThreads) % consumers; // (consumer c is warpgroup c + 1)
      namedBarrierArrive(barrierOf(next), kThreads);
    }
  }
};


// Pins the results of a tile's softmax phase A (S in place, Direct-P's pending selectors and
// tables, l) ahead of the wait for the previous PV in the compiler's (NVVM's) order: the wait is
// an asm statement and the softmax plain arithmetic, which it could otherwise sink below it. These
// empty asm statements emit no PTX, so they do not bind ptxas; softmaxTile's branch does.
template <class CV>
FA4JIT_DEVICE void fenceSoftmaxResults(attention::ScoreRegs<CV> &s, PendingP<CV> &pp, attention::SoftmaxRows &st) {
  sm90_fence_regs(s);
  fencePendingP<CV>(pp);
  asm volatile("" : "+f"(st.l[0]), "+f"(st.l[1])::"memory");
}

// The stage's buffers may be refilled: one arrive per consumer warp, with kv_multicast on the
// empty mbarriers of both CTAs of the cluster (both producers write into this CTA's stage).
template <class C> FA4JIT_DEVICE void releaseStage(const RingView &ring, int stage, int lane) {
  __syncwarp();
  if (lane == 0) {
    if constexpr (C::kv_multicast) {
      mbarrierArriveCluster(ring.empty(stage), 0);
      mbarrierArriveCluster(ring.empty(stage), 1);
    } else {
      mbarrierArrive(ring.empty(stage));
    }
  }
}

// The persistent kernel's Q buffer may be refilled once this consumer's last QK^T of the work
// tile has completed (one arrive per consumer warp on the q_empty mbarrier): the producer then
// loads the next work tile's Q while the consumers finish their softmax, PV and epilogue.
// `bar` is 0 in the kernel without a next work tile, which has nothing to signal.
struct QRelease {
  uint32_t bar;
  FA4JIT_DEVICE void arrive(int lane) const {
    if (bar == 0u)
      return;
    __syncwarp();
    if (lane == 0)
      mbarrierArrive(bar);
  }
};

// O *= the pending factor, then O += P V^T: the rescale writes O after the wgmma fence of the
// issue before it, so PV needs its own (PTX: a register an mma_async reads must not be written
// between the fence and it).
template <class C, int kHeadDim, int kBlockN>
FA4JIT_DEVICE void rescaleAndIssueValues(float (&o)[OAccumulator<C>::kTiles][4],
                                         const uint32_t (&pa)[POperand<C>::kSteps][4], uint32_t v_lo,
                                         const float (&o_scale)[2]) {
  attention::rescaleRows(o, o_scale);
  sm90_fence_regs(o);
  sm90_wgmma_fence();
  issueValues<C, kHeadDim, kBlockN>(o, pa, v_lo);
}

// One overlapped step (tile >= 1): S_j and PV_{j-1} issued together; the per-element softmax
// of tile j runs while PV_{j-1} still reads P_{j-1}; once it has completed, P_j is packed into
// the same registers (FlashAttention-3's order). O's factor of tile j-1 (`o_scale`, from its
// softmax) is applied between the two issues, while S_j is in the tensor core and no wgmma holds
// O (PV_{j-2} completed in the previous step): the same products in the same order as rescaling
// right after PV_{j-2}, but off the path from PV_{j-1}'s completion to the next issue. The step
// leaves tile j's factor in `o_scale` for the next one (or the last PV).
// `at` is tile j's ring position, `prev` tile j-1's stage; `q_done` is the Q release of the work
// tile's last S (a default QRelease for the other tiles).
template <class C, class CV, int kHeadDim, int kBlockN, int kStages>
FA4JIT_DEVICE void overlapStep(int tile, RingCursor<kStages> at, int prev, attention::ScoreRegs<CV> &s,
                               float (&o)[OAccumulator<C>::kTiles][4], uint32_t (&pa)[POperand<C>::kSteps][4],
                               PendingP<CV> &pp, attention::SoftmaxRows &st, const RingView &ring, uint32_t q_lo,
                               const ConsumerRows &rows, PingPong &turns, QRelease q_done, float (&o_scale)[2]) {
  const int stage = at.stage;
  mbarrierWait(ring.full(stage), at.parity);
  sm90_fence_regs(o);
  sm90_fence_regs(pa);
  if constexpr (C::pingpong)
    turns.beforeIssue();
  sm90_wgmma_fence();
  issueScores<C, kHeadDim, kBlockN>(s, q_lo, ring.k(stage));
  sm90_wgmma_commit();
  rescaleAndIssueValues<C, kHeadDim, kBlockN>(o, pa, ring.v(prev), o_scale);
  sm90_wgmma_commit();
  if constexpr (C::pingpong)
    turns.afterIssue();
  sm90_wgmma_wait<1>(); // S_j is complete; PV_{j-1} may still run
  sm90_fence_regs(s);
  q_done.arrive(rows.lane);
  softmaxStage<C, CV>(s, pp, st, o_scale, rows, tile * kBlockN, false);
  fenceSoftmaxResults<CV>(s, pp, st); // the per-element work stays ahead of the wait below
  sm90_wgmma_wait<0>();
  sm90_fence_regs(o);
  sm90_fence_regs(pa); // P_{j-1} stays live until its wgmma has read it
  releaseStage<C>(ring, prev, rows.lane);
  packP<C, CV>(pa, pp, s, st);
}

// A consumer without rows in a kernel whose consumers always take turns (non-causal ping-pong):
// per tile it waits for the stage, passes the issue points the computing consumers have (two per
// tile on the serial loop; on the overlapped one the first QK^T, one per further tile and the
// last PV) and releases the stage, so the others' turns run as in a full work tile.
template <class C, int kStages>
FA4JIT_DEVICE void passTurns(const RingView &ring, int n_tiles, const ConsumerRows &rows, int consumer,
                             bool take_turns, int first, QRelease q_release) {
  RingCursor<kStages> at = RingCursor<kStages>::of(first);
  const int points = C::overlap ? (n_tiles > 0 ? n_tiles + 1 : 0) : 2 * n_tiles;
  PingPong turns{consumer, consumerWarpgroups(C::block_m), points, 0, take_turns};
  turns.start();
  q_release.arrive(rows.lane);
  for (int tile = 0; tile < n_tiles; ++tile, at.advance()) {
    mbarrierWait(ring.full(at.stage), at.parity);
    const int tile_points = C::overlap ? 1 + (tile == n_tiles - 1 ? 1 : 0) : 2;
    for (int i = 0; i < tile_points; ++i) {
      turns.beforeIssue();
      turns.afterIssue();
    }
    releaseStage<C>(ring, at.stage, rows.lane);
  }
}

// Runs this consumer over one work tile's K/V tiles [0, n_tiles), which start at the ring's
// `first`-th tile: computes the first n_mine of them (the causal limit of its rows), releases
// every one, and releases Q once its last S is complete; `idle` (no rows, non-causal ping-pong):
// only passTurns. (The ring position is a local cursor from `first`: carried across work tiles,
// ptxas kept it out of the uniform registers and the stage's descriptors cost an R2UR each.)
template <class C, class CV, int kHeadDim, int kBlockN, int kStages>
FA4JIT_DEVICE void consumeTiles(float (&o)[OAccumulator<C>::kTiles][4], attention::SoftmaxRows &st, const RingView &ring,
                                uint32_t q_lo, int n_mine, int n_tiles, const ConsumerRows &rows,
                                int consumer, bool take_turns, int first, QRelease q_release, bool idle) {
  if constexpr (C::pingpong && !C::causal) {
    if (idle) {
      passTurns<C, kStages>(ring, n_tiles, rows, consumer, take_turns, first, q_release);
      return;
    }
  }
  RingCursor<kStages> at = RingCursor<kStages>::of(first);
  attention::ScoreRegs<CV> s; // FP32, or FP16 pairs with scores_fp16 (score_tile.cuh)
  uint32_t pa[POperand<C>::kSteps][4];
  PendingP<CV> pp;
  float o_scale[2];
  if constexpr (!C::overlap) {
    // Issue points with ping-pong: each tile's QK^T and its PV (the consumers alternate on both).
    PingPong turns{consumer, consumerWarpgroups(C::block_m), 2 * n_mine, 0, take_turns};
    if constexpr (C::pingpong)
      turns.start();
    for (int tile = 0; tile < n_mine; ++tile, at.advance()) {
      const int stage = at.stage;
      mbarrierWait(ring.full(stage), at.parity);
      sm90_fence_regs(s);
      if constexpr (C::pingpong)
        turns.beforeIssue();
      sm90_wgmma_fence();
      issueScores<C, kHeadDim, kBlockN>(s, q_lo, ring.k(stage));
      sm90_wgmma_commit();
      if constexpr (C::pingpong)
        turns.afterIssue();
      sm90_wgmma_wait<0>();
      sm90_fence_regs(s);
      if (tile == n_mine - 1)
        q_release.arrive(rows.lane);
      softmaxStage<C, CV>(s, pp, st, o_scale, rows, tile * kBlockN, tile == 0);
      packP<C, CV>(pa, pp, s, st);
      attention::rescaleRows(o, o_scale);
      sm90_fence_regs(o);
      sm90_fence_regs(pa);
      if constexpr (C::pingpong)
        turns.beforeIssue();
      sm90_wgmma_fence();
      issueValues<C, kHeadDim, kBlockN>(o, pa, ring.v(stage));
      sm90_wgmma_commit();
      if constexpr (C::pingpong)
        turns.afterIssue();
      sm90_wgmma_wait<0>();
      sm90_fence_regs(o);
      sm90_fence_regs(pa);
      releaseStage<C>(ring, stage, rows.lane);
    }
  } else if (n_mine > 0) {
    static_assert(kStages >= 2, "overlap holds two stages per consumer");
    // Issue points: the first QK^T, one per further tile, the last PV.
    PingPong turns{consumer, consumerWarpgroups(C::block_m), n_mine + 1, 0, take_turns};
    if constexpr (C::pingpong)
      turns.start();
    mbarrierWait(ring.full(at.stage), at.parity);
    sm90_fence_regs(s);
    if constexpr (C::pingpong)
      turns.beforeIssue();
    sm90_wgmma_fence();
    issueScores<C, kHeadDim, kBlockN>(s, q_lo, ring.k(at.stage));
    sm90_wgmma_commit();
    if constexpr (C::pingpong)
      turns.afterIssue();
    sm90_wgmma_wait<0>();
    sm90_fence_regs(s);
    if (n_mine == 1)
      q_release.arrive(rows.lane);
    softmaxStage<C, CV>(s, pp, st, o_scale, rows, 0, true); // (O is still zero: its factor leaves it so)
    packP<C, CV>(pa, pp, s, st);
    int prev = at.stage;
    at.advance();
    for (int tile = 1; tile < n_mine; ++tile, at.advance()) {
      overlapStep<C, CV, kHeadDim, kBlockN, kStages>(tile, at, prev, s, o, pa, pp, st, ring, q_lo, rows, turns,
                                                     tile == n_mine - 1 ? q_release : QRelease{0u}, o_scale);
      prev = at.stage;
    }
    const int last = prev;
    sm90_fence_regs(o);
    sm90_fence_regs(pa);
    if constexpr (C::pingpong)
      turns.beforeIssue();
    rescaleAndIssueValues<C, kHeadDim, kBlockN>(o, pa, ring.v(last), o_scale);
    sm90_wgmma_commit();
    if constexpr (C::pingpong)
      turns.afterIssue();
    sm90_wgmma_wait<0>();
    sm90_fence_regs(o);
    sm90_fence_regs(pa);
    releaseStage<C>(ring, last, rows.lane);
  }
  if (n_mine <= 0) // no row of this consumer sees a key: Q is not read at all
    q_release.arrive(rows.lane);
  // Tiles beyond this consumer's causal limit: nothing to compute, the stage is still released.
  for (int tile = n_mine; tile < n_tiles; ++tile, at.advance()) {
    mbarrierWait(ring.full(at.stage), at.parity);
    releaseStage<C>(ring, at.stage, rows.lane);
  }
}

} // namespace fa4jit::device::attention_sm90
