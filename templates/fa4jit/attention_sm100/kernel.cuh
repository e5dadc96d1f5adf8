#pragma once
// Forward attention for sm_100a (Blackwell), routes nvfp8 and directp: block-scaled FP4 tcgen05
// MMAs with S, O, P and the scale factors in tensor memory at the columns of the TMEM planner's plan.
// Numerics: docs/NUMERICS.md (Widening::Native). Status: compiled to sm_100a cubins and checked
// statically (SASS) in CI; never run on Blackwell hardware (docs/BLACKWELL.md).
//
// ===== Instantiation contract (what the code generator emits) ===================================
// As fa4jit/attention/kernel.cuh, with this header, the members of attention_sm100/config.cuh and:
//   static_assert(Sm100AttentionTraits<Cfg>::kThreads == 128 && ...kSharedBytes == <host value>);
//   extern "C" __global__ void __launch_bounds__(128) <name>(const AttentionParams params) {
//     fa4jit::device::attention::attentionForwardSm100<Cfg>(params);
//   }
// Launch: grid (ceil(Sq / 128), Hq, B), block 128, dynamic shared memory kSharedBytes (opt in).
// ================================================================================================
//
// Schedule, one CTA per 128 query rows (thread i = row i = TMEM lane i), serialized per key tile j
// with K/V of tile j+1 loading into the other stage meanwhile:
//   wait PV(j-1) -> issue loads of tile j+1 -> wait K/V(j) -> [thread 0] tcgen05.cp SFK (+SFQ once),
//   QK^T MMAs into S, commit -> all: tcgen05.ld S, mask, max, rescale O in TMEM, P codes + scales,
//   tcgen05.st P into S's top columns, SF of P to shared -> [thread 0] tcgen05.cp SFP, SFV into S's
//   dead columns, PV MMAs (A = P from TMEM), commit.
// The QK(j+1) || PV(j) overlap the planner reports needs a spare S and a warp-specialized schedule;
// this first kernel is the correctness baseline for when Blackwell hardware is available.
#include "fa4jit/attention/params.cuh"
#include "fa4jit/attention_sm100/async_copy.cuh"
#include "fa4jit/attention_sm100/config.cuh"
#include "fa4jit/attention_sm100/descriptors.cuh"
#include "fa4jit/attention_sm100/loads.cuh"
#include "fa4jit/attention_sm100/row_p.cuh"
#include "fa4jit/attention_sm100/row_softmax.cuh"
#include "fa4jit/attention_sm100/tcgen05.cuh"
#include "fa4jit/attention_sm100/tmem_rows.cuh"

