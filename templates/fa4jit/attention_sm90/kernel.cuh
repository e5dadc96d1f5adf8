#pragma once
// Forward attention, warp-specialized wgmma path (sm_90a only): FP8 wgmma for the FP8-fed routes
// (nvfp8, directp), BF16 wgmma for the bf16 route (whose tiles come by TMA tensor maps, or
// repacked by a pass). Numerics: docs/NUMERICS.md, exactly as the mma.sync path (attention/kernel.cuh): the
// score scaling, mask, online softmax with range guard, P builders and epilogue are that path's
// functions, applied to the same per-warp fragments (wgmma.cuh: a warpgroup's accumulator is its
// four warps' m16n8 fragments side by side).
//
// ===== Instantiation contract (what the code generator emits) =====================================
// As attention/kernel.cuh, with these differences:
//   - #include "fa4jit/attention_sm90/kernel.cuh"; the config struct has one more member,
//     `static constexpr int stages` (depth of the K/V shared-memory ring), `static constexpr bool
//     overlap`, `pingpong`, `kv_prewidened`, `kv_tensor_map`, `mma_row_sum`, `persistent`, `kv_multicast`,
//     `fused_widening` and
//     `static constexpr StageAblation ablation` (consumer.cuh, widen_kv.cuh, work_tiles.cuh), block_m == 128 or 192
//     and warps == block_m / 16 + 4 (one producer and two or three consumer warpgroups).
//   - Pinning asserts: Sm90Traits<Cfg>::kThreads == 32 * warps, Sm90Traits<Cfg>::kSharedBytes == the
//     generator's byte count (layout.cuh).
//   - Entry: extern "C" __global__ void __launch_bounds__(32 * warps, 1) <name>(const AttentionParams p)
//     { fa4jit::device::attention_sm90::attentionForwardSm90<Cfg>(p); }
//   Launch: grid (ceil(Sq / block_m), Hq, B), block 32 * warps, dynamic shared memory kSharedBytes; with
//   `persistent`, grid (min(ceil(Sq / block_m) * Hq * B, number of SMs), 1, 1) (work_tiles.cuh).
//   With `static constexpr bool kv_prewidened` true, a second entry point runs first:
//     extern "C" __global__ void __launch_bounds__(128) <name>_widen_kv(const AttentionParams p)
//     { fa4jit::device::attention_sm90::widenKvTiles<Cfg, Sm90Traits<Cfg>>(p); }
//   grid (ceil(Sk / block_n), Hkv, B), block 128 (widen_kv.cuh); p.kv_tiles is its output.
//   With `persistent` a third one runs before the attention entry too:
//     extern "C" __global__ void __launch_bounds__(128) <name>_widen_q(const AttentionParams p)
//     { fa4jit::device::attention_sm90::widenQTiles<Cfg, Sm90Traits<Cfg>>(p); }
//   grid (ceil(Sq / block_m), Hq, B), block 128 (widen_q.cuh); p.q_tiles is its output.
//   With `fused_widening` (persistent, prewidened) neither pass exists: the kernel writes p.kv_tiles
//   and p.q_tiles itself (widen_ahead.cuh), with the counters at p.widen_state.
//   With `kv_tensor_map` (bf16 only) no pass runs: the entry takes the tensor maps as a second
//   argument, (const AttentionParams p, const __grid_constant__ AttentionTensorMaps maps), and
//   calls attentionForwardSm90<Cfg>(p, &maps) (tensor_maps.cuh).
//   With `static constexpr bool kv_multicast` (persistent, prewidened; cluster.cuh) the launch has
//   clusters of 2 CTAs along x and an even grid of at most 2 * ceil(ceil(Sq / block_m) / 2) * Hq * B
//   CTAs, no more than can be resident at once.
// ==================================================================================================
//
// Schedule: for each work tile of the CTA (work_tiles.cuh; one, or with `persistent` several),
// warpgroup 0 (producer, setmaxnreg.dec; producer_role.cuh) provides Q (widened, its image
// bulk-copied, or by tensor map) and fills a `stages`-deep ring of K / V^T tiles (full/empty
// mbarriers per stage; fence.proxy.async before each release because wgmma reads shared memory
// through the async proxy). Warpgroups 1 .. block_m / 64 (two or three consumers,
// consumer_role.cuh, setmaxnreg.inc) own 64 query rows each: S = Q K^T by wgmma from shared memory,
// softmax and P in registers, O += P V^T by wgmma with P as the register A operand (consumer.cuh,
// serial or with the softmax overlapping the previous tile's PV). The consumers also run out of
// phase on their own (one's softmax overlaps the others' MMAs). Causal consumers skip the tiles beyond
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
#include "fa4jit/attention_sm90/cluster.cuh"
#include "fa4jit/attention_sm90/consumer.cuh"
#include "fa4jit/attention_sm90/consumer_role.cuh"
#include "fa4jit/attention_sm90/layout.cuh"
#include "fa4jit/attention_sm90/producer.cuh"
#include "fa4jit/attention_sm90/producer_role.cuh"
#include "fa4jit/attention_sm90/smem_desc.cuh"
#include "fa4jit/attention_sm90/sync.cuh"
#include "fa4jit/attention_sm90/tensor_maps.cuh"
#include "fa4jit/attention_sm90/wgmma.cuh"
#include "fa4jit/attention_sm90/widen_ahead.cuh"
#include "fa4jit/attention_sm90/widen_kv.cuh"
#include "fa4jit/attention_sm90/widen_q.cuh"
#include "fa4jit/attention_sm90/work_tiles.cuh"

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
  static constexpr int kBlockRows = C::block_m; // query rows of a work tile: 64 per consumer
  static constexpr int kConsumers = consumerWarpgroups(C::block_m);
  static constexpr int kThreads = ctaThreads(C::block_m);
  static constexpr bool kBf16 = C::route == Route::Bf16;
  static constexpr int kElemBytes = kBf16 ? 2 : 1; // of Q, K and V^T in shared memory
  static_assert(C::block_m == 128 || C::block_m == 192, "the wgmma path has 2 or 3 consumers of 64 query rows");
  static_assert(C::warps == kThreads / 32, "the wgmma path has a producer warpgroup and one per consumer");
  static_assert(kBf16 || C::qk_widening == Widening::E4m3, "FP8 wgmma: NVFP4 Q/K widen to E4M3");
  static_assert(!kBf16 || C::kv_prewidened || C::kv_tensor_map,
                "the bf16 route's K/V tiles come by tensor maps or repacked by the widening pass");
  static_assert(!C::kv_tensor_map || (kBf16 && !C::kv_prewidened), "tensor maps: the bf16 route's own tensors");
  // One producer thread moves every tile (bulk copies of images or tensor-map loads); the rest of
  // the producer warpgroup exits after giving its registers back.
  static constexpr bool kOneThreadProducer = C::kv_prewidened || C::kv_tensor_map;
  static_assert(kBlockN == 64 || kBlockN == 128 || (kBlockN == 96 && !kBf16) ||
                    (kBlockN == 192 && !kBf16 && kHeadDim <= 128) || (kBlockN == 80 && kBf16 && C::kv_tensor_map),
                "block_n must be 64 or 128, 96 for the FP8-fed routes, 192 for them at head_dim <= 128, or 80 for "
                "the bf16 route's tensor-map tiles (QK^T's wgmma N; PV's k-step of 16 or 32 keys)");
  static_assert(kBlockN * kElemBytes <= kSwizzleBytes || C::kv_prewidened || kBf16 || !C::mma_row_sum,
                "V^T of several column blocks with row-sum rows: only the prewidened images (the in-kernel "
                "producer writes column blocks of head_dim rows)");
  static_assert(kStages >= 1 && kStages <= 4, "stages must be in [1, 4]");
  static_assert(!C::overlap || kStages >= 2, "overlap holds two stages per consumer: stages >= 2");
  static_assert(!C::persistent || kOneThreadProducer,
                "the persistent kernel's producer is one thread: prewidened or tensor-map K/V");
  static_assert(kConsumers == 2 || kOneThreadProducer, "three consumers leave the producer 32 registers: one thread");
  static_assert(!C::fused_widening || (C::persistent && C::kv_prewidened && !C::kv_multicast),
                "fused_widening: the persistent grid writes the prewidened images itself (no clusters)");
  static_assert(!C::mma_row_sum || (!kBf16 && kHeadDim <= 128), "mma_row_sum: FP8 V^T and PV's N = head_dim + 8 <= 136");
  // (tensor-map tiles multicast gave wrong rows on the H200, not understood: spec_validate refuses them)
  static_assert(!C::kv_multicast || (C::persistent && C::kv_prewidened),
                "kv_multicast: the persistent grid of two-CTA clusters, one producer thread copying each half "
                "stage of the prewidened images");
  // The persistent causal grid hands its work tiles out at run time (work_tiles.cuh).
  static constexpr bool kHandsOutWork = handsOutWorkTiles<C>();
  // The producer's registers: more than one thread's worth where it hands out work tiles or its
  // spare warps widen (layout.cuh).
  static constexpr bool kWideProducer = kHandsOutWork || C::fused_widening;
  static constexpr Sm90Layout kLayout = sm90AttentionLayout(kHeadDim, kBlockRows, kBlockN, kStages, kElemBytes,
                                                            C::mma_row_sum, C::kv_tensor_map, kHandsOutWork,
                                                            C::fused_widening);
  static constexpr int kSharedBytes = kLayout.shared_bytes;
};

