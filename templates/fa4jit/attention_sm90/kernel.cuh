#pragma once
// Forward attention, warp-specialized wgmma path (sm_90a only): FP8 wgmma for the FP8-fed routes
// (nvfp8, directp), BF16 wgmma for the bf16 route (whose K/V are always prewidened: repacked). Numerics: docs/NUMERICS.md, exactly as the mma.sync path (attention/kernel.cuh): the
// score scaling, mask, online softmax with range guard, P builders and epilogue are that path's
// functions, applied to the same per-warp fragments (wgmma.cuh: a warpgroup's accumulator is its
// four warps' m16n8 fragments side by side).
//
// ===== Instantiation contract (what the code generator emits) =====================================
// As attention/kernel.cuh, with these differences:
//   - #include "fa4jit/attention_sm90/kernel.cuh"; the config struct has one more member,
//     `static constexpr int stages` (depth of the K/V shared-memory ring), `static constexpr bool
//     overlap`, `pingpong`, `kv_prewidened`, `mma_row_sum` and `static constexpr StageAblation ablation`
//     (consumer.cuh, widen_kv.cuh), block_m == 128 and
//     warps == 12 (one producer and two consumer warpgroups).
//   - Pinning asserts: Sm90Traits<Cfg>::kThreads == 384, Sm90Traits<Cfg>::kSharedBytes == the
//     generator's byte count (layout.cuh).
//   - Entry: extern "C" __global__ void __launch_bounds__(384, 1) <name>(const AttentionParams p)
//     { fa4jit::device::attention_sm90::attentionForwardSm90<Cfg>(p); }
//   Launch: grid (ceil(Sq / 128), Hq, B), block 384, dynamic shared memory kSharedBytes.
//   With `static constexpr bool kv_prewidened` true, a second entry point runs first:
//     extern "C" __global__ void __launch_bounds__(128) <name>_widen_kv(const AttentionParams p)
//     { fa4jit::device::attention_sm90::widenKvTiles<Cfg, Sm90Traits<Cfg>>(p); }
//   grid (ceil(Sk / block_n), Hkv, B), block 128 (widen_kv.cuh); p.kv_tiles is its output.
// ==================================================================================================
//
// Schedule: warpgroup 0 (producer, setmaxnreg.dec) widens Q once, then fills a `stages`-deep ring
// of K / V^T tiles (full/empty mbarriers per stage; fence.proxy.async before each release because
// wgmma reads shared memory through the async proxy). Warpgroups 1 and 2 (consumers,
// setmaxnreg.inc) own 64 query rows each: S = Q K^T by wgmma from shared memory, softmax and P in
// registers, O += P V^T by wgmma with P as the register A operand (consumer.cuh, serial or with
// the softmax overlapping the previous tile's PV). The two consumers also run out of phase on
// their own (one's softmax overlaps the other's MMAs). Causal consumers skip the tiles beyond
// their last visible key (they still release the stage).
#include "fa4jit/attention/config.cuh"
#include "fa4jit/attention/epilogue.cuh"
#include "fa4jit/attention/kernel.cuh"
#include "fa4jit/attention/p_bf16.cuh"
#include "fa4jit/attention/p_directp.cuh"
#include "fa4jit/attention/p_nvfp8.cuh"
#include "fa4jit/attention/params.cuh"
#include "fa4jit/attention/scores.cuh"
#include "fa4jit/attention/softmax.cuh"
#include "fa4jit/attention_sm90/consumer.cuh"
#include "fa4jit/attention_sm90/layout.cuh"
#include "fa4jit/attention_sm90/producer.cuh"
#include "fa4jit/attention_sm90/smem_desc.cuh"
#include "fa4jit/attention_sm90/sync.cuh"
#include "fa4jit/attention_sm90/wgmma.cuh"
#include "fa4jit/attention_sm90/widen_kv.cuh"

