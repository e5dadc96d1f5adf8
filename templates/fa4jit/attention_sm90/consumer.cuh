#pragma once
// One consumer warpgroup's main loop over the K/V ring (64 query rows). Two orders, chosen by the
// config's `overlap`:
//   serial:  per tile, S = QK^T, wait, softmax and P, O += P V^T, wait, release the stage;
//   overlap: S_j = QK^T_j and O += P_{j-1} V^T_{j-1} are issued together; the per-element
//            softmax of tile j runs while PV_{j-1} is still in the tensor core; the O rescale
//            and the packing of P_j into the A registers wait for it (FlashAttention-3's
//            intra-warpgroup overlap). A consumer then holds two stages, so stages >= 2.
// The numerics are the same in both: the same P and l for each tile in the same order.
// `ablation` (config.cuh) leaves one stage out or runs it twice, for the timing table of
// docs/PERF.md; such kernels compute garbage on purpose.
#include "fa4jit/attention/config.cuh"
#include "fa4jit/attention/p_bf16.cuh"
#include "fa4jit/attention/p_nvfp8.cuh"
#include "fa4jit/attention/scores.cuh"
#include "fa4jit/attention_sm90/layout.cuh"
#include "fa4jit/attention/p_directp.cuh"
#include "fa4jit/attention/softmax.cuh"
#include "fa4jit/attention_sm90/smem_desc.cuh"
#include "fa4jit/attention_sm90/sync.cuh"
#include "fa4jit/attention_sm90/wgmma.cuh"
#include "fa4jit/attention_sm90/wgmma_bf16.cuh"