// maps: the kernel's __grid_constant__ tensor maps (kv_tensor_map), else null.
template <class C>
FA4JIT_DEVICE void attentionForwardSm90(const AttentionParams &p, const AttentionTensorMaps *maps = nullptr) {
  using S = Sm90Traits<C>;
  constexpr Sm90Layout L = S::kLayout;
#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
  static_assert(C::route != C::route, "the wgmma attention path needs sm_90a (wgmma, setmaxnreg)");
#endif
  extern __shared__ __align__(16) uint8_t smem_raw[];
  // The 128-byte swizzle is a function of the address: tiles need 1024-byte alignment.
  const uint32_t raw_addr = smemAddr(smem_raw);
  uint8_t *smem = smem_raw + ((kSwizzleAtom - raw_addr % kSwizzleAtom) % kSwizzleAtom);
  const uint32_t base = smemAddr(smem);
  CtaBuffers cta;
  cta.smem = smem;
  cta.base = base;
  cta.bar_full = base + L.barrier_offset;          // [stages]
  cta.bar_empty = cta.bar_full + 8 * S::kStages;  // [stages]
  cta.bar_q = cta.bar_empty + 8 * S::kStages;
  cta.bar_q_empty = cta.bar_q + 8;
  cta.work_slot = reinterpret_cast<int *>(smem + L.work_slot_offset); // (kernels that hand out work tiles)
  cta.widen_offset = L.widen_offset;                                   // (fused widening)

  const int tid = static_cast<int>(threadIdx.x);
  // Broadcast from lane 0 (CUTLASS's canonical_warp_group_idx): the compiler then knows the
  // warpgroup index is warp-uniform and keeps what derives from it (the consumer's Q descriptor)
  // in uniform registers, which the wgmma descriptor operands are, instead of moving it there
  // (R2UR) before every wgmma.
  const int wg = __shfl_sync(0xffffffffu, tid / kWarpgroupThreads, 0);
  if constexpr (!C::persistent)
    if (launchWorkTile<C, S>(p).m0() >= p.seqlen_q)
      return;

  if (tid == 0) {
    for (int s = 0; s < S::kStages; ++s) {
      // In-kernel widening: every producer thread arrives; one producer thread (prewidened or
      // tensor maps): one arrive with the copy's byte count.
      mbarrierInit(cta.bar_full + 8 * s, S::kOneThreadProducer ? 1 : kWarpgroupThreads);
      // (kv_multicast: both CTAs' consumer warps release each stage, cluster.cuh)
      mbarrierInit(cta.bar_empty + 8 * s, S::kConsumers * 4 * (C::kv_multicast ? kClusterCtas : 1));
    }
    // Persistent or tensor maps: one arrive with Q's copy per work tile, released by every
    // consumer warp; otherwise every producer thread arrives once its share of Q is widened.
    mbarrierInit(cta.bar_q, C::persistent || C::kv_tensor_map ? 1 : kWarpgroupThreads);
    mbarrierInit(cta.bar_q_empty, S::kConsumers * 4);
    if constexpr (C::fused_widening)
      WidenerBuffers{base + L.widen_offset}.init(p);
    fenceMbarrierInit();
  }
  if constexpr (C::mma_row_sum) {
    // Each stage's row-sum rows, once for the CTA (the ring's copies stop short of them), before
    // the barrier below, which orders them before every consumer's first PV.
    constexpr int kUnits = kRowSumRows * kSwizzleBytes / 16; // per V^T column block
    if (wg == 0) {
      for (int u = tid; u < S::kStages * L.v_blocks * kUnits; u += kWarpgroupThreads) {
        const int stage = u / (L.v_blocks * kUnits), block = u / kUnits % L.v_blocks, chunk = u % kUnits;
        const uint32_t w = chunk < kSwizzleBytes / 16 ? kE4m3OnesX4 : 0u; // row 0: ones
        *reinterpret_cast<uint4 *>(smem + L.row_sum_offset + stage * L.stage_stride + block * L.v_block_stride +
                                   chunk * 16) = make_uint4(w, w, w, w);
      }
      fenceProxyAsyncShared();
    }
  }
  if constexpr (C::kv_multicast)
    clusterSync(); // (also every thread of this CTA) the peer's mbarriers exist before any multicast
  else
    __syncthreads();

  if (wg == 0) {
    // ---------------- producer ----------------
    // With in-kernel widening the registers go back first (the consumers wait on Q anyway);
    // prewidened, the one-work-tile kernel widens Q with the launch's registers and the
    // bulk-copy loop needs few; the persistent kernel copies every Q (its image, widen_q.cuh), and
    // the tensor-map kernel loads every Q by TMA.
    if constexpr (!S::kOneThreadProducer)
      warpgroupRegDealloc<producerRegisters(false, S::kConsumers)>();
    if constexpr (!C::persistent && !C::kv_tensor_map) {
      const WorkTile w = launchWorkTile<C, S>(p);
      produceQTile<C, S::kHeadDim, S::kBlockRows>(smem + L.q_offset, p, w.m0(), w.hq, w.b, tid);
      fenceProxyAsyncShared();
      mbarrierArrive(cta.bar_q);
    }
    if constexpr (S::kOneThreadProducer) {
      warpgroupRegDealloc<producerRegisters(true, S::kConsumers, S::kWideProducer)>();
      if constexpr (C::fused_widening) {
        if (tid >= 32) { // warps 1..3 widen Q and K/V ahead of the thread that moves them
          widenAhead<C, S>(p, WidenerBuffers{base + L.widen_offset});
          return;
        }
      }
      if (tid != 0) // one thread moves every stage (and, persistent or tensor maps, every Q)
        return;
    }
    produceWork<C, S>(p, cta, tid, maps);
    return;
  }

  // ---------------- consumers ----------------
  warpgroupRegAlloc<consumerRegisters(S::kOneThreadProducer, S::kConsumers, S::kWideProducer)>();
  consumeWork<C, S>(p, cta, wg - 1, tid - kWarpgroupThreads * wg);
}

} // namespace fa4jit::device::attention_sm90
