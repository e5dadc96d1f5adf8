#pragma once
// The attention backward of the training route (docs/NUMERICS.md §3), three passes on mma.sync:
//   backwardPrep: delta = rowsum(dO o O) per query, the head's max |dO| (NaN kept), dQ's FP32
//                 accumulator and the deterministic mode's semaphores zeroed;
//   backwardMain: one CTA per block_n keys of one kv head; each warp owns 16 keys and keeps their
//                 dK and dV in registers over every query block of every query head of the group.
//                 Per query block it rebuilds S^T = K Q^T from the saved NVFP4 Q/K widened to E4M3,
//                 P^T = exp2(S^T mul - LSE2), dP^T = V dO^T (E4M3), dS^T = P^T o (dP^T - delta)
//                 (BF16), then dV += P8^T dO8 (E4M3), dK += dS^T Q (BF16) and dQ += dS K (BF16,
//                 FP32 atomics into the accumulator, in key-block order when deterministic);
//   backwardDq:   dQ = BF16(accumulator * softmax_scale * g_k).
// Register layouts: attention/mma.cuh (lane = g * 4 + q).
#include "fa4jit/attention/mma.cuh"
#include "fa4jit/attention/tile_load.cuh"
#include "fa4jit/attention_backward/step.cuh"
#include "fa4jit/attention_backward/tiles.cuh"
#include "fa4jit/score_terms.cuh"