namespace fa4jit::device::attention_sm90 {

using attention::AttentionTraits;
using attention::PendingP;
using attention::StageAblation;

// The P register operand of PV: k-steps of 32 keys (E4M3, k32) or 16 keys (BF16, k16), four
// registers each; either way one k-step is 32 bytes of a K-major shared-memory row.
template <class C> struct POperand {
  static constexpr bool kBf16 = C::route == attention::Route::Bf16;
  static constexpr int kSteps = C::block_n / (kBf16 ? 16 : 32);
  static constexpr int kQkSteps = C::head_dim / (kBf16 ? 16 : 32); // k-steps of QK^T
};

// A consumer's O accumulator: head_dim / 8 n8 tiles, and with mma_row_sum one more whose column 0
// is l (the PV product with V^T's ones row).
template <class C> struct OAccumulator {
  static constexpr int kTiles = C::head_dim / 8 + (C::mma_row_sum ? 1 : 0);
};

// O (+)= P V for one consumer: P A fragments per k-step, V^T tile [D][block_n] (kb = k-step).
template <class C, int kHeadDim, int kBlockN>
FA4JIT_DEVICE void issuePV(float (&o)[OAccumulator<C>::kTiles][4], const uint32_t (&pa)[POperand<C>::kSteps][4],
                           uint32_t v_addr) {
#pragma unroll
  for (int kb = 0; kb < POperand<C>::kSteps; ++kb) {
    const uint64_t desc = operandDescriptor<kHeadDim>(v_addr, 0, kb);
    if constexpr (C::mma_row_sum) { // N = head_dim + 8: V^T's rows continue into the row-sum rows
      if constexpr (kHeadDim == 64)
        sm90_wgmma_m64n72k32_f32_e4m3_rs(o, pa[kb], desc, 1);
      else
        sm90_wgmma_m64n136k32_f32_e4m3_rs(o, pa[kb], desc, 1);
    } else if constexpr (POperand<C>::kBf16) {
      if constexpr (kHeadDim == 64)
        sm90_wgmma_m64n64k16_f32_bf16_rs(o, pa[kb], desc, 1);
      else if constexpr (kHeadDim == 128)
        sm90_wgmma_m64n128k16_f32_bf16_rs(o, pa[kb], desc, 1);
      else
        sm90_wgmma_m64n256k16_f32_bf16_rs(o, pa[kb], desc, 1);
    } else {
      if constexpr (kHeadDim == 64)
        sm90_wgmma_m64n64k32_f32_e4m3_rs(o, pa[kb], desc, 1);
      else if constexpr (kHeadDim == 128)
        sm90_wgmma_m64n128k32_f32_e4m3_rs(o, pa[kb], desc, 1);
      else
        sm90_wgmma_m64n256k32_f32_e4m3_rs(o, pa[kb], desc, 1);
    }
  }
}

// One k-step of S = Q K^T; the first (kk == 0) overwrites S through write-only operands: the
// softmax's in-place writes to S's registers then feed no wgmma, which ptxas would otherwise
// serialize (C7513) whenever another wgmma is in flight during that softmax.
template <class C, int kBlockN>
FA4JIT_DEVICE void issueQKStep(float (&s)[kBlockN / 8][4], uint64_t a, uint64_t b, int kk) {
  if constexpr (POperand<C>::kBf16) {
    if constexpr (kBlockN == 64) {
      if (kk == 0)
        sm90_wgmma_m64n64k16_f32_bf16_ss_zero(s, a, b);
      else
        sm90_wgmma_m64n64k16_f32_bf16_ss(s, a, b, 1);
    } else {
      if (kk == 0)
        sm90_wgmma_m64n128k16_f32_bf16_ss_zero(s, a, b);
      else
        sm90_wgmma_m64n128k16_f32_bf16_ss(s, a, b, 1);
    }
  } else {
    if constexpr (kBlockN == 64) {
      if (kk == 0)
        sm90_wgmma_m64n64k32_f32_e4m3_ss_zero(s, a, b);
      else
        sm90_wgmma_m64n64k32_f32_e4m3_ss(s, a, b, 1);
    } else {
      if (kk == 0)
        sm90_wgmma_m64n128k32_f32_e4m3_ss_zero(s, a, b);
      else
        sm90_wgmma_m64n128k32_f32_e4m3_ss(s, a, b, 1);
    }
  }
}

// S = Q K^T for one consumer's 64 rows (q rows start at q_row0 of the Q tile).
template <class C, int kHeadDim, int kBlockN>
FA4JIT_DEVICE void issueQK(float (&s)[kBlockN / 8][4], uint32_t q_addr, int q_row0, uint32_t k_addr) {
#pragma unroll
  for (int kk = 0; kk < POperand<C>::kQkSteps; ++kk) {
    const uint64_t a = operandDescriptor<kBlockRows>(q_addr, q_row0, kk);
    const uint64_t b = operandDescriptor<kBlockN>(k_addr, 0, kk);
    issueQKStep<C, kBlockN>(s, a, b, kk);
  }
}

// What a consumer thread knows about its rows for the whole loop.
struct ConsumerRows {
  float score_mul;   // t = acc * score_mul (NUMERICS.md §2.1)
  int vis[2];        // visible keys of rows g and g + 8 of this warp
  int wg_unmasked;   // keys visible to every row of the warpgroup (tiles below need no mask)
  int lane;
};

// Phase A after the scaling and masking: the row max, then Direct-P's classification or the
// exponentiation (in place in S) with l.
template <class C, class CV>
FA4JIT_DEVICE void softmaxRest(float (&s)[AttentionTraits<CV>::kSTiles][4], PendingP<CV> &pp,
                               attention::SoftmaxRows &st, float (&o_scale)[2], const ConsumerRows &rows,
                               bool first_tile) {
  using T = AttentionTraits<CV>;
  constexpr bool kDirectP = C::route == attention::Route::DirectP;
  float block_max[T::kBlockN / 32][2], tile_max[2];
  attention::rowTileMax<CV, kDirectP>(s, block_max, tile_max);
  attention::advanceRowMax<CV>(st, s, tile_max, first_tile, rows.lane, o_scale);
  if constexpr (kDirectP)
    attention::classifyDirectP<CV, !C::mma_row_sum>(pp, s, block_max, st);
  else if constexpr (POperand<C>::kBf16)
    attention::exponentiateBf16<CV>(s, st);
  else
    attention::exponentiateNvfp8<CV>(s, st);
}

// Phase A of a tile's softmax: scale and mask S, advance the row max (o_scale: O's pending
// factor), classify (directp) or exponentiate in place (nvfp8, bf16), advance l except nvfp8's.
template <class C, class CV>
FA4JIT_DEVICE void softmaxTile(float (&s)[AttentionTraits<CV>::kSTiles][4], PendingP<CV> &pp,
                               attention::SoftmaxRows &st, float (&o_scale)[2], const ConsumerRows &rows, int key0,
                               bool first_tile) {
  using T = AttentionTraits<CV>;
  if constexpr (C::ablation == StageAblation::SkipSoftmax) {
    o_scale[0] = o_scale[1] = 1.0f;
    st.l[0] += 1.0f; // keeps l > 0, so the epilogue reads O and the compiler keeps every wgmma
    st.l[1] += 1.0f;
    return;
  }
  // Both arms run the whole phase, so that the exponentiation ends a basic block of its own. In
  // one block with the caller's wait for the previous PV (overlapStep), ptxas scheduled the wait
  // first and every exp2 of the tile after it: measured in the SASS of the nvfp8, directp and bf16
  // kernels (all 64 MUFU.EX2 per thread behind WARPGROUP.DEPBAR.LE gsb0, 0x0), so the softmax
  // never overlapped the PV. Split, they run before it.
  if (key0 + T::kBlockN > rows.wg_unmasked) {
    attention::scaleAndMask<CV, true>(s, rows.score_mul, rows.vis, key0, rows.lane);
    softmaxRest<C, CV>(s, pp, st, o_scale, rows, first_tile);
  } else {
    attention::scaleAndMask<CV, false>(s, rows.score_mul, rows.vis, key0, rows.lane);
    softmaxRest<C, CV>(s, pp, st, o_scale, rows, first_tile);
  }
}

template <class C, class CV>
FA4JIT_DEVICE void softmaxStage(float (&s)[AttentionTraits<CV>::kSTiles][4], PendingP<CV> &pp,
                                attention::SoftmaxRows &st, float (&o_scale)[2], const ConsumerRows &rows, int key0,
                                bool first_tile) {
  softmaxTile<C, CV>(s, pp, st, o_scale, rows, key0, first_tile);
  if constexpr (C::ablation == StageAblation::SoftmaxTwice) {
    sm90_fence_regs(s); // a second, opaque pass over the same registers
    softmaxTile<C, CV>(s, pp, st, o_scale, rows, key0, first_tile);
  }
}

// Phase B: the A fragments of P (after the PV that read the previous ones has completed).
template <class C, class CV>
FA4JIT_DEVICE void packP(uint32_t (&pa)[POperand<C>::kSteps][4], const PendingP<CV> &pp,
                         const float (&s)[AttentionTraits<CV>::kSTiles][4], attention::SoftmaxRows &st) {
  if constexpr (C::ablation == StageAblation::SkipSoftmax) {
    constexpr int kTiles = AttentionTraits<CV>::kSTiles;
#pragma unroll
    for (int kb = 0; kb < POperand<C>::kSteps; ++kb)
#pragma unroll
      for (int i = 0; i < 4; ++i) // not a plain copy: ptxas would coalesce P with S and serialize
        pa[kb][i] = __float_as_uint(s[(4 * kb + i) % kTiles][(4 * kb + i) / kTiles]) + 1u;
  } else if constexpr (C::route == attention::Route::DirectP) {
    attention::packDirectP<CV>(pa, pp);
  } else if constexpr (POperand<C>::kBf16) {
    attention::packBf16<CV>(pa, s);
  } else {
    attention::packNvfp8<CV, !C::mma_row_sum>(pa, s, st);
  }
}

// S for one tile (or, in the SkipQk variant, registers the compiler cannot see through).
template <class C, int kHeadDim, int kBlockN>
FA4JIT_DEVICE void issueScores(float (&s)[kBlockN / 8][4], uint32_t q_addr, int q_row0, uint32_t k_addr) {
  if constexpr (C::ablation == StageAblation::SkipQk) {
#pragma unroll
    for (int j = 0; j < kBlockN / 8; ++j)
      s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.0f;
    sm90_fence_regs(s);
  } else {
    issueQK<C, kHeadDim, kBlockN>(s, q_addr, q_row0, k_addr);
  }
}

template <class C, int kHeadDim, int kBlockN>
FA4JIT_DEVICE void issueValues(float (&o)[OAccumulator<C>::kTiles][4], const uint32_t (&pa)[POperand<C>::kSteps][4],
                               uint32_t v_addr) {
  if constexpr (C::ablation != StageAblation::SkipPv)
    issuePV<C, kHeadDim, kBlockN>(o, pa, v_addr);
}

// Ring addresses of one stage (Sm90Layout offsets from the aligned shared-memory base).
struct RingView {
  uint32_t base, k_offset, v_offset, stage_stride, bar_full, bar_empty;
  FA4JIT_DEVICE uint32_t k(int stage) const { return base + k_offset + stage * stage_stride; }
  FA4JIT_DEVICE uint32_t v(int stage) const { return base + v_offset + stage * stage_stride; }
  FA4JIT_DEVICE uint32_t full(int stage) const { return bar_full + 8 * stage; }
  FA4JIT_DEVICE uint32_t empty(int stage) const { return bar_empty + 8 * stage; }
};

// The consumers' turn-taking (config `pingpong`, FlashAttention-3's warp-scheduler barriers):
// before each wgmma issue point a consumer waits on its own named barrier, after it it arrives on
// the other's, so the tensor core alternates between them and one's softmax meets the other's
// MMAs. Both consumers have `points` issue points (the kernel gives them equal tile counts);
// consumer 1 arrives once up front (consumer 0 goes first) and skips its last arrive, so every
// barrier phase is completed and none is left pending at exit.
struct PingPong {
  int consumer, points, done;
  static constexpr int kThreads = 2 * kWarpgroupThreads;
  FA4JIT_DEVICE static int barrierOf(int c) { return 1 + c; }
  FA4JIT_DEVICE void start() const {
    if (consumer == 1 && points > 0)
      namedBarrierArrive(barrierOf(0), kThreads);
  }
  FA4JIT_DEVICE void beforeIssue() const { namedBarrierSync(barrierOf(consumer), kThreads); }
  FA4JIT_DEVICE void afterIssue() {
    ++done;
    if (consumer == 0 || done < points)
      namedBarrierArrive(barrierOf(1 - consumer), kThreads);
  }
};

// Phase parity of a tile's ring stage (one phase per pass over the ring).
template <int kStages> FA4JIT_DEVICE uint32_t ringParity(int tile) { return static_cast<uint32_t>(tile / kStages) & 1u; }

// Pins the results of a tile's softmax phase A (S in place, Direct-P's pending selectors and
// tables, l) ahead of the wait for the previous PV in the compiler's (NVVM's) order: the wait is
// an asm statement and the softmax plain arithmetic, which it could otherwise sink below it. These
// empty asm statements emit no PTX, so they do not bind ptxas; softmaxTile's branch does.
template <class CV>
FA4JIT_DEVICE void fenceSoftmaxResults(float (&s)[AttentionTraits<CV>::kSTiles][4], PendingP<CV> &pp,
                                       attention::SoftmaxRows &st) {
  sm90_fence_regs(s);
  if constexpr (CV::route == attention::Route::DirectP) {
#pragma unroll
    for (int b = 0; b < PendingP<CV>::kBlocks; ++b)
#pragma unroll
      for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j)
          asm volatile("" : "+r"(pp.sel[b][i][j]), "+r"(pp.fed[b][i][j])::"memory");
  }
  asm volatile("" : "+f"(st.l[0]), "+f"(st.l[1])::"memory");
}

