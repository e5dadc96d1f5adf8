#pragma once
// The backward's main pass on warpgroup MMAs (sm_90a): the products of backwardMain (kernel.cuh)
// with the same numerics and register layouts, issued as wgmma from swizzled shared tiles. Each
// warpgroup owns 64 keys of the CTA's block_n (warp w of the CTA: keys 16w .. 16w + 15, as in
// backwardMain), and per query block of block_m queries computes
//   S^T  = K8 Q8^T          m64 x block_m, k = D     E4M3, both operands from shared memory
//   dP^T = V8 dO8^T         m64 x block_m, k = D     E4M3, both from shared memory
//   dV  += P8^T dO8         m64 x D, k = block_m     E4M3, P^T from registers, dO^T K-major
//   dK  += dS^T Q           m64 x D, k = block_m     BF16, dS^T from registers, Q^T K-major
//   dQ   = dS K             m64 x half of D, k = keys     BF16, both from shared memory (64-query
//                           steps; 32-query ones take dQ^T = K^T dS^T, m64 per half of D)
// FP8 wgmma takes K-major operands only, hence the transposed views: dO^T and Q^T come from the
// stage launch, K^T is transposed once per CTA. dQ goes to the FP32 accumulator with atomics, in
// key-block order when deterministic. With two warpgroups, warpgroup h takes half h of the head
// dim over all of the CTA's keys (32 columns at D64), so each element is added once per CTA.
#include "fa4jit/attention_backward/kernel.cuh"
#include "fa4jit/attention_sm90/wgmma_bf16.cuh"
#include "fa4jit/mbarrier.cuh"