namespace fa4jit::device::attention {

template <bool kCausal> FA4JIT_DEVICE int sm100VisibleKeys(int row, int seqlen_q, int seqlen_k) {
  if constexpr (kCausal) {
    const int v = row + seqlen_k - seqlen_q + 1; // key j visible iff j <= i + Sk - Sq
    return v < 0 ? 0 : (v > seqlen_k ? seqlen_k : v);
  } else {
    return seqlen_k;
  }
}

template <class C> struct Sm100Operands {
  const uint8_t *q, *k, *v, *q_sf, *k_sf, *v_sf;
  int64_t q_row_stride, k_row_stride, v_row_stride;
  int m0, seqlen_q, seqlen_k, keys_padded;
};

// All threads: payloads by cp.async (then one arrival each); thread 0: SF atoms by bulk copy.
template <class C>
FA4JIT_DEVICE void sm100IssueKvLoad(const Sm100Operands<C> &op, uint32_t stage_smem, uint32_t full_bar, int key0,
                                    int tid) {
  using T = Sm100AttentionTraits<C>;
  sm100LoadRows<T::kQkRowBytes, T::kBlockN, T::kThreads>(stage_smem + T::kKOffsetInStage,
                                                         op.k + key0 * op.k_row_stride, op.k_row_stride,
                                                         op.seqlen_k - key0, tid);
  // V^T [D][Skp] rows hold keys; the tile's keys start at byte key0 * bits / 8, always in range.
  sm100LoadRows<T::kVRowBytes, T::kHeadDim, T::kThreads>(stage_smem + T::kVOffsetInStage,
                                                         op.v + key0 * T::kVRowBytes / T::kBlockN,
                                                         op.v_row_stride, T::kHeadDim, tid);
  sm100::cpAsyncArriveOn(full_bar);
  if (tid == 0) {
    sm100::mbarrierArriveExpectTx(full_bar, T::kSfkBytes + T::kSfvBytes);
    sm100::bulkCopyG2S(stage_smem + T::kSfkOffsetInStage, sm100SfAtom(op.k_sf, key0, 0, T::kHeadDim / 16),
                       T::kSfkBytes, full_bar);
    if constexpr (T::kDirectP) {
#pragma unroll
      for (int rb = 0; rb < T::kVRowBlocks; ++rb)
        sm100::bulkCopyG2S(stage_smem + T::kSfvOffsetInStage + 512 * rb,
                           sm100SfAtom(op.v_sf, 128 * rb, key0 / 32, op.keys_padded / 32), 512, full_bar);
    }
  }
}

template <class C> FA4JIT_DEVICE void attentionForwardSm100(const AttentionParams &p) {
  using T = Sm100AttentionTraits<C>;
#if defined(__CUDA_ARCH__) && !(__CUDA_ARCH__ >= 1000 && defined(__CUDA_ARCH_FEAT_SM100_ALL))
  static_assert(C::head_dim < 0, "the tcgen05 attention kernel needs sm_100a");
#endif
  extern __shared__ __align__(1024) uint8_t smem[];
  const uint32_t smem0 = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  const uint32_t bar_q = smem0 + T::kBarrierOffset, bar_qk = bar_q + 8, bar_pv = bar_q + 16;
  const uint32_t bar_kv0 = bar_q + 24; // + 8 * stage
  volatile uint32_t *tmem_slot = reinterpret_cast<volatile uint32_t *>(smem + T::kTmemSlotOffset);

  const int tid = static_cast<int>(threadIdx.x), warp = tid / 32;
  const int m0 = static_cast<int>(blockIdx.x) * T::kBlockM;
  const int hq = static_cast<int>(blockIdx.y), b = static_cast<int>(blockIdx.z);
  const int hkv = hq / (p.heads_q / p.heads_kv);
  const int sq = p.seqlen_q, sk = p.seqlen_k;
  if (m0 >= sq)
    return;
  const int head_q = b * p.heads_q + hq, head_kv = b * p.heads_kv + hkv;

  Sm100Operands<C> op;
  op.q = reinterpret_cast<const uint8_t *>(p.q) + b * p.q_batch_stride + hq * p.q_head_stride;
  op.k = reinterpret_cast<const uint8_t *>(p.k) + b * p.k_batch_stride + hkv * p.k_head_stride;
  op.v = reinterpret_cast<const uint8_t *>(p.v) + b * p.v_batch_stride + hkv * p.v_head_stride;
  op.q_sf = reinterpret_cast<const uint8_t *>(p.q_sf) + b * p.q_sf_batch_stride + hq * p.q_sf_head_stride;
  op.k_sf = reinterpret_cast<const uint8_t *>(p.k_sf) + b * p.k_sf_batch_stride + hkv * p.k_sf_head_stride;
  op.v_sf = reinterpret_cast<const uint8_t *>(p.v_sf) + b * p.v_sf_batch_stride + hkv * p.v_sf_head_stride;
  op.q_row_stride = p.q_row_stride;
  op.k_row_stride = p.k_row_stride;
  op.v_row_stride = p.v_row_stride;
  op.m0 = m0;
  op.seqlen_q = sq;
  op.seqlen_k = sk;
  op.keys_padded = (sk + 127) / 128 * 128;

  // ---- setup: barriers (thread 0), TMEM (warp 0) ----------------------------------------------
  if (tid == 0) {
    sm100::mbarrierInit(bar_q, T::kThreads + 1); // 128 cp.async arrivals + the expect_tx arrival
    sm100::mbarrierInit(bar_qk, 1);              // tcgen05.commit
    sm100::mbarrierInit(bar_pv, 1);
    for (int s = 0; s < T::kStages; ++s)
      sm100::mbarrierInit(bar_kv0 + 8 * s, T::kThreads + 1);
    sm100::fenceMbarrierInit();
  }
  if (warp == 0) {
    sm100::sm100_tcgen05_alloc_cta1(smem0 + T::kTmemSlotOffset, T::kTmemColumns);
    sm100::sm100_tcgen05_relinquish_alloc_permit_cta1();
  }
  sm100::sm100_tcgen05_fence_before_thread_sync();
  __syncthreads();
  sm100::sm100_tcgen05_fence_after_thread_sync();
  const uint32_t tmem = *tmem_slot;
  const uint32_t lane_base = static_cast<uint32_t>(32 * warp) << 16; // this warp's subpartition
  const uint32_t s_warp = tmem + lane_base + T::kSCol, o_warp = tmem + lane_base + T::kOCol;
  const uint32_t p_warp = tmem + lane_base + T::kPCol;

  // ---- key range, Q and the first K/V tiles -----------------------------------------------------
  const int row = m0 + tid;
  const int last_row = (sq < m0 + T::kBlockM ? sq : m0 + T::kBlockM) - 1;
  const int n_tiles = (sm100VisibleKeys<C::causal>(last_row, sq, sk) + T::kBlockN - 1) / T::kBlockN;
  const int visible = sm100VisibleKeys<C::causal>(row < sq ? row : last_row, sq, sk);

  sm100LoadRows<T::kQkRowBytes, T::kBlockM, T::kThreads>(smem0 + T::kQOffset, op.q + m0 * op.q_row_stride,
                                                         op.q_row_stride, sq - m0, tid);
  sm100::cpAsyncArriveOn(bar_q);
  if (tid == 0) {
    sm100::mbarrierArriveExpectTx(bar_q, T::kSfqBytes);
    sm100::bulkCopyG2S(smem0 + T::kSfqOffset, sm100SfAtom(op.q_sf, m0, 0, T::kHeadDim / 16), T::kSfqBytes, bar_q);
  }
  for (int j = 0; j < T::kStages && j < n_tiles; ++j)
    sm100IssueKvLoad<C>(op, smem0 + T::kStage0Offset + j * T::kStageBytes, bar_kv0 + 8 * j, j * T::kBlockN, tid);

  const float gq = reinterpret_cast<const float *>(p.q_global_scale)[head_q];
  const float gk = reinterpret_cast<const float *>(p.k_global_scale)[head_kv];
  const float score_mul = scoreMultiplier((gq * gk) * C::score_scale); // NUMERICS.md §2.1: this order, in FP32
  float out_factor = 1.0f;                            // directp Native: V's scales are in the MMA
  if constexpr (!T::kDirectP)
    out_factor = reinterpret_cast<const float *>(p.v_scale)[head_kv];

  // Instruction descriptors (M = 128; QK N = block_n, PV N = head_dim).
  constexpr uint32_t kIdescQk = sm100::sm100InstrDescBlockScaled(128, T::kBlockN, sm100::kSm100FormatE2m1Mxf4,
                                                                 sm100::kSm100FormatE2m1Mxf4,
                                                                 sm100::Sm100ScaleFormat::Ue4m3, 0, 0);
  constexpr uint32_t kQkChunks = T::kQkRowBytes / 16, kVChunks = T::kVRowBytes / 16;

  Sm100Row st;
  sm100RowInit(st);
  for (int j = 0; j < n_tiles; ++j) {
    const int stage = j % T::kStages, key0 = j * T::kBlockN;
    const uint32_t stage_smem = smem0 + T::kStage0Offset + stage * T::kStageBytes;
    if (j > 0) {
      // PV(j-1) done: O is stable, S/P and the other stage's buffers are free.
      sm100::mbarrierWait(bar_pv, static_cast<uint32_t>((j - 1) & 1));
      sm100::sm100_tcgen05_fence_after_thread_sync();
      if (T::kStages == 1)
        sm100IssueKvLoad<C>(op, stage_smem, bar_kv0, key0, tid);
      else if (j + 1 < n_tiles)
        sm100IssueKvLoad<C>(op, smem0 + T::kStage0Offset + ((j + 1) % T::kStages) * T::kStageBytes,
                            bar_kv0 + 8 * ((j + 1) % T::kStages), key0 + T::kBlockN, tid);
    }
    if (j == 0)
      sm100::mbarrierWait(bar_q, 0u);
    sm100::mbarrierWait(bar_kv0 + 8 * stage, static_cast<uint32_t>((j / T::kStages) & 1));
    sm100::fenceProxyAsyncShared(); // this thread's cp.async payload bytes -> the tensor core's view
    __syncthreads();

    if (tid == 0) {
      sm100::sm100_tcgen05_fence_after_thread_sync();
      if (j == 0)
        for (int i = 0; i < T::kQkSteps; ++i)
          sm100::sm100_tcgen05_cp_32x128b_warpx4(tmem + T::kSfqCol + 4 * i,
                                                 sm100::sm100ScaleAtomDescriptor(smem0 + T::kSfqOffset + 512 * i));
      for (int i = 0; i < T::kQkSteps; ++i)
        sm100::sm100_tcgen05_cp_32x128b_warpx4(
            tmem + T::kSfkCol + 4 * i,
            sm100::sm100ScaleAtomDescriptor(stage_smem + T::kSfkOffsetInStage + 512 * i));
      const uint64_t q_desc = sm100::sm100SmemDescriptor(smem0 + T::kQOffset, 128u, 128u * kQkChunks);
      const uint64_t k_desc = sm100::sm100SmemDescriptor(stage_smem + T::kKOffsetInStage, 128u, 128u * kQkChunks);
#pragma unroll
      for (int i = 0; i < T::kQkSteps; ++i) // K = 64 FP4 = 32 bytes = two core matrices along K
        sm100::sm100_tcgen05_mma_ss_m128k64_mxf4nvf4_ue4m3(
            tmem + T::kSCol, sm100::sm100SmemDescriptorAdvance(q_desc, 256u * i),
            sm100::sm100SmemDescriptorAdvance(k_desc, 256u * i), kIdescQk, tmem + T::kSfqCol + 4 * i,
            tmem + T::kSfkCol + 4 * i, i > 0);
      sm100::sm100_tcgen05_commit_cta1(bar_qk);
    }

    // ---- softmax of tile j: one row per thread ---------------------------------------------------
    sm100::mbarrierWait(bar_qk, static_cast<uint32_t>(j & 1));
    sm100::sm100_tcgen05_fence_after_thread_sync();
    float acc[T::kBlockN];
    {
      uint32_t bits[T::kBlockN];
#pragma unroll
      for (int c = 0; c < T::kBlockN; c += 32)
        sm100::sm100_tcgen05_ld_32x32b_x32(*reinterpret_cast<uint32_t(*)[32]>(bits + c), s_warp + c);
      sm100::sm100_tcgen05_wait_ld();
      sm100MaskScores<C>(acc, bits, key0, visible);
    }
    const float factor = sm100RowUpdate<C>(st, acc, score_mul, j == 0);
    if (j > 0)
      sm100RescaleO<C>(o_warp, factor);
    if constexpr (T::kDirectP) {
      uint32_t words[T::kBlockN / 8], scales;
      sm100BuildPDirectP<C>(words, scales, acc, score_mul, st);
      sm100::sm100_tcgen05_st_32x32b_x16(p_warp, words);
      // SF atom layout (NUMERICS.md §1.1): row r's 4 scales at (r % 32) * 16 + (r / 32) * 4.
      *reinterpret_cast<uint32_t *>(smem + T::kSfpOffset + (tid % 32) * 16 + (tid / 32) * 4) = scales;
      sm100::fenceProxyAsyncShared();
    } else {
      uint32_t words[T::kBlockN / 4];
      sm100BuildPNvfp8<C>(words, acc, score_mul, st);
      sm100::sm100_tcgen05_st_32x32b_x32(p_warp, words);
    }
    sm100::sm100_tcgen05_wait_st();
    sm100::sm100_tcgen05_fence_before_thread_sync();
    __syncthreads();

    if (tid == 0) {
      sm100::sm100_tcgen05_fence_after_thread_sync();
      const uint64_t v_desc = sm100::sm100SmemDescriptor(stage_smem + T::kVOffsetInStage, 128u, 128u * kVChunks);
      if constexpr (T::kDirectP) {
        sm100::sm100_tcgen05_cp_32x128b_warpx4(tmem + T::kSfpCol, sm100::sm100ScaleAtomDescriptor(smem0 + T::kSfpOffset));
        for (int rb = 0; rb < T::kVRowBlocks; ++rb)
          sm100::sm100_tcgen05_cp_32x128b_warpx4(
              tmem + T::kSfvCol + 4 * rb,
              sm100::sm100ScaleAtomDescriptor(stage_smem + T::kSfvOffsetInStage + 512 * rb));
#pragma unroll
        for (int i = 0; i < T::kPvSteps; ++i) {
          // K = 64 keys per step: two UE8M0 scales per row, bytes 2(i % 2).. of the column.
          const uint32_t sf_id = 2u * static_cast<uint32_t>(i % 2);
          const uint32_t idesc = sm100::sm100InstrDescBlockScaled(128, T::kHeadDim, sm100::kSm100FormatE2m1Mxf4,
                                                                  sm100::kSm100FormatE2m1Mxf4,
                                                                  sm100::Sm100ScaleFormat::Ue8m0, sf_id, sf_id);
          sm100::sm100_tcgen05_mma_ts_m128k64_mxf4_ue8m0(
              tmem + T::kOCol, tmem + T::kPCol + 8 * i, sm100::sm100SmemDescriptorAdvance(v_desc, 256u * i), idesc,
              sm100::sm100ScaleTmemAddress(tmem + T::kSfpCol + 4 * (i / 2), sf_id),
              sm100::sm100ScaleTmemAddress(tmem + T::kSfvCol + 4 * (i / 2), sf_id), j > 0 || i > 0);
        }
      } else {
        constexpr uint32_t kIdescPv = sm100::sm100InstrDescDense(128, T::kHeadDim, sm100::kSm100FormatE4m3,
                                                                 sm100::kSm100FormatE4m3);
#pragma unroll
        for (int i = 0; i < T::kPvSteps; ++i) // K = 32 E4M3 keys = 32 bytes = 8 TMEM columns of P
          sm100::sm100_tcgen05_mma_ts_m128k32_f8f6f4_e4m3(tmem + T::kOCol, tmem + T::kPCol + 8 * i,
                                                          sm100::sm100SmemDescriptorAdvance(v_desc, 256u * i),
                                                          kIdescPv, j > 0 || i > 0);
      }
      sm100::sm100_tcgen05_commit_cta1(bar_pv);
    }
  }

  // ---- epilogue ---------------------------------------------------------------------------------
  if (n_tiles > 0) {
    sm100::mbarrierWait(bar_pv, static_cast<uint32_t>((n_tiles - 1) & 1));
    sm100::sm100_tcgen05_fence_after_thread_sync();
  }
  const bool row_valid = row < sq;
  uint16_t *o_row = reinterpret_cast<uint16_t *>(p.o) + b * p.o_batch_stride + hq * p.o_head_stride +
                    static_cast<int64_t>(row_valid ? row : 0) * p.o_row_stride;
  float *lse = p.lse == 0 ? nullptr : reinterpret_cast<float *>(p.lse) + static_cast<int64_t>(head_q) * sq + row;
  sm100WriteOutput<C>(o_warp, n_tiles > 0, st, out_factor, o_row, lse, row_valid, p.o_fp16 != 0);

  sm100::sm100_tcgen05_fence_before_thread_sync();
  __syncthreads();
  if (warp == 0)
    sm100::sm100_tcgen05_dealloc_cta1(tmem, T::kTmemColumns);
}

} // namespace fa4jit::device::attention