// The stage's buffers may be refilled: one arrive per consumer warp.
FA4JIT_DEVICE void releaseStage(const RingView &ring, int stage, int lane) {
  __syncwarp();
  if (lane == 0)
    mbarrierArrive(ring.empty(stage));
}

// One overlapped step (tile >= 1): S_j and PV_{j-1} issued together; the per-element softmax
// of tile j runs while PV_{j-1} still reads P_{j-1}; once it has completed, O is rescaled and
// P_j packed into the same registers (FlashAttention-3's order).
template <class C, class CV, int kHeadDim, int kBlockN, int kStages>
FA4JIT_DEVICE void overlapStep(int tile, float (&s)[kBlockN / 8][4], float (&o)[OAccumulator<C>::kTiles][4],
                               uint32_t (&pa)[POperand<C>::kSteps][4], PendingP<CV> &pp, attention::SoftmaxRows &st,
                               const RingView &ring, uint32_t q_addr, int q_row0, const ConsumerRows &rows,
                               PingPong &turns) {
  const int stage = tile % kStages, prev = (tile - 1) % kStages;
  float o_scale[2];
  mbarrierWait(ring.full(stage), ringParity<kStages>(tile));
  sm90_fence_regs(o);
  sm90_fence_regs(pa);
  if constexpr (C::pingpong)
    turns.beforeIssue();
  sm90_wgmma_fence();
  issueScores<C, kHeadDim, kBlockN>(s, q_addr, q_row0, ring.k(stage));
  sm90_wgmma_commit();
  issueValues<C, kHeadDim, kBlockN>(o, pa, ring.v(prev));
  sm90_wgmma_commit();
  if constexpr (C::pingpong)
    turns.afterIssue();
  sm90_wgmma_wait<1>(); // S_j is complete; PV_{j-1} may still run
  sm90_fence_regs(s);
  softmaxStage<C, CV>(s, pp, st, o_scale, rows, tile * kBlockN, false);
  fenceSoftmaxResults<CV>(s, pp, st); // the per-element work stays ahead of the wait below
  sm90_wgmma_wait<0>();
  sm90_fence_regs(o);
  sm90_fence_regs(pa); // P_{j-1} stays live until its wgmma has read it
  releaseStage(ring, prev, rows.lane);
  attention::rescaleRows(o, o_scale);
  packP<C, CV>(pa, pp, s, st);
}