namespace fa4jit::device::attention_backward {

template <class C> struct BackwardWgmmaTraits {
  static constexpr int kHeadDim = C::head_dim;
  static constexpr int kBlockM = C::block_m;
  static constexpr int kBlockN = C::block_n;
  static constexpr int kWarps = C::warps;
  static constexpr int kThreads = kWarps * 32;
  static constexpr int kGroups = kWarps / 4;
  static constexpr int kQueryTiles = kBlockM / 8;
  static constexpr int kDimTiles = kHeadDim / 8;
  static constexpr int kDimHalves = kHeadDim / 64; // m64 slices of dQ^T
  // Columns of dQ = dS K per wgmma (64-query steps): 64, or 32 where two warpgroups share D64.
  static constexpr int kDqSlice = kHeadDim / kGroups < 64 ? kHeadDim / kGroups : 64;
  static constexpr int kDqSlices = kHeadDim / kDqSlice;
  // Shared-memory tiles, in bytes from the 1024-aligned base.
  static constexpr int kK8 = 0;
  static constexpr int kV8 = kK8 + attention_sm90::operandTileBytes(kBlockN, kHeadDim);
  static constexpr int kKbT = kV8 + attention_sm90::operandTileBytes(kBlockN, kHeadDim);
  static constexpr int kDs = kKbT + attention_sm90::operandTileBytes(kHeadDim, 2 * kBlockN);
  static constexpr int kStages = kDs + attention_sm90::operandTileBytes(kBlockM, 2 * kBlockN);
  static constexpr int kStageQ8 = 0;
  static constexpr int kStageDo8 = kStageQ8 + attention_sm90::operandTileBytes(kBlockM, kHeadDim);
  static constexpr int kStageDoT = kStageDo8 + attention_sm90::operandTileBytes(kBlockM, kHeadDim);
  static constexpr int kStageQbT = kStageDoT + attention_sm90::operandTileBytes(kHeadDim, kBlockM);
  static constexpr int kStageLse2 = kStageQbT + attention_sm90::operandTileBytes(kHeadDim, 2 * kBlockM);
  static constexpr int kStageDelta = kStageLse2 + 4 * kBlockM;
  static constexpr int kStageBytes = backwardWgmmaStageBytes(kHeadDim, kBlockM);
  static_assert(kStageDelta + 4 * kBlockM <= kStageBytes, "query stage layout");
  static constexpr int kSharedBytes = kStages + 2 * kStageBytes + 1024;
  // A 64-query step's dQ rows (FP32, D each) go out from its stage's operand tiles, which the step
  // no longer reads then; the pitch puts the 8 rows of an accumulator column 8 banks apart.
  static constexpr int kDqPitch = kHeadDim * 4 + 32;
  static_assert(kBlockM != 64 || kBlockM * kDqPitch <= kStageLse2, "dQ rows fit in the stage's tiles");
  static_assert(kSharedBytes == backwardWgmmaSharedBytes(kHeadDim, kBlockM, kBlockN), "shared layout");
  // The prologue widens the key block into dense rows in the (not yet used) stages first: K and V
  // as E4M3 [keys][D], K as BF16 [keys][D].
  static constexpr int kScratchBytes = kBlockN * 4 * kHeadDim;
  static_assert(kScratchBytes <= 2 * kStageBytes, "the prologue's rows fit in the stages");

  static_assert(kHeadDim == 64 || kHeadDim == 128, "head_dim 64 or 128");
  static_assert(kBlockM == 32 || kBlockM == 64, "block_m 32 or 64 (the wgmma N of S^T)");
  static_assert(kBlockN == 64 * kGroups && (kGroups == 1 || kGroups == kDimHalves || kBlockM == 64),
                "64 keys per warpgroup; two warpgroups split dQ^T by halves of D (dQ at D64: by 32 columns)");
  static_assert(kStageRows % kBlockM == 0, "query blocks tile the staged rows");
  static_assert(!C::pv_mxfp4 || kBlockM % 32 == 0, "MXFP4 P blocks 32 queries");
};

namespace wgmma_detail {

using attention_sm90::operandDescriptor;
using attention_sm90::swizzledOffset;

// E4M3 m64 x kN from shared memory (S^T, dP^T: kN = block_m).
template <int kN> FA4JIT_DEVICE void fp8ss(float (&d)[kN / 8][4], uint64_t a, uint64_t b) {
  if constexpr (kN == 32)
    attention_sm90::sm90_wgmma_m64n32k32_f32_e4m3_ss(d, a, b, 1);
  else
    attention_sm90::sm90_wgmma_m64n64k32_f32_e4m3_ss(d, a, b, 1);
}
// E4M3 m64 x kN, A from registers (dV: kN = D).
template <int kN> FA4JIT_DEVICE void fp8rs(float (&d)[kN / 8][4], const uint32_t (&a)[4], uint64_t b) {
  if constexpr (kN == 64)
    attention_sm90::sm90_wgmma_m64n64k32_f32_e4m3_rs(d, a, b, 1);
  else
    attention_sm90::sm90_wgmma_m64n128k32_f32_e4m3_rs(d, a, b, 1);
}
// BF16 m64 x kN, A from registers (dK: kN = D).
template <int kN> FA4JIT_DEVICE void bf16rs(float (&d)[kN / 8][4], const uint32_t (&a)[4], uint64_t b) {
  if constexpr (kN == 64)
    attention_sm90::sm90_wgmma_m64n64k16_f32_bf16_rs(d, a, b, 1);
  else
    attention_sm90::sm90_wgmma_m64n128k16_f32_bf16_rs(d, a, b, 1);
}
// BF16 m64 x kN from shared memory (dQ^T: kN = block_m).
template <int kN> FA4JIT_DEVICE void bf16ss(float (&d)[kN / 8][4], uint64_t a, uint64_t b) {
  if constexpr (kN == 32)
    attention_sm90::sm90_wgmma_m64n32k16_f32_bf16_ss(d, a, b, 1);
  else
    attention_sm90::sm90_wgmma_m64n64k16_f32_bf16_ss(d, a, b, 1);
}

// dst[0 .. bytes / 4) += src[...] (FP32), one bulk reduction from shared memory (16-byte aligned
// and sized), in the issuing thread's bulk async-group.
FA4JIT_DEVICE void bulkReduceAddF32(float *dst, const uint8_t *src, int bytes) {
  asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%0], [%1], %2;" ::"l"(dst),
               "r"(attention::sharedAddress(src)), "r"(bytes)
               : "memory");
}
FA4JIT_DEVICE void bulkCommit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
// The thread's bulk reductions have read their shared memory / are complete in global memory.
FA4JIT_DEVICE void bulkWaitRead() { asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory"); }
FA4JIT_DEVICE void bulkWaitDone() { asm volatile("cp.async.bulk.wait_group 0;" ::: "memory"); }

template <int kTiles> FA4JIT_DEVICE void zero(float (&d)[kTiles][4]) {
#pragma unroll
  for (int t = 0; t < kTiles; ++t)
#pragma unroll
    for (int i = 0; i < 4; ++i)
      d[t][i] = 0.0f;
}

// Dense rows [kRows][kRowBytes] into a swizzled K-major tile of kRows rows.
template <int kRows, int kRowBytes, int kThreads>
FA4JIT_DEVICE void swizzleRows(uint8_t *tile, const uint8_t *rows, int tid) {
  constexpr int kChunks = kRowBytes / 16;
  for (int u = tid; u < kRows * kChunks; u += kThreads) {
    const int r = u / kChunks, c = u % kChunks;
    *reinterpret_cast<uint4 *>(tile + swizzledOffset<kRows>(r, 16 * c)) =
        *reinterpret_cast<const uint4 *>(rows + r * kRowBytes + 16 * c);
  }
}

// Rows of a staged global operand (`pitch` bytes apart) into a swizzled tile, by cp.async.
template <int kRows, int kRowBytes, int kThreads>
FA4JIT_DEVICE void copySwizzledAsync(uint8_t *tile, const uint8_t *gmem, int64_t pitch, int tid) {
  constexpr int kChunks = kRowBytes / 16;
#pragma unroll 1
  for (int u = tid; u < kRows * kChunks; u += kThreads) {
    const int r = u / kChunks, c = u % kChunks;
    copyAsync16(tile + swizzledOffset<kRows>(r, 16 * c), gmem + r * pitch + 16 * c);
  }
}

} // namespace wgmma_detail