namespace fa4jit::device::attention_backward {

// ---- prep -----------------------------------------------------------------------------------
template <class C> FA4JIT_DEVICE void backwardPrep(const BackwardParams &p) {
  constexpr int kD = C::head_dim, kWarpsPerCta = kPrepThreads / 32;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int h = blockIdx.y, b = blockIdx.z, row0 = blockIdx.x * kPrepRows;
  const int head_row = b * p.heads_q + h;
  const uint16_t *d_o = reinterpret_cast<const uint16_t *>(p.d_o) + b * p.do_batch_stride + h * p.do_head_stride;
  const uint16_t *o = reinterpret_cast<const uint16_t *>(p.o) + b * p.o_batch_stride + h * p.o_head_stride;
  float *dq_accum = reinterpret_cast<float *>(p.dq_accum) + static_cast<int64_t>(head_row) * p.seqlen_q * kD;
  uint32_t amax_bits = 0; // max of |dO| as bits: NaN (above +Inf) wins
  for (int r = warp; r < kPrepRows; r += kWarpsPerCta) {
    const int row = row0 + r;
    if (row >= p.seqlen_q)
      break;
    float delta = 0.0f;
    for (int d = 2 * lane; d < kD; d += 64) {
      const uint32_t g = *reinterpret_cast<const uint32_t *>(d_o + row * p.do_row_stride + d);
      const uint32_t f = *reinterpret_cast<const uint32_t *>(o + row * p.o_row_stride + d);
      const float g0 = bf16ToFloat(static_cast<uint16_t>(g)), g1 = bf16ToFloat(static_cast<uint16_t>(g >> 16));
      delta = fmaf(g0, bf16ToFloat(static_cast<uint16_t>(f)), delta);
      delta = fmaf(g1, bf16ToFloat(static_cast<uint16_t>(f >> 16)), delta);
      amax_bits = max(amax_bits, max(floatAsBits(g0) & 0x7FFFFFFFu, floatAsBits(g1) & 0x7FFFFFFFu));
      *reinterpret_cast<float2 *>(dq_accum + static_cast<int64_t>(row) * kD + d) = make_float2(0.0f, 0.0f);
    }
#pragma unroll
    for (int off = 16; off > 0; off /= 2)
      delta += __shfl_xor_sync(0xffffffffu, delta, off);
    if (lane == 0)
      reinterpret_cast<float *>(p.delta)[static_cast<int64_t>(head_row) * p.seqlen_q_padded + row] = delta;
  }
#pragma unroll
  for (int off = 16; off > 0; off /= 2)
    amax_bits = max(amax_bits, __shfl_xor_sync(0xffffffffu, amax_bits, off));
  if (lane == 0 && amax_bits != 0)
    atomicMax(reinterpret_cast<uint32_t *>(p.do_amax) + head_row, amax_bits);
  if (C::deterministic) { // the semaphores of the main pass's query blocks inside these rows
    int *sem = reinterpret_cast<int *>(p.dq_semaphore) + static_cast<int64_t>(head_row) * p.dq_semaphore_blocks;
    for (int m = row0 / C::block_m + static_cast<int>(threadIdx.x);
         m < min((row0 + kPrepRows) / C::block_m, p.dq_semaphore_blocks); m += kPrepThreads)
      sem[m] = 0;
  }
}

// ---- stage ----------------------------------------------------------------------------------
// The main pass's per-query operands, once per query instead of once per key block that reads
// them: Q widened to E4M3 and as BF16, dO quantized with the head's scale (which needs the prep
// pass's complete maximum) as rows and transposed, LSE * log2(e); zeros past the end.
template <class C> FA4JIT_DEVICE void backwardStage(const BackwardParams &p) {
  constexpr int kD = C::head_dim, kRows = kStageRows, kRowPitch = backwardFp8Pitch(kD);
  __shared__ __align__(16) uint8_t do_rows[kRows * kRowPitch];
  __shared__ __align__(16) uint16_t qb_rows_bf16[C::wgmma ? kRows * kD : 8];
  uint8_t *qb_rows = reinterpret_cast<uint8_t *>(qb_rows_bf16);
  const int tid = threadIdx.x;
  const int h = blockIdx.y, b = blockIdx.z, row0 = blockIdx.x * kRows;
  const int head_row = b * p.heads_q + h, valid = min(kRows, p.seqlen_q - row0);
  const int64_t padded = p.seqlen_q_padded, head_rows = static_cast<int64_t>(head_row) * padded;

  const uint8_t *qpay = reinterpret_cast<const uint8_t *>(p.q_payload) + head_row * p.q_payload_head_bytes;
  const uint8_t *qsf = reinterpret_cast<const uint8_t *>(p.q_sf) + head_row * p.q_sf_head_bytes;
  const int qrow = static_cast<int>(p.q_payload_row_bytes);
  uint8_t *q8 = reinterpret_cast<uint8_t *>(p.q8) + (head_rows + row0) * kD;
  attention::loadNvfp4Rows<kD, kRows, kD, kPrepThreads, false>(q8, qpay + row0 * p.q_payload_row_bytes, qrow, qsf, row0,
                                                               valid, exp2Int(-C::qk_widen_shift), tid);
  // Q as the dK product reads it: BF16 rows [Sqp][D] (mma.sync), or transposed [D][Sqp] (wgmma,
  // whose BF16 B operand is K-major along queries there) through shared rows.
  uint8_t *qb = C::wgmma ? qb_rows : reinterpret_cast<uint8_t *>(p.qb) + (head_rows + row0) * kD * 2;
  if (C::qk_saved_nvfp4)
    attention::loadNvfp4Rows<kD, kRows, 2 * kD, kPrepThreads, true>(qb, qpay + row0 * p.q_payload_row_bytes, qrow, qsf,
                                                                    row0, valid, 1.0f, tid);
  else
    attention::loadBf16Rows<kD, kRows, 2 * kD, kPrepThreads>(
        qb,
        reinterpret_cast<const uint16_t *>(p.q) + b * p.q_batch_stride + h * p.q_head_stride + row0 * p.q_row_stride,
        static_cast<int>(p.q_row_stride), valid, tid);

  const float s_do = doScale(p, head_row);
  const uint16_t *d_o =
      reinterpret_cast<const uint16_t *>(p.d_o) + b * p.do_batch_stride + h * p.do_head_stride + row0 * p.do_row_stride;
  loadQuantizedDo<kD, kRows, kRowPitch, kPrepThreads>(do_rows, d_o, p.do_row_stride, valid, s_do, 1.0f / s_do, tid);
  if (tid < kRows) {
    const int row = row0 + tid;
    const float l = row < p.seqlen_q
                        ? reinterpret_cast<const float *>(p.lse)[head_row * static_cast<int64_t>(p.seqlen_q) + row]
                        : -infinity();
    // A row that saw no key (LSE = -inf) and a row past the end get P = exp2(-inf) = 0.
    reinterpret_cast<float *>(p.lse2)[head_rows + row] = l == -infinity() ? infinity() : l * kLog2e;
    if (row >= p.seqlen_q)
      reinterpret_cast<float *>(p.delta)[head_rows + row] = 0.0f;
  }
  __syncthreads();
  uint8_t *do8 = reinterpret_cast<uint8_t *>(p.do8) + (head_rows + row0) * kD;
  for (int u = tid; u < kRows * kD / 16; u += kPrepThreads) {
    const int row = u / (kD / 16), vec = u % (kD / 16);
    *reinterpret_cast<uint4 *>(do8 + row * kD + vec * 16) =
        *reinterpret_cast<const uint4 *>(do_rows + row * kRowPitch + vec * 16);
  }
  transposeDo<kD, kRows, kRowPitch, kPrepThreads>(reinterpret_cast<uint8_t *>(p.do_t) + head_row * padded * kD + row0,
                                                  padded, do_rows, tid);
  if (C::wgmma) { // qb_t [d][query]: 8 queries (16 bytes) per store
    uint8_t *qb_t = reinterpret_cast<uint8_t *>(p.qb) + (head_row * padded * kD + row0) * 2;
    for (int u = tid; u < kD * (kRows / 8); u += kPrepThreads) {
      const int d = u % kD, chunk = u / kD;
      uint32_t w[4];
#pragma unroll
      for (int i = 0; i < 4; ++i)
        w[i] = static_cast<uint32_t>(qb_rows_bf16[(chunk * 8 + 2 * i) * kD + d]) |
               (static_cast<uint32_t>(qb_rows_bf16[(chunk * 8 + 2 * i + 1) * kD + d]) << 16);
      *reinterpret_cast<uint4 *>(qb_t + d * padded * 2 + chunk * 16) = make_uint4(w[0], w[1], w[2], w[3]);
    }
  }
}

// ---- dq -------------------------------------------------------------------------------------
template <class C> FA4JIT_DEVICE void backwardDq(const BackwardParams &p) {
  constexpr int kD = C::head_dim, kVecsPerRow = kD / 4;
  const int h = blockIdx.y, b = blockIdx.z, row0 = blockIdx.x * kPrepRows;
  const int head_row = b * p.heads_q + h;
  float factor = C::softmax_scale;
  if (C::qk_saved_nvfp4)
    factor *= reinterpret_cast<const float *>(p.k_global_scale)[b * p.heads_kv + h / (p.heads_q / p.heads_kv)];
  const float *acc = reinterpret_cast<const float *>(p.dq_accum) + static_cast<int64_t>(head_row) * p.seqlen_q * kD;
  uint16_t *dq = reinterpret_cast<uint16_t *>(p.dq) + b * p.dq_batch_stride + h * p.dq_head_stride;
  const int rows = min(kPrepRows, p.seqlen_q - row0);
  for (int u = threadIdx.x; u < rows * kVecsPerRow; u += kPrepThreads) {
    const int row = row0 + u / kVecsPerRow, d = (u % kVecsPerRow) * 4;
    const float4 a = *reinterpret_cast<const float4 *>(acc + static_cast<int64_t>(row) * kD + d);
    *reinterpret_cast<uint2 *>(dq + row * p.dq_row_stride + d) = make_uint2(
        attention::packBf16x2(a.x * factor, a.y * factor), attention::packBf16x2(a.z * factor, a.w * factor));
  }
}

// ---- main -----------------------------------------------------------------------------------

template <class C> FA4JIT_DEVICE void backwardMain(const BackwardParams &p) {
  using T = BackwardTraits<C>;
  constexpr int kD = T::kHeadDim, kBm = T::kBlockM, kBn = T::kBlockN, kQt = T::kQueryTiles, kDt = T::kDimTiles;
  extern __shared__ __align__(16) uint8_t smem[];
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32, g = lane / 4, q4 = lane % 4;
  const int hkv = blockIdx.x, b = blockIdx.z, n_block = blockIdx.y, key0 = n_block * kBn;
  const int kv_row = b * p.heads_kv + hkv;
  const int keys_padded = (p.seqlen_k + 127) / 128 * 128;
  const int valid_keys = min(kBn, p.seqlen_k - key0);

  // The key block: K widened to E4M3 for S, K as the dQ product reads it (BF16), V as E4M3 rows.
  {
    const uint8_t *kpay = reinterpret_cast<const uint8_t *>(p.k_payload) + kv_row * p.k_payload_head_bytes;
    const uint8_t *ksf = reinterpret_cast<const uint8_t *>(p.k_sf) + kv_row * p.k_sf_head_bytes;
    const int krow = static_cast<int>(p.k_payload_row_bytes);
    attention::loadNvfp4Rows<kD, kBn, T::kFp8Pitch, T::kThreads, false, 1>(
        smem + T::kK8, kpay + key0 * p.k_payload_row_bytes, krow, ksf, key0, valid_keys, exp2Int(-C::qk_widen_shift),
        tid);
    if (C::qk_saved_nvfp4)
      attention::loadNvfp4Rows<kD, kBn, T::kBf16Pitch, T::kThreads, true, 1>(
          smem + T::kKb, kpay + key0 * p.k_payload_row_bytes, krow, ksf, key0, valid_keys, 1.0f, tid);
    else
      attention::loadBf16Rows<kD, kBn, T::kBf16Pitch, T::kThreads, 1>(
          smem + T::kKb,
          reinterpret_cast<const uint16_t *>(p.k) + b * p.k_batch_stride + hkv * p.k_head_stride +
              key0 * p.k_row_stride,
          static_cast<int>(p.k_row_stride), valid_keys, tid);
    const uint8_t *vt = reinterpret_cast<const uint8_t *>(p.v_payload) + kv_row * p.v_payload_head_bytes;
    if (C::pv_mxfp4)
      loadMxfp4VtAsRows<kD, kBn, T::kFp8Pitch, T::kThreads>(
          smem + T::kV8, vt, p.v_payload_row_bytes,
          reinterpret_cast<const uint8_t *>(p.v_sf) + kv_row * p.v_sf_head_bytes, key0, keys_padded,
          reinterpret_cast<const int32_t *>(p.v_head_scalar)[kv_row], tid);
    else
      loadFp8VtAsRows<kD, kBn, T::kFp8Pitch, T::kThreads>(smem + T::kV8, vt, p.v_payload_row_bytes, key0, keys_padded,
                                                          tid);
  }
  const float s_v = C::pv_mxfp4 ? exp2Int(reinterpret_cast<const int32_t *>(p.v_head_scalar)[kv_row])
                                : reinterpret_cast<const float *>(p.v_head_scalar)[kv_row];
  const float g_k = reinterpret_cast<const float *>(p.k_global_scale)[kv_row];

  const uint8_t *k8 = smem + T::kK8 + (warp * 16 + g) * T::kFp8Pitch + 4 * q4;
  const uint8_t *v8 = smem + T::kV8 + (warp * 16 + g) * T::kFp8Pitch + 4 * q4;

  KeyGradients<C, kDt> grads;
  auto &dk = grads.dk, &dv = grads.dv;

  const StepSchedule sched(p, C::causal, kBm, key0, b, hkv);
  const int key_row_base = key0 + warp * 16 + g; // this thread's keys: key_row_base and + 8
  const int64_t padded = p.seqlen_q_padded;

  // Step i's query block into stage i % 2: plain copies of what the stage launch wrote.
  auto prefetch = [&](int step) {
    const int head_row = sched.headRow(step), q0 = sched.block(step) * kBm;
    const int64_t row = static_cast<int64_t>(head_row) * padded + q0;
    uint8_t *stage = smem + T::kStages + (step % 2) * T::kStageBytes;
    copyRowsAsync<kBm, kD, T::kFp8Pitch, T::kThreads>(stage + T::kStageQ8,
                                                      reinterpret_cast<const uint8_t *>(p.q8) + row * kD, kD, tid);
    copyRowsAsync<kBm, 2 * kD, T::kBf16Pitch, T::kThreads>(
        stage + T::kStageQb, reinterpret_cast<const uint8_t *>(p.qb) + row * kD * 2, 2 * kD, tid);
    copyRowsAsync<kBm, kD, T::kFp8Pitch, T::kThreads>(stage + T::kStageDo8,
                                                      reinterpret_cast<const uint8_t *>(p.do8) + row * kD, kD, tid);
    copyRowsAsync<kD, kBm, T::kDoTPitch, T::kThreads>(
        stage + T::kStageDoT, reinterpret_cast<const uint8_t *>(p.do_t) + head_row * padded * kD + q0, padded, tid);
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
    // The next step's block goes into the other stage, whose readers (the previous step) all
    // passed the barrier before its dQ product.
    if (step + 1 < sched.steps)
      prefetch(step + 1);
    commitAsyncCopies();
    waitAsyncCopies<1>();
    __syncthreads();
    const uint8_t *stage = smem + T::kStages + (step % 2) * T::kStageBytes;
    const float *lse2_s = reinterpret_cast<const float *>(stage + T::kStageLse2);
    const float *delta_s = reinterpret_cast<const float *>(stage + T::kStageDelta);

    // S^T = K Q^T and dP^T = V dO^T, 16 keys x kBm queries per warp.
    float s[kQt][4], dp[kQt][4];
#pragma unroll
    for (int t = 0; t < kQt; ++t)
#pragma unroll
      for (int i = 0; i < 4; ++i)
        s[t][i] = dp[t][i] = 0.0f;
#pragma unroll 1
    for (int kk = 0; kk < kD / 32; ++kk) {
      const uint32_t ka0 = detail::lds32(k8 + kk * 32), ka1 = detail::lds32(k8 + 8 * T::kFp8Pitch + kk * 32);
      const uint32_t ka2 = detail::lds32(k8 + kk * 32 + 16), ka3 = detail::lds32(k8 + 8 * T::kFp8Pitch + kk * 32 + 16);
      const uint32_t va0 = detail::lds32(v8 + kk * 32), va1 = detail::lds32(v8 + 8 * T::kFp8Pitch + kk * 32);
      const uint32_t va2 = detail::lds32(v8 + kk * 32 + 16), va3 = detail::lds32(v8 + 8 * T::kFp8Pitch + kk * 32 + 16);
#pragma unroll
      for (int t = 0; t < kQt; ++t) {
        const uint8_t *qrow = stage + T::kStageQ8 + (t * 8 + g) * T::kFp8Pitch + kk * 32 + 4 * q4;
        const uint8_t *dorow = stage + T::kStageDo8 + (t * 8 + g) * T::kFp8Pitch + kk * 32 + 4 * q4;
        attention::sm89_mma_m16n8k32_f32_e4m3(s[t], ka0, ka1, ka2, ka3, detail::lds32(qrow), detail::lds32(qrow + 16));
        attention::sm89_mma_m16n8k32_f32_e4m3(dp[t], va0, va1, va2, va3, detail::lds32(dorow),
                                              detail::lds32(dorow + 16));
      }
    }
    probabilitiesAndDs<C>(s, dp, p, head, q0, key_row_base, q4, lse2_s, delta_s);

    // dV += P8^T dO8: P^T as the A fragment (k = queries in the permuted order), dO^T from
    // shared memory in the same order. 16-query blocks fill half of the k = 32 step.
#pragma unroll
    for (int kk = 0; kk < (kBm + 31) / 32; ++kk) {
      uint32_t a[4];
      pFragment<C>(s, kk, a);
#pragma unroll
      for (int t = 0; t < kDt; ++t) {
        const uint8_t *row = stage + T::kStageDoT + (t * 8 + g) * T::kDoTPitch + kk * 32 + 4 * q4;
        const uint32_t b1 = kBm >= 32 ? detail::lds32(row + 16) : 0u;
        attention::sm89_mma_m16n8k32_f32_e4m3(dv[t], a[0], a[1], a[2], a[3], detail::lds32(row), b1);
      }
    }

    // dK += dS^T Q (BF16): dS^T as the A fragment, Q rows transposed by ldmatrix.
#pragma unroll
    for (int kk = 0; kk < kBm / 16; ++kk) {
      uint32_t ds[4];
      dsFragment(dp, kk, ds);
      const uint32_t a0 = ds[0], a1 = ds[1], a2 = ds[2], a3 = ds[3];
      const int j = lane / 8, r = lane % 8;
      const uint8_t *qrow = stage + T::kStageQb + (kk * 16 + (j & 1) * 8 + r) * T::kBf16Pitch + (j >> 1) * 16;
#pragma unroll
      for (int t = 0; t < kDt / 2; ++t) {
        uint32_t bq[4];
        attention::sm75_ldmatrix_x4_trans_b16(bq, attention::sharedAddress(qrow + t * 32));
        attention::sm80_mma_m16n8k16_f32_bf16(dk[2 * t], a0, a1, a2, a3, bq[0], bq[1]);
        attention::sm80_mma_m16n8k16_f32_bf16(dk[2 * t + 1], a0, a1, a2, a3, bq[2], bq[3]);
      }
    }

    // dS^T to shared memory (BF16, [key][query]) for dQ = dS K.
#pragma unroll
    for (int t = 0; t < kQt; ++t)
#pragma unroll
      for (int r = 0; r < 2; ++r)
        *reinterpret_cast<uint32_t *>(smem + T::kDsT + (warp * 16 + g + 8 * r) * T::kDsPitch + (t * 8 + 2 * q4) * 2) =
            attention::packBf16x2(dp[t][2 * r], dp[t][2 * r + 1]);
    __syncthreads();

    // dQ (kBm x kD) += dS K over this CTA's keys: warp = (row group, column slice).
    {
      const int rg = warp / T::kDqColumnSlices, col0 = (warp % T::kDqColumnSlices) * T::kDqCols;
      float dq[T::kDqCols / 8][4];
#pragma unroll
      for (int t = 0; t < T::kDqCols / 8; ++t)
#pragma unroll
        for (int i = 0; i < 4; ++i)
          dq[t][i] = 0.0f;
      const int j = lane / 8, r = lane % 8;
#pragma unroll 1
      for (int kk = 0; kk < kBn / 16; ++kk) {
        uint32_t a[4];
        attention::sm75_ldmatrix_x4_trans_b16(a, attention::sharedAddress(smem + T::kDsT +
                                                                          (kk * 16 + (j >> 1) * 8 + r) * T::kDsPitch +
                                                                          (rg * 16 + (j & 1) * 8) * 2));
        const uint8_t *krow = smem + T::kKb + (kk * 16 + (j & 1) * 8 + r) * T::kBf16Pitch + (col0 + (j >> 1) * 8) * 2;
#pragma unroll
        for (int t = 0; t < T::kDqCols / 16; ++t) {
          uint32_t bk[4];
          attention::sm75_ldmatrix_x4_trans_b16(bk, attention::sharedAddress(krow + t * 32));
          attention::sm80_mma_m16n8k16_f32_bf16(dq[2 * t], a[0], a[1], a[2], a[3], bk[0], bk[1]);
          attention::sm80_mma_m16n8k16_f32_bf16(dq[2 * t + 1], a[0], a[1], a[2], a[3], bk[2], bk[3]);
        }
      }
      if (C::deterministic) { // the key blocks that see query block m are 0 .. some n: in order
        if (tid == 0) {
          awaitTurn(head.semaphore + m, n_block);
        }
        __syncthreads();
      }
#pragma unroll
      for (int t = 0; t < T::kDqCols / 8; ++t)
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const int row = q0 + rg * 16 + g + 8 * (i / 2), col = col0 + t * 8 + 2 * q4 + (i % 2);
          if (row < p.seqlen_q)
            atomicAdd(head.dq_accum + static_cast<int64_t>(row) * kD + col, dq[t][i]);
        }
      if (C::deterministic) {
        __threadfence();
        __syncthreads();
        if (tid == 0)
          passTurn(head.semaphore + m);
      }
    }
  }

  grads.store(p, b, hkv, key_row_base, q4);
}

} // namespace fa4jit::device::attention_backward