// Runs this consumer over tiles [0, n_tiles) of the ring: computes the first n_mine of them (the
// causal limit of its rows) and releases every one.
template <class C, class CV, int kHeadDim, int kBlockN, int kStages>
FA4JIT_DEVICE void consumeTiles(float (&o)[OAccumulator<C>::kTiles][4], attention::SoftmaxRows &st, const RingView &ring,
                                uint32_t q_addr, int q_row0, int n_mine, int n_tiles, const ConsumerRows &rows,
                                int consumer) {
  float s[kBlockN / 8][4];
  uint32_t pa[POperand<C>::kSteps][4];
  PendingP<CV> pp;
  float o_scale[2];
  if constexpr (!C::overlap) {
    for (int tile = 0; tile < n_mine; ++tile) {
      const int stage = tile % kStages;
      mbarrierWait(ring.full(stage), ringParity<kStages>(tile));
      sm90_fence_regs(s);
      sm90_wgmma_fence();
      issueScores<C, kHeadDim, kBlockN>(s, q_addr, q_row0, ring.k(stage));
      sm90_wgmma_commit();
      sm90_wgmma_wait<0>();
      sm90_fence_regs(s);
      softmaxStage<C, CV>(s, pp, st, o_scale, rows, tile * kBlockN, tile == 0);
      packP<C, CV>(pa, pp, s, st);
      attention::rescaleRows(o, o_scale);
      sm90_fence_regs(o);
      sm90_fence_regs(pa);
      sm90_wgmma_fence();
      issueValues<C, kHeadDim, kBlockN>(o, pa, ring.v(stage));
      sm90_wgmma_commit();
      sm90_wgmma_wait<0>();
      sm90_fence_regs(o);
      sm90_fence_regs(pa);
      releaseStage(ring, stage, rows.lane);
    }
  } else if (n_mine > 0) {
    static_assert(kStages >= 2, "overlap holds two stages per consumer");
    static_assert(!C::pingpong || !C::causal, "ping-pong needs equal tile counts: non-causal");
    // Issue points: the first QK^T, one per further tile, the last PV.
    PingPong turns{consumer, n_mine + 1, 0};
    if constexpr (C::pingpong)
      turns.start();
    mbarrierWait(ring.full(0), 0u);
    sm90_fence_regs(s);
    if constexpr (C::pingpong)
      turns.beforeIssue();
    sm90_wgmma_fence();
    issueScores<C, kHeadDim, kBlockN>(s, q_addr, q_row0, ring.k(0));
    sm90_wgmma_commit();
    if constexpr (C::pingpong)
      turns.afterIssue();
    sm90_wgmma_wait<0>();
    sm90_fence_regs(s);
    softmaxStage<C, CV>(s, pp, st, o_scale, rows, 0, true); // O is still zero: no rescale
    packP<C, CV>(pa, pp, s, st);
    for (int tile = 1; tile < n_mine; ++tile)
      overlapStep<C, CV, kHeadDim, kBlockN, kStages>(tile, s, o, pa, pp, st, ring, q_addr, q_row0, rows, turns);
    const int last = (n_mine - 1) % kStages;
    sm90_fence_regs(o);
    sm90_fence_regs(pa);
    if constexpr (C::pingpong)
      turns.beforeIssue();
    sm90_wgmma_fence();
    issueValues<C, kHeadDim, kBlockN>(o, pa, ring.v(last));
    sm90_wgmma_commit();
    if constexpr (C::pingpong)
      turns.afterIssue();
    sm90_wgmma_wait<0>();
    sm90_fence_regs(o);
    sm90_fence_regs(pa);
    releaseStage(ring, last, rows.lane);
  }
  // Tiles beyond this consumer's causal limit: nothing to compute, the stage is still released.
  for (int tile = n_mine; tile < n_tiles; ++tile) {
    const int stage = tile % kStages;
    mbarrierWait(ring.full(stage), ringParity<kStages>(tile));
    releaseStage(ring, stage, rows.lane);
  }
}

} // namespace fa4jit::device::attention_sm90