template <class C> FA4JIT_DEVICE void backwardMainWgmma(const BackwardParams &p) {
#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
  static_assert(C::head_dim != C::head_dim, "the wgmma backward needs sm_90a");
#endif
  using T = BackwardWgmmaTraits<C>;
  using namespace wgmma_detail;
  constexpr int kD = T::kHeadDim, kBm = T::kBlockM, kBn = T::kBlockN, kQt = T::kQueryTiles, kDt = T::kDimTiles;
  extern __shared__ __align__(16) uint8_t smem_raw[];
  const uint32_t raw_addr = attention::sharedAddress(smem_raw);
  uint8_t *smem = smem_raw + ((1024 - raw_addr % 1024) % 1024); // the swizzle needs 1024-byte tiles
  const uint32_t base = attention::sharedAddress(smem);
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32, g = lane / 4, q4 = lane % 4;
  const int wg = warp / 4;
  const int hkv = blockIdx.x, b = blockIdx.z, n_block = blockIdx.y, key0 = n_block * kBn;
  const int kv_row = b * p.heads_kv + hkv;
  const int keys_padded = (p.seqlen_k + 127) / 128 * 128;
  const int valid_keys = min(kBn, p.seqlen_k - key0);

  // The key block, once: widened into dense rows in the stages, then swizzled into its tiles.
  {
    uint8_t *k_rows = smem + T::kStages, *v_rows = k_rows + kBn * kD, *kb_rows = v_rows + kBn * kD;
    const uint8_t *kpay = reinterpret_cast<const uint8_t *>(p.k_payload) + kv_row * p.k_payload_head_bytes;
    const uint8_t *ksf = reinterpret_cast<const uint8_t *>(p.k_sf) + kv_row * p.k_sf_head_bytes;
    const int krow = static_cast<int>(p.k_payload_row_bytes);
    attention::loadNvfp4Rows<kD, kBn, kD, T::kThreads, false, 1>(k_rows, kpay + key0 * p.k_payload_row_bytes, krow, ksf,
                                                                 key0, valid_keys, exp2Int(-C::qk_widen_shift), tid);
    if (C::qk_saved_nvfp4)
      attention::loadNvfp4Rows<kD, kBn, 2 * kD, T::kThreads, true, 1>(kb_rows, kpay + key0 * p.k_payload_row_bytes,
                                                                      krow, ksf, key0, valid_keys, 1.0f, tid);
    else
      attention::loadBf16Rows<kD, kBn, 2 * kD, T::kThreads, 1>(kb_rows,
                                                               reinterpret_cast<const uint16_t *>(p.k) +
                                                                   b * p.k_batch_stride + hkv * p.k_head_stride +
                                                                   key0 * p.k_row_stride,
                                                               static_cast<int>(p.k_row_stride), valid_keys, tid);
    const uint8_t *vt = reinterpret_cast<const uint8_t *>(p.v_payload) + kv_row * p.v_payload_head_bytes;
    if (C::pv_mxfp4)
      loadMxfp4VtAsRows<kD, kBn, kD, T::kThreads>(
          v_rows, vt, p.v_payload_row_bytes, reinterpret_cast<const uint8_t *>(p.v_sf) + kv_row * p.v_sf_head_bytes,
          key0, keys_padded, reinterpret_cast<const int32_t *>(p.v_head_scalar)[kv_row], tid);
    else
      loadFp8VtAsRows<kD, kBn, kD, T::kThreads>(v_rows, vt, p.v_payload_row_bytes, key0, keys_padded, tid);
    __syncthreads();
    swizzleRows<kBn, kD, T::kThreads>(smem + T::kK8, k_rows, tid);
    swizzleRows<kBn, kD, T::kThreads>(smem + T::kV8, v_rows, tid);
    // K^T [d][key] in BF16: 8 keys (16 bytes) per store.
    const uint16_t *kb = reinterpret_cast<const uint16_t *>(kb_rows);
    for (int u = tid; u < kD * (kBn / 8); u += T::kThreads) {
      const int d = u % kD, chunk = u / kD;
      uint32_t w[4];
#pragma unroll
      for (int i = 0; i < 4; ++i)
        w[i] = static_cast<uint32_t>(kb[(chunk * 8 + 2 * i) * kD + d]) |
               (static_cast<uint32_t>(kb[(chunk * 8 + 2 * i + 1) * kD + d]) << 16);
      *reinterpret_cast<uint4 *>(smem + T::kKbT + swizzledOffset<kD>(d, 16 * chunk)) =
          make_uint4(w[0], w[1], w[2], w[3]);
    }
    fenceProxyAsyncShared(); // these generic stores -> the tensor core's view
    __syncthreads();         // (and the stages are free again)
  }
  const float s_v = C::pv_mxfp4 ? exp2Int(reinterpret_cast<const int32_t *>(p.v_head_scalar)[kv_row])
                                : reinterpret_cast<const float *>(p.v_head_scalar)[kv_row];
  const float g_k = reinterpret_cast<const float *>(p.k_global_scale)[kv_row];
  const uint32_t k8_lo = attention_sm90::sw128DescriptorLo(base + T::kK8);
  const uint32_t v8_lo = attention_sm90::sw128DescriptorLo(base + T::kV8);
  const uint32_t kbt_lo = attention_sm90::sw128DescriptorLo(base + T::kKbT);
  const uint32_t ds_lo = attention_sm90::sw128DescriptorLo(base + T::kDs);

  KeyGradients<C, kDt> grads;
  auto &dk = grads.dk, &dv = grads.dv;

  const StepSchedule sched(p, C::causal, kBm, key0, b, hkv);
  const int key_row_base = key0 + warp * 16 + g; // this thread's keys: key_row_base and + 8
  const int64_t padded = p.seqlen_q_padded;
  // 64-query steps send dQ by bulk reductions from shared memory, issued by lane 0 of each warp.
  constexpr bool kBulkDq = kBm == 64;
  const bool dq_issuer = kBulkDq && lane == 0;

  // Step i's query block into stage i % 2, swizzled on the way.
  auto prefetch = [&](int step) {
    const int head_row = sched.headRow(step), q0 = sched.block(step) * kBm;
    const int64_t row = static_cast<int64_t>(head_row) * padded + q0;
    uint8_t *stage = smem + T::kStages + (step % 2) * T::kStageBytes;
    copySwizzledAsync<kBm, kD, T::kThreads>(stage + T::kStageQ8, reinterpret_cast<const uint8_t *>(p.q8) + row * kD, kD,
                                            tid);
    copySwizzledAsync<kBm, kD, T::kThreads>(stage + T::kStageDo8, reinterpret_cast<const uint8_t *>(p.do8) + row * kD,
                                            kD, tid);
    copySwizzledAsync<kD, kBm, T::kThreads>(
        stage + T::kStageDoT, reinterpret_cast<const uint8_t *>(p.do_t) + head_row * padded * kD + q0, padded, tid);
    copySwizzledAsync<kD, 2 * kBm, T::kThreads>(
        stage + T::kStageQbT, reinterpret_cast<const uint8_t *>(p.qb) + (head_row * padded * kD + q0) * 2, padded * 2,
        tid);
    copyRowScalarsAsync<kBm, T::kThreads>(stage + T::kStageLse2, stage + T::kStageDelta, p, row, tid);
  };
  if (sched.steps > 0)
    prefetch(0);
  commitAsyncCopies();

  HeadTerms head;
  for (int step = 0; step < sched.steps; ++step) {
    const int hi = sched.headInGroup(step), m = sched.block(step), q0 = m * kBm;
    if (step % sched.m_count == 0) // a new query head of the group
      head = grads.enterHead(p, sched.headRow(step), hi, g_k, s_v);
    // This step's block has landed (it was fetched during the previous step); the previous step's
    // dQ rows have left its stage (the bulk reductions' reads are waited for before the barrier).
    if (kBulkDq && dq_issuer)
      bulkWaitRead();
    waitAsyncCopies<0>();
    fenceProxyAsyncShared(); // this thread's cp.async bytes -> the tensor core's view
    __syncthreads();
    // The next step's block goes into the other stage, whose readers (the previous step) are all
    // past the barrier above.
    if (step + 1 < sched.steps)
      prefetch(step + 1);
    commitAsyncCopies();
    uint8_t *stage_rw = smem + T::kStages + (step % 2) * T::kStageBytes;
    const uint8_t *stage = stage_rw;
    const uint32_t stage_addr = base + T::kStages + (step % 2) * T::kStageBytes;
    const float *lse2_s = reinterpret_cast<const float *>(stage + T::kStageLse2);
    const float *delta_s = reinterpret_cast<const float *>(stage + T::kStageDelta);
    const uint32_t q8_lo = attention_sm90::sw128DescriptorLo(stage_addr + T::kStageQ8);
    const uint32_t do8_lo = attention_sm90::sw128DescriptorLo(stage_addr + T::kStageDo8);
    const uint32_t dot_lo = attention_sm90::sw128DescriptorLo(stage_addr + T::kStageDoT);
    const uint32_t qbt_lo = attention_sm90::sw128DescriptorLo(stage_addr + T::kStageQbT);

    // S^T = K Q^T and dP^T = V dO^T: this warpgroup's 64 keys x kBm queries, one wgmma group (as
    // two groups, P's exponentials under dP's products, it measured 0-3% slower on the H100: fa4jit
    // bench --backward against this kernel).
    float s[kQt][4], dp[kQt][4];
    zero(s);
    zero(dp);
    attention_sm90::sm90_wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kD / 32; ++kk) {
      fp8ss<kBm>(s, operandDescriptor<kBn>(k8_lo, 64 * wg, kk), operandDescriptor<kBm>(q8_lo, 0, kk));
      fp8ss<kBm>(dp, operandDescriptor<kBn>(v8_lo, 64 * wg, kk), operandDescriptor<kBm>(do8_lo, 0, kk));
    }
    attention_sm90::sm90_wgmma_commit();
    attention_sm90::sm90_wgmma_wait<0>();
    attention_sm90::sm90_fence_regs(s);
    attention_sm90::sm90_fence_regs(dp);

    probabilitiesAndDs<C>(s, dp, p, head, q0, key_row_base, q4, lse2_s, delta_s);

    // dV += P8^T dO8 (P^T packed as backwardMain packs it: queries permuted within each 16, as
    // dO^T is staged) and dK += dS^T Q (BF16, the accumulator pairs as they stand).
    uint32_t pa[kBm / 32][4], sa[kBm / 16][4];
#pragma unroll
    for (int kk = 0; kk < kBm / 32; ++kk)
      pFragment<C>(s, kk, pa[kk]);
#pragma unroll
    for (int kk = 0; kk < kBm / 16; ++kk)
      dsFragment(dp, kk, sa[kk]);
    attention_sm90::sm90_wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kBm / 32; ++kk)
      fp8rs<kD>(dv, pa[kk], operandDescriptor<kD>(dot_lo, 0, kk));