namespace fa4jit::device::attention_sm90 {

using attention::AttentionParams;
using attention::AttentionTraits;
using attention::GuardKind;
using attention::Route;
using attention::Widening;

// The generated config seen per consumer warpgroup pair: 16 rows per consumer warp, which is
// exactly the mma.sync path's view (AttentionTraits: block_m == 16 * warps), so its fragment
// functions apply unchanged.
template <class C> struct ConsumerView : C {
  static constexpr int warps = C::block_m / 16;
};

template <class C> struct Sm90Traits {
  using CV = ConsumerView<C>;
  using T = AttentionTraits<CV>;
  static constexpr int kHeadDim = C::head_dim;
  static constexpr int kBlockN = C::block_n;
  static constexpr int kStages = C::stages;
  static constexpr int kThreads = kCtaThreads;
  static constexpr bool kBf16 = C::route == Route::Bf16;
  static constexpr int kElemBytes = kBf16 ? 2 : 1; // of Q, K and V^T in shared memory
  static_assert(C::block_m == kBlockRows, "the wgmma path has 128 query rows per CTA (2 consumers x 64)");
  static_assert(C::warps == kCtaThreads / 32, "the wgmma path has 12 warps (producer + 2 consumer warpgroups)");
  static_assert(kBf16 || C::qk_widening == Widening::E4m3, "FP8 wgmma: NVFP4 Q/K widen to E4M3");
  static_assert(!kBf16 || C::kv_prewidened, "the bf16 route's K/V tiles are repacked by the widening pass");
  static_assert(kBlockN == 64 || kBlockN == 128, "block_n must be 64 or 128 (one 128-byte swizzle block of V^T)");
  static_assert(kStages >= 1 && kStages <= 4, "stages must be in [1, 4]");
  static_assert(!C::overlap || kStages >= 2, "overlap holds two stages per consumer: stages >= 2");
  static_assert(!C::pingpong || (C::overlap && !C::causal), "ping-pong needs overlap and a non-causal kernel");
  static_assert(!C::mma_row_sum || (!kBf16 && kHeadDim <= 128 && kBlockN * kElemBytes <= kSwizzleBytes),
                "mma_row_sum: FP8 V^T of one column block and PV's N = head_dim + 8 <= 136");
  static constexpr Sm90Layout kLayout = sm90AttentionLayout(kHeadDim, kBlockN, kStages, kElemBytes, C::mma_row_sum);
  static constexpr int kSharedBytes = kLayout.shared_bytes;
};

template <bool kCausal> FA4JIT_DEVICE int visibleKeysSm90(int row, int seqlen_q, int seqlen_k) {
  return attention::visibleKeys<kCausal>(row, seqlen_q, seqlen_k);
}

template <class C> FA4JIT_DEVICE void attentionForwardSm90(const AttentionParams &p) {
  using S = Sm90Traits<C>;
  using CV = typename S::CV;
  using T = typename S::T;
  constexpr Sm90Layout L = S::kLayout;
#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
  static_assert(C::route != C::route, "the wgmma attention path needs sm_90a (wgmma, setmaxnreg)");
#endif
  extern __shared__ __align__(16) uint8_t smem_raw[];
  // The 128-byte swizzle is a function of the address: tiles need 1024-byte alignment.
  const uint32_t raw_addr = smemAddr(smem_raw);
  uint8_t *smem = smem_raw + ((kSwizzleAtom - raw_addr % kSwizzleAtom) % kSwizzleAtom);
  const uint32_t base = smemAddr(smem);
  const uint32_t bar_full = base + L.barrier_offset;                  // [stages]
  const uint32_t bar_empty = bar_full + 8 * S::kStages;               // [stages]
  const uint32_t bar_q = bar_empty + 8 * S::kStages;

  const int tid = static_cast<int>(threadIdx.x);
  // Broadcast from lane 0 (CUTLASS's canonical_warp_group_idx): the compiler then knows the
  // warpgroup index is warp-uniform and keeps what derives from it (the consumer's Q descriptor)
  // in uniform registers, which the wgmma descriptor operands are, instead of moving it there
  // (R2UR) before every wgmma.
  const int wg = __shfl_sync(0xffffffffu, tid / kWarpgroupThreads, 0);
  const int m0 = static_cast<int>(blockIdx.x) * kBlockRows;
  const int hq = static_cast<int>(blockIdx.y), b = static_cast<int>(blockIdx.z);
  const int hkv = hq / (p.heads_q / p.heads_kv);
  const int sq = p.seqlen_q, sk = p.seqlen_k;
  if (m0 >= sq)
    return;
  const int head_q = b * p.heads_q + hq, head_kv = b * p.heads_kv + hkv;
  const int last_row = (sq < m0 + kBlockRows ? sq : m0 + kBlockRows) - 1;
  const int n_tiles = (visibleKeysSm90<C::causal>(last_row, sq, sk) + S::kBlockN - 1) / S::kBlockN;

  if (tid == 0) {
    for (int s = 0; s < S::kStages; ++s) {
      // In-kernel widening: every producer thread arrives; prewidened: one arrive with the
      // bulk copy's byte count.
      mbarrierInit(bar_full + 8 * s, C::kv_prewidened ? 1 : kWarpgroupThreads);
      mbarrierInit(bar_empty + 8 * s, kConsumerWarpgroups * 4);
    }
    mbarrierInit(bar_q, kWarpgroupThreads);
    fenceMbarrierInit();
  }
  __syncthreads();

  if (wg == 0) {
    // ---------------- producer ----------------
    // With in-kernel widening the registers go back first (the consumers wait on Q anyway);
    // prewidened, Q is widened with the launch's registers and the bulk-copy loop needs few.
    if constexpr (!C::kv_prewidened)
      warpgroupRegDealloc<producerRegisters(false)>();
    const int ptid = tid;
    [[maybe_unused]] const float pre = exp2Int(-C::qk_widen_shift); // FP4 widening only
    const int q_valid = sq - m0 < kBlockRows ? sq - m0 : kBlockRows;
    if constexpr (S::kBf16) {
      const uint16_t *qg = reinterpret_cast<const uint16_t *>(p.q) + b * p.q_batch_stride + hq * p.q_head_stride;
      produceBf16Rows<S::kHeadDim, kBlockRows>(smem + L.q_offset, qg + m0 * p.q_row_stride,
                                               static_cast<int>(p.q_row_stride), q_valid, ptid);
    } else {
      const uint8_t *qg = reinterpret_cast<const uint8_t *>(p.q) + b * p.q_batch_stride + hq * p.q_head_stride;
      const uint8_t *qsf = reinterpret_cast<const uint8_t *>(p.q_sf) + b * p.q_sf_batch_stride + hq * p.q_sf_head_stride;
      produceNvfp4Rows<S::kHeadDim, kBlockRows>(smem + L.q_offset, qg + m0 * p.q_row_stride,
                                                 static_cast<int>(p.q_row_stride), qsf, m0, q_valid, pre, ptid);
    }
    if constexpr (C::mma_row_sum) {
      // Each stage's row-sum rows, once: the ring's copies stop short of them.
      constexpr int kUnits = kRowSumRows * kSwizzleBytes / 16;
      for (int u = ptid; u < S::kStages * kUnits; u += kWarpgroupThreads) {
        const int stage = u / kUnits, chunk = u % kUnits;
        const uint32_t w = chunk < kSwizzleBytes / 16 ? kE4m3OnesX4 : 0u; // row 0: ones
        *reinterpret_cast<uint4 *>(smem + L.row_sum_offset + stage * L.stage_stride + chunk * 16) =
            make_uint4(w, w, w, w);
      }
    }
    fenceProxyAsyncShared();
    mbarrierArrive(bar_q);
    if constexpr (C::kv_prewidened) {
      warpgroupRegDealloc<producerRegisters(true)>();
      // One thread moves each stage's K/V image (widen_kv.cuh) with one bulk copy.
      if (ptid != 0)
        return;
      const int tiles_per_head = (sk + S::kBlockN - 1) / S::kBlockN;
      const uint8_t *images = reinterpret_cast<const uint8_t *>(p.kv_tiles) +
                              static_cast<int64_t>(head_kv) * tiles_per_head * static_cast<int64_t>(L.stage_bytes);
      for (int tile = 0; tile < n_tiles; ++tile) {
        const int stage = tile % S::kStages;
        const uint32_t round = static_cast<uint32_t>(tile / S::kStages);
        mbarrierWait(bar_empty + 8 * stage, (round & 1u) ^ 1u);
        if constexpr (C::ablation == StageAblation::SkipLoads) {
          mbarrierArrive(bar_full + 8 * stage);
        } else {
          mbarrierArriveExpectTx(bar_full + 8 * stage, static_cast<uint32_t>(L.stage_bytes));
          bulkCopyG2S(base + L.k_offset + stage * L.stage_stride, images + static_cast<int64_t>(tile) * L.stage_bytes,
                      static_cast<uint32_t>(L.stage_bytes), bar_full + 8 * stage);
        }
      }
    } else {
      // In-kernel widening (FP8-fed routes): every producer thread widens its share of each tile.
      const KvHeadSources src = kvHeadSources<C>(p, b, hkv, head_kv);
      for (int tile = 0; tile < n_tiles; ++tile) {
        const int stage = tile % S::kStages;
        const uint32_t round = static_cast<uint32_t>(tile / S::kStages);
        mbarrierWait(bar_empty + 8 * stage, (round & 1u) ^ 1u);
        uint8_t *k_tile = smem + L.k_offset + stage * L.stage_stride;
        uint8_t *v_tile = smem + L.v_offset + stage * L.stage_stride;
        const int key0 = tile * S::kBlockN;
        const int k_valid = sk - key0 < S::kBlockN ? sk - key0 : S::kBlockN;
        if constexpr (C::ablation != StageAblation::SkipLoads)
          produceKvTile<C, S::kHeadDim, S::kBlockN>(k_tile, v_tile, src, p, key0, k_valid, pre, ptid);
        fenceProxyAsyncShared();
        mbarrierArrive(bar_full + 8 * stage);
      }
    }
    return;
  }

  // ---------------- consumers ----------------
  warpgroupRegAlloc<consumerRegisters(C::kv_prewidened)>();
  const int c = wg - 1;
  const int ctid = tid - kWarpgroupThreads * wg;
  const int lane = ctid % 32, warp = ctid / 32;
  const int row_base = m0 + c * kRowsPerConsumer + warp * 16;
  const int wg_row0 = m0 + c * kRowsPerConsumer;
  const int wg_last = (sq < wg_row0 + kRowsPerConsumer ? sq : wg_row0 + kRowsPerConsumer) - 1;
  // Ping-pong (non-causal only) needs both consumers to run every tile, even one whose rows all
  // lie beyond seqlen_q (its Q rows are zeros and its output is not written).
  const int wg_keys = (wg_row0 < sq || C::pingpong) ? visibleKeysSm90<C::causal>(wg_last, sq, sk) : 0;
  const int wg_unmasked = visibleKeysSm90<C::causal>(wg_row0, sq, sk);
  const int g = lane / 4;
  const int vis[2] = {visibleKeysSm90<C::causal>(row_base + g, sq, sk),
                      visibleKeysSm90<C::causal>(row_base + g + 8, sq, sk)};

  float score_mul = C::score_scale, out_factor = 1.0f; // the bf16 route's (no per-head scales)
  if constexpr (!S::kBf16) {
    const float gq = reinterpret_cast<const float *>(p.q_global_scale)[head_q];
    const float gk = reinterpret_cast<const float *>(p.k_global_scale)[head_kv];
    score_mul = (gq * gk) * C::score_scale; // NUMERICS.md §2.1: this order, in FP32
    if constexpr (C::route == Route::Nvfp8)
      out_factor = reinterpret_cast<const float *>(p.v_scale)[head_kv];
    else
      out_factor = exp2Int(reinterpret_cast<const int32_t *>(p.v_shift)[head_kv]);
  }

  float o[OAccumulator<C>::kTiles][4]; // with mma_row_sum, one more n8 tile: l in its column 0
#pragma unroll
  for (int dt = 0; dt < OAccumulator<C>::kTiles; ++dt)
    o[dt][0] = o[dt][1] = o[dt][2] = o[dt][3] = 0.0f;
  attention::SoftmaxRows st;
  attention::softmaxInit(st);

  const ConsumerRows rows{scoreMultiplier(score_mul), {vis[0], vis[1]}, wg_unmasked, lane};
  const RingView ring{base, static_cast<uint32_t>(L.k_offset), static_cast<uint32_t>(L.v_offset),
                      static_cast<uint32_t>(L.stage_stride), bar_full, bar_empty};
  const int n_mine = (wg_keys + S::kBlockN - 1) / S::kBlockN;
  mbarrierWait(bar_q, 0u);
  const uint32_t q_lo = consumerQDescriptorLo(base + L.q_offset, c * kRowsPerConsumer);
  consumeTiles<C, CV, S::kHeadDim, S::kBlockN, S::kStages>(o, st, ring, q_lo, n_mine, n_tiles, rows, c);

  uint16_t *o_rows = reinterpret_cast<uint16_t *>(p.o) + b * p.o_batch_stride + hq * p.o_head_stride +
                     row_base * p.o_row_stride;
  float *lse_rows = p.lse == 0 ? nullptr
                               : reinterpret_cast<float *>(p.lse) + static_cast<int64_t>(head_q) * sq + row_base;
  if constexpr (C::mma_row_sum) {
    // l of rows g and g + 8 is O's column head_dim: held by the quad's lane 0 (2q + i = 0), so
    // the epilogue's quad sum of st.l gives it to all four.
    st.l[0] = lane % 4 == 0 ? o[T::kOTiles][0] : 0.0f;
    st.l[1] = lane % 4 == 0 ? o[T::kOTiles][2] : 0.0f;
  }
  attention::writeOutput<CV>(reinterpret_cast<float(&)[T::kOTiles][4]>(o), st, out_factor, o_rows, p.o_row_stride,
                             lse_rows, row_base, sq, lane);
}

} // namespace fa4jit::device::attention_sm90
