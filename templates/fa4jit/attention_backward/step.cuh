#pragma once
// The pieces of a query step that both main passes share (kernel.cuh's mma.sync one,
// main_wgmma.cuh's wgmma one): their S^T / dP^T accumulators have the same register layout (the
// m16n8 accumulator per warp, attention/mma.cuh), so P, dS, the A fragments built from them and
// the per-head bookkeeping are one code. Element i of n8 tile t of a thread: key
// key_row_base + 8 * (i / 2), query q0 + 8t + 2 q4 + i % 2.
#include "fa4jit/attention/mma.cuh"
#include "fa4jit/attention/tile_load.cuh"
#include "fa4jit/attention_backward/tiles.cuh"
#include "fa4jit/formats.cuh"
#include "fa4jit/score_terms.cuh"

namespace fa4jit::device::attention_backward {

constexpr float kLog2e = 1.44269504088896340736f;
FA4JIT_DEVICE float infinity() { return __int_as_float(0x7F800000); }

// The head's dO scale s_dO = amax / 448 (1 when amax is 0), from the prep pass's maximum.
FA4JIT_DEVICE float doScale(const BackwardParams &p, int head_row) {
  const float amax = bitsAsFloat(reinterpret_cast<const uint32_t *>(p.do_amax)[head_row]);
  const float s = amax / 448.0f;
  return s > 0.0f || s != s ? s : 1.0f; // NaN stays NaN: the gradients of a NaN dO are NaN
}

namespace detail {

FA4JIT_DEVICE uint32_t lds32(const uint8_t *p) { return *reinterpret_cast<const uint32_t *>(p); }

// Four FP32 to four E4M3 bytes (a first, in the lowest byte).
FA4JIT_DEVICE uint32_t packE4m3x4(float a, float b, float c, float d) {
  return static_cast<uint32_t>(floatsToE4M3x2(a, b)) | (static_cast<uint32_t>(floatsToE4M3x2(c, d)) << 16);
}

// MXFP4 value of x in a block whose largest magnitude is amax (NUMERICS.md §1), times 2^offset.
FA4JIT_DEVICE float mxfp4Scaled(float x, int e, int offset) {
  return e2m1ToFloat(floatToE2M1(x * exp2Int(-e))) * exp2Int(e + offset);
}

} // namespace detail

// The steps of a key block: every (query head of the kv head's group, query block) pair, heads
// outermost; per head the query blocks with a query that sees a key of the block (causal: from
// the first such one on).
struct StepSchedule {
  int m_first = 0, m_count = 0, steps = 0, head_row0 = 0;
  FA4JIT_DEVICE StepSchedule(const BackwardParams &p, bool causal, int block_m, int key0, int b, int hkv) {
    const int group = p.heads_q / p.heads_kv, m_blocks = (p.seqlen_q + block_m - 1) / block_m;
    const int diagonal = p.seqlen_k - p.seqlen_q; // query i sees keys j <= i + diagonal
    m_first = causal ? min(m_blocks, max(0, key0 - diagonal) / block_m) : 0;
    m_count = m_blocks - m_first;
    steps = group * m_count;
    head_row0 = b * p.heads_q + hkv * group;
  }
  FA4JIT_DEVICE int headInGroup(int step) const { return step / m_count; }
  FA4JIT_DEVICE int headRow(int step) const { return head_row0 + step / m_count; }
  FA4JIT_DEVICE int block(int step) const { return m_first + step % m_count; }
};

// The per-query LSE2 and delta of a step's block (kBlockM floats each, staged rows padded) into
// the stage, by cp.async.
template <int kBlockM, int kThreads>
FA4JIT_DEVICE void copyRowScalarsAsync(uint8_t *lse2_dst, uint8_t *delta_dst, const BackwardParams &p, int64_t row,
                                       int tid) {
  copyRowsAsync<1, 4 * kBlockM, 4 * kBlockM, kThreads>(lse2_dst, reinterpret_cast<const uint8_t *>(p.lse2) + row * 4, 0,
                                                       tid);
  copyRowsAsync<1, 4 * kBlockM, 4 * kBlockM, kThreads>(delta_dst, reinterpret_cast<const uint8_t *>(p.delta) + row * 4,
                                                       0, tid);
}

// What a step needs of its query head, set when the head changes.
struct HeadTerms {
  float mul = 0.0f;       // score multiplier of S (the forward's)
  float dp_factor = 0.0f; // s_dO * s_v
  float *dq_accum = nullptr;
  int *semaphore = nullptr;
};

// dK and dV of the CTA's keys, summed over the group as each head's FP32 result times its factor:
// the accumulators carry the running sum divided by the current head's factor, and `enterHead`
// rescales them when the head changes.
template <class C, int kDimTiles> struct KeyGradients {
  float dk[kDimTiles][4], dv[kDimTiles][4];
  float dk_factor = 1.0f, dv_factor = 1.0f;

  FA4JIT_DEVICE KeyGradients() {
#pragma unroll
    for (int t = 0; t < kDimTiles; ++t)
#pragma unroll
      for (int i = 0; i < 4; ++i)
        dk[t][i] = dv[t][i] = 0.0f;
  }

  // Query head `hi` of the group (head_row = its batch * Hq + head) starts.
  FA4JIT_DEVICE HeadTerms enterHead(const BackwardParams &p, int head_row, int hi, float g_k, float s_v) {
    HeadTerms h;
    const float s_do = doScale(p, head_row);
    const float g_q = reinterpret_cast<const float *>(p.q_global_scale)[head_row];
    h.mul = scoreMultiplier((g_q * g_k) * C::score_scale);
    h.dp_factor = s_do * s_v;
    const float dv_f = s_do * exp2Int(-C::p_offset_log2);
    const float dk_f = C::softmax_scale * (C::qk_saved_nvfp4 ? g_q : 1.0f);
    if (hi > 0) {
      const float rv = dv_factor / dv_f, rk = dk_factor / dk_f;
#pragma unroll
      for (int t = 0; t < kDimTiles; ++t)
#pragma unroll
        for (int i = 0; i < 4; ++i)
          dv[t][i] *= rv, dk[t][i] *= rk;
    }
    dv_factor = dv_f, dk_factor = dk_f;
    h.dq_accum = reinterpret_cast<float *>(p.dq_accum) + static_cast<int64_t>(head_row) * p.seqlen_q * C::head_dim;
    h.semaphore = reinterpret_cast<int *>(p.dq_semaphore) + static_cast<int64_t>(head_row) * p.dq_semaphore_blocks;
    return h;
  }

  // The CTA's keys: dK = sum * factor, dV likewise, in BF16.
  FA4JIT_DEVICE void store(const BackwardParams &p, int b, int hkv, int key_row_base, int q4) const {
    uint16_t *dkg = reinterpret_cast<uint16_t *>(p.dk) + b * p.dk_batch_stride + hkv * p.dk_head_stride;
    uint16_t *dvg = reinterpret_cast<uint16_t *>(p.dv) + b * p.dv_batch_stride + hkv * p.dv_head_stride;
#pragma unroll
    for (int t = 0; t < kDimTiles; ++t)
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const int key = key_row_base + 8 * r, col = t * 8 + 2 * q4;
        if (key < p.seqlen_k) {
          *reinterpret_cast<uint32_t *>(dkg + key * p.dk_row_stride + col) =
              attention::packBf16x2(dk[t][2 * r] * dk_factor, dk[t][2 * r + 1] * dk_factor);
          *reinterpret_cast<uint32_t *>(dvg + key * p.dv_row_stride + col) =
              attention::packBf16x2(dv[t][2 * r] * dv_factor, dv[t][2 * r + 1] * dv_factor);
        }
      }
  }
};