#pragma unroll
    for (int kk = 0; kk < kBm / 16; ++kk)
      bf16rs<kD>(dk, sa[kk], operandDescriptor<kD>(qbt_lo, 0, kk));
    attention_sm90::sm90_wgmma_commit();

    // dS [query][key] (BF16) into its tile while they run: the B operand of dQ^T.
#pragma unroll
    for (int t = 0; t < kQt; ++t)
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int qi = t * 8 + 2 * q4 + (i % 2), key = warp * 16 + g + 8 * (i / 2);
        *reinterpret_cast<uint16_t *>(smem + T::kDs + swizzledOffset<kBm>(qi, (2 * key) & ~15) + (2 * key) % 16) =
            floatToBF16(dp[t][i]);
      }
    attention_sm90::sm90_wgmma_wait<0>();
    attention_sm90::sm90_fence_regs(dv);
    attention_sm90::sm90_fence_regs(dk);
    fenceProxyAsyncShared();
    __syncthreads();

    if (C::deterministic) { // the key blocks that see query block m are 0 .. some n: in order
      if (tid == 0) {
        awaitTurn(head.semaphore + m, n_block);
      }
      __syncthreads();
    }
    // dQ over the CTA's keys, per 64-wide half of D: warpgroup h takes half h (two warpgroups; at
    // D64, 32-column halves), or every half (one). A 64-query step is one m64 of dQ = dS K, whose
    // accumulator pairs are adjacent columns of a dQ row: one 8-byte reduction each. A 32-query
    // step takes the m64 from the head dim instead: dQ^T = K^T dS^T, one 4-byte reduction per
    // element.
    if constexpr (kBm == 64) {
      constexpr int kSlice = T::kDqSlice;
#pragma unroll
      for (int hh = 0; hh < T::kDqSlices / T::kGroups; ++hh) {
        const int slice = T::kGroups == 1 ? hh : wg;
        float dq[kSlice / 8][4];
        zero(dq);
        attention_sm90::sm90_wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < kBn / 16; ++kk)
          bf16ss<kSlice>(dq, operandDescriptor<kBm>(ds_lo, 0, kk), operandDescriptor<kD>(kbt_lo, kSlice * slice, kk));
        attention_sm90::sm90_wgmma_commit();
        attention_sm90::sm90_wgmma_wait<0>();
        attention_sm90::sm90_fence_regs(dq);
        // The block's dQ rows into this step's stage (free since the barrier before dQ), full rows
        // of D FP32 at a bank-spreading pitch.
#pragma unroll
        for (int t = 0; t < kSlice / 8; ++t)
#pragma unroll
          for (int r = 0; r < 2; ++r) {
            const int row = (warp % 4) * 16 + g + 8 * r, d = kSlice * slice + t * 8 + 2 * q4;
            *reinterpret_cast<float2 *>(stage_rw + row * T::kDqPitch + d * 4) =
                make_float2(dq[t][2 * r], dq[t][2 * r + 1]);
          }
      }
      fenceProxyAsyncShared(); // these generic stores -> the bulk copy's view
      __syncthreads();
      // One bulk reduction per valid row into the FP32 accumulator, issued by lane 0 of each warp.
      if (dq_issuer) {
        for (int row = warp * (kBm / T::kWarps); row < (warp + 1) * (kBm / T::kWarps); ++row)
          if (q0 + row < p.seqlen_q)
            bulkReduceAddF32(head.dq_accum + static_cast<int64_t>(q0 + row) * kD, stage_rw + row * T::kDqPitch, kD * 4);
        bulkCommit();
        if (C::deterministic)
          bulkWaitDone(); // the rows are in global memory before the semaphore moves on
      }
    } else {
#pragma unroll
      for (int hh = 0; hh < T::kDimHalves / T::kGroups; ++hh) {
        const int half = T::kGroups == 1 ? hh : wg;
        float dqt[kQt][4];
        zero(dqt);
        attention_sm90::sm90_wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < kBn / 16; ++kk)
          bf16ss<kBm>(dqt, operandDescriptor<kD>(kbt_lo, 64 * half, kk), operandDescriptor<kBm>(ds_lo, 0, kk));
        attention_sm90::sm90_wgmma_commit();
        attention_sm90::sm90_wgmma_wait<0>();
        attention_sm90::sm90_fence_regs(dqt);
#pragma unroll
        for (int t = 0; t < kQt; ++t)
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            const int d = 64 * half + (warp % 4) * 16 + g + 8 * (i / 2), row = q0 + t * 8 + 2 * q4 + (i % 2);
            if (row < p.seqlen_q)
              atomicAdd(head.dq_accum + static_cast<int64_t>(row) * kD + d, dqt[t][i]);
          }
      }
    }
    if (C::deterministic) {
      if (dq_issuer)
        asm volatile("fence.proxy.async.global;" ::: "memory"); // the bulk writes -> generic view
      __threadfence();
      __syncthreads();
      if (tid == 0)
        passTurn(head.semaphore + m);
    }
  }

  if (dq_issuer)
    bulkWaitRead(); // the shared memory stays until the last rows are read

  grads.store(p, b, hkv, key_row_base, q4);
}

} // namespace fa4jit::device::attention_backward