// P^T = exp2(S^T mul - LSE2) into s and dS^T = P^T o (dP^T dp_factor - delta) into dp, zero where
// the key is past the end or masked.
template <class C, int kQt>
FA4JIT_DEVICE void probabilitiesAndDs(float (&s)[kQt][4], float (&dp)[kQt][4], const BackwardParams &p,
                                      const HeadTerms &h, int q0, int key_row_base, int q4, const float *lse2_s,
                                      const float *delta_s) {
  const int diagonal = p.seqlen_k - p.seqlen_q; // query i sees keys j <= i + diagonal
#pragma unroll
  for (int t = 0; t < kQt; ++t)
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int qi = t * 8 + 2 * q4 + (i % 2), key = key_row_base + 8 * (i / 2);
      const bool visible = key < p.seqlen_k && (!C::causal || key <= q0 + qi + diagonal);
      const float pv = visible ? exp2Hw(fmaf(s[t][i], h.mul, -lse2_s[qi])) : 0.0f;
      s[t][i] = pv;
      dp[t][i] = pv * (dp[t][i] * h.dp_factor - delta_s[qi]);
    }
}

// The A fragment (k32, E4M3) of dV += P8^T dO8 for queries [32 kk, 32 kk + 32): P^T times
// 2^p_offset_log2 (as MXFP4 blocks of 32 queries per key first, for pv_mxfp4), queries permuted
// within each 16 as dO^T is staged. Tiles past kQt (a 16-query step) are zeros.
template <class C, int kQt> FA4JIT_DEVICE void pFragment(const float (&s)[kQt][4], int kk, uint32_t (&a)[4]) {
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int t0 = 4 * kk + 2 * half;
    a[2 * half] = a[2 * half + 1] = 0u;
    if (t0 < kQt) {
      float v[2][4]; // [tile t0, t0 + 1][i]
#pragma unroll
      for (int j = 0; j < 2; ++j)
#pragma unroll
        for (int i = 0; i < 4; ++i)
          v[j][i] = s[t0 + j][i] * exp2Int(C::p_offset_log2);
      if (C::pv_mxfp4) { // MXFP4 blocks of 32 queries per key: tiles 4kk .. 4kk + 3
#pragma unroll
        for (int r = 0; r < 2; ++r) { // key rows g and g + 8
          float amax = 0.0f;
#pragma unroll
          for (int t = 4 * kk; t < 4 * kk + 4; ++t)
            amax = fmaxf(amax, fmaxf(s[t][2 * r], s[t][2 * r + 1]));
          amax = attention::warpQuadMax(amax);
          const int e = max(-127, min(127, static_cast<int>((floatAsBits(amax) >> 23) & 0xFFu) - 127 - 2));
#pragma unroll
          for (int j = 0; j < 2; ++j)
#pragma unroll
            for (int c = 0; c < 2; ++c)
              v[j][2 * r + c] = amax == 0.0f ? 0.0f : detail::mxfp4Scaled(s[t0 + j][2 * r + c], e, C::p_offset_log2);
        }
      }
      a[2 * half] = detail::packE4m3x4(v[0][0], v[0][1], v[1][0], v[1][1]);
      a[2 * half + 1] = detail::packE4m3x4(v[0][2], v[0][3], v[1][2], v[1][3]);
    }
  }
}

// The A fragment (k16, BF16) of dK += dS^T Q for queries [16 kk, 16 kk + 16): the accumulator
// pairs as they stand.
template <int kQt> FA4JIT_DEVICE void dsFragment(const float (&dp)[kQt][4], int kk, uint32_t (&a)[4]) {
  a[0] = attention::packBf16x2(dp[2 * kk][0], dp[2 * kk][1]);
  a[1] = attention::packBf16x2(dp[2 * kk][2], dp[2 * kk][3]);
  a[2] = attention::packBf16x2(dp[2 * kk + 1][0], dp[2 * kk + 1][1]);
  a[3] = attention::packBf16x2(dp[2 * kk + 1][2], dp[2 * kk + 1][3]);
}

// Deterministic dQ: key block n adds to query block m after key blocks 0 .. n - 1 (the ones that
// see it), through the query block's semaphore. `awaitTurn` is thread 0's; the CTA syncs after.
FA4JIT_DEVICE void awaitTurn(const int *semaphore, int n_block) {
  int seen;
  do
    asm volatile("ld.acquire.gpu.global.s32 %0, [%1];" : "=r"(seen) : "l"(semaphore) : "memory");
  while (seen != n_block);
}
FA4JIT_DEVICE void passTurn(int *semaphore) {
  asm volatile("red.release.gpu.global.add.s32 [%0], 1;" ::"l"(semaphore) : "memory");
}

} // namespace fa4jit::device::attention_backward
