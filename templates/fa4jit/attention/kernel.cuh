#pragma once
// Forward attention, mma.sync path (sm_80 for the bf16 route, sm_89+ for the FP8-fed routes,
// sm_90a primary). Numerics: docs/NUMERICS.md, exactly.
//
// ===== Instantiation contract (what the code generator emits) =====================================
// One translation unit, compiled by NVRTC (or nvcc) with "-I <templates root>" (the embedded
// headers) and --std=c++17, containing in this order:
//   1. #include "fa4jit/attention/kernel.cuh"
//   2. A config struct (any name, namespace scope; an anonymous namespace is fine) with exactly the
//      static constexpr members listed in fa4jit/attention/config.cuh, spelled with the enums of
//      fa4jit::device::attention (Route, Widening, GuardKind) and fa4jit::device::DirectPCoefficients
//      {kind, alpha, beta, {theta[0..6]}, y_split}. Floats are written as exact literals (hex-float
//      or enough decimal digits to round-trip, with the f suffix): score_scale is the FP32 the spec's
//      numerics define (softmax_scale * log2(e), times 4^qk_widen_shift for Widening::E4m3).
//   3. static_asserts that pin what the host computed independently:
//        AttentionTraits<Cfg>::kThreads == warps * 32
//        AttentionTraits<Cfg>::kSharedBytes == attentionSharedBytes(...) (params.cuh, host side)
//      so a disagreement between generator and template is a compile error, not a bad launch.
//   4. The entry point, extern "C" so its name is not mangled (cuModuleGetFunction by name):
//        extern "C" __global__ void __launch_bounds__(<warps * 32>)
//        <kernel_name>(const fa4jit::device::attention::AttentionParams params) {
//          fa4jit::device::attention::attentionForward<Cfg>(params);
//        }
//   Launch: grid (ceil(Sq / block_m), Hq, B), block (warps * 32), dynamic shared memory
//   kSharedBytes (opt in above 48 KiB). Kernel parameter: the AttentionParams struct by value.
//   templates/examples/attention_directp_d128.cu is a complete example.
// ==================================================================================================
//
// Schedule (correctness-first; the wgmma/TMA path is a separate kernel): one CTA per (block_m
// query rows, query head, batch), 16 rows per warp. Q is widened into shared memory once; each key
// tile is loaded, widened, and consumed between two __syncthreads (multiple resident CTAs hide the
// load latency). Key tiles run from key 0 upwards, as docs/NUMERICS.md §2.2's online softmax does;
// causal CTAs stop at their last visible key, and only tiles that cross a row's visible limit (or
// seqlen_k) pay for the mask.
#include "fa4jit/attention/config.cuh"
#include "fa4jit/attention/epilogue.cuh"
#include "fa4jit/attention/mma.cuh"
#include "fa4jit/attention/p_bf16.cuh"
#include "fa4jit/attention/p_directp.cuh"
#include "fa4jit/attention/p_nvfp8.cuh"
#include "fa4jit/attention/params.cuh"
#include "fa4jit/attention/pv.cuh"
#include "fa4jit/attention/scores.cuh"
#include "fa4jit/attention/softmax.cuh"
#include "fa4jit/attention/tile_load.cuh"

namespace fa4jit::device::attention {

// Keys visible to query row i (bottom-right aligned causal mask: key j visible iff j <= i + Sk - Sq).
template <bool kCausal> FA4JIT_DEVICE int visibleKeys(int row, int seqlen_q, int seqlen_k) {
  if constexpr (kCausal) {
    const int v = row + seqlen_k - seqlen_q + 1;
    return v < 0 ? 0 : (v > seqlen_k ? seqlen_k : v);
  } else {
    return seqlen_k;
  }
}

template <class C> FA4JIT_DEVICE void attentionForward(const AttentionParams &p) {
  using T = AttentionTraits<C>;
  static_assert(T::kBlockN % 32 == 0, "the mma.sync kernel's key tiles are whole 32-key k-steps");
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 890
  static_assert(C::route == Route::Bf16, "FP8-fed routes need FP8 mma.sync (sm_89 or newer)");
#endif
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
  static_assert(C::route != Route::Bf16, "the bf16 route needs BF16 mma.sync (sm_80 or newer)");
#endif
  extern __shared__ __align__(16) uint8_t smem[];
  uint8_t *q_smem = smem + T::kQOffset;
  uint8_t *k_smem = smem + T::kKOffset;
  uint8_t *v_smem = smem + T::kVOffset;

  const int tid = static_cast<int>(threadIdx.x);
  const int lane = tid % 32, warp = tid / 32;
  const int m0 = static_cast<int>(blockIdx.x) * T::kBlockM;
  const int hq = static_cast<int>(blockIdx.y), b = static_cast<int>(blockIdx.z);
  const int hkv = hq / (p.heads_q / p.heads_kv);
  const int sq = p.seqlen_q, sk = p.seqlen_k;
  if (m0 >= sq)
    return;
  const int keys_padded = (sk + 127) / 128 * 128;
  const int head_q = b * p.heads_q + hq, head_kv = b * p.heads_kv + hkv;

  // ---- Q tile and the per-head score multiplier --------------------------------------------------
  float score_mul = C::score_scale;
  const int q_valid = sq - m0 < T::kBlockM ? sq - m0 : T::kBlockM;
  if constexpr (C::route == Route::Bf16) {
    const uint16_t *qg = reinterpret_cast<const uint16_t *>(p.q) + b * p.q_batch_stride + hq * p.q_head_stride;
    loadBf16Rows<T::kHeadDim, T::kBlockM, T::kQkPitch, T::kThreads>(q_smem, qg + m0 * p.q_row_stride,
                                                                    static_cast<int>(p.q_row_stride), q_valid, tid);
  } else {
    const uint8_t *qg = reinterpret_cast<const uint8_t *>(p.q) + b * p.q_batch_stride + hq * p.q_head_stride;
    const uint8_t *qsf = reinterpret_cast<const uint8_t *>(p.q_sf) + b * p.q_sf_batch_stride + hq * p.q_sf_head_stride;
    const float pre = T::kQkBf16 ? 1.0f : exp2Int(-C::qk_widen_shift);
    loadNvfp4Rows<T::kHeadDim, T::kBlockM, T::kQkPitch, T::kThreads, T::kQkBf16>(
        q_smem, qg + m0 * p.q_row_stride, static_cast<int>(p.q_row_stride), qsf, m0, q_valid, pre, tid);
    const float gq = reinterpret_cast<const float *>(p.q_global_scale)[head_q];
    const float gk = reinterpret_cast<const float *>(p.k_global_scale)[head_kv];
    score_mul = (gq * gk) * C::score_scale; // NUMERICS.md §2.1: this order, in FP32
  }
  score_mul = scoreMultiplier(score_mul);

  // Per-head pointers of K and V.
  const uint8_t *kg = reinterpret_cast<const uint8_t *>(p.k) +
                      (b * p.k_batch_stride + hkv * p.k_head_stride) * (C::route == Route::Bf16 ? 2 : 1);
  const uint8_t *vg = reinterpret_cast<const uint8_t *>(p.v) +
                      (b * p.v_batch_stride + hkv * p.v_head_stride) * (C::route == Route::Bf16 ? 2 : 1);
  const uint8_t *ksf = reinterpret_cast<const uint8_t *>(p.k_sf) + b * p.k_sf_batch_stride + hkv * p.k_sf_head_stride;
  const uint8_t *vsf = reinterpret_cast<const uint8_t *>(p.v_sf) + b * p.v_sf_batch_stride + hkv * p.v_sf_head_stride;
  int v_shift = 0;
  float out_factor = 1.0f;
  if constexpr (C::route == Route::Nvfp8)
    out_factor = reinterpret_cast<const float *>(p.v_scale)[head_kv];
  if constexpr (C::route == Route::DirectP) {
    v_shift = reinterpret_cast<const int32_t *>(p.v_shift)[head_kv];
    out_factor = exp2Int(v_shift);
  }

  // ---- Key range of this CTA -------------------------------------------------------------------
  const int row_base = m0 + warp * 16;
  const int last_row = (sq < m0 + T::kBlockM ? sq : m0 + T::kBlockM) - 1;
  const int cta_keys = visibleKeys<C::causal>(last_row, sq, sk);   // most keys any row sees
  const int cta_unmasked = visibleKeys<C::causal>(m0, sq, sk);      // keys every row sees
  const int n_tiles = (cta_keys + T::kBlockN - 1) / T::kBlockN;
  const int g = lane / 4;
  const int vis[2] = {visibleKeys<C::causal>(row_base + g, sq, sk), visibleKeys<C::causal>(row_base + g + 8, sq, sk)};

  float o[T::kOTiles][4];
#pragma unroll
  for (int dt = 0; dt < T::kOTiles; ++dt)
    o[dt][0] = o[dt][1] = o[dt][2] = o[dt][3] = 0.0f;
  SoftmaxRows st;
  softmaxInit(st);

  const uint8_t *q_warp = q_smem + warp * 16 * T::kQkPitch;
  for (int tile = 0; tile < n_tiles; ++tile) {
    const int key0 = tile * T::kBlockN;
    const int k_valid = sk - key0 < T::kBlockN ? sk - key0 : T::kBlockN;
    __syncthreads(); // the previous tile's K/V reads are done (and Q is visible on tile 0)
    if constexpr (C::route == Route::Bf16) {
      loadBf16Rows<T::kHeadDim, T::kBlockN, T::kQkPitch, T::kThreads>(
          k_smem, reinterpret_cast<const uint16_t *>(kg) + key0 * p.k_row_stride, static_cast<int>(p.k_row_stride), k_valid, tid);
      loadBf16Rows<T::kHeadDim, T::kBlockN, T::kVPitch, T::kThreads>(
          v_smem, reinterpret_cast<const uint16_t *>(vg) + key0 * p.v_row_stride, static_cast<int>(p.v_row_stride), k_valid, tid);
    } else {
      const float pre = T::kQkBf16 ? 1.0f : exp2Int(-C::qk_widen_shift);
      loadNvfp4Rows<T::kHeadDim, T::kBlockN, T::kQkPitch, T::kThreads, T::kQkBf16>(
          k_smem, kg + key0 * p.k_row_stride, static_cast<int>(p.k_row_stride), ksf, key0, k_valid, pre, tid);
      if constexpr (C::route == Route::Nvfp8)
        loadFp8Vt<T::kHeadDim, T::kBlockN, T::kVPitch, T::kThreads, C::v_keys_permuted16>(
            v_smem, vg, static_cast<int>(p.v_row_stride), key0, keys_padded, tid);
      else
        loadMxfp4Vt<T::kHeadDim, T::kBlockN, T::kVPitch, T::kThreads, C::v_keys_permuted16>(
            v_smem, vg, static_cast<int>(p.v_row_stride), vsf, key0, keys_padded, v_shift, tid);
    }
    __syncthreads();

    float s[T::kSTiles][4];
    computeScores<C>(s, q_warp, k_smem, lane);
    if (key0 + T::kBlockN > cta_unmasked)
      maskScores<C>(s, vis, key0, lane);
    softmaxUpdate<C>(st, s, o, score_mul, tile == 0, lane);

    if constexpr (C::route == Route::Bf16) {
      uint32_t pa[T::kBlockN / 16][4];
      buildPBf16<C>(pa, s, st, score_mul);
      accumulatePVBf16<C>(o, pa, v_smem, lane);
    } else {
      uint32_t pa[T::kBlockN / 32][4];
      if constexpr (C::route == Route::Nvfp8)
        buildPNvfp8<C>(pa, s, st, score_mul);
      else
        buildPDirectP<C>(pa, s, st, score_mul);
      accumulatePVFp8<C>(o, pa, v_smem, lane);
    }
  }

  uint16_t *o_rows = reinterpret_cast<uint16_t *>(p.o) + b * p.o_batch_stride + hq * p.o_head_stride +
                     row_base * p.o_row_stride;
  float *lse_rows = p.lse == 0 ? nullptr
                               : reinterpret_cast<float *>(p.lse) + static_cast<int64_t>(head_q) * sq + row_base;
  writeOutput<C>(o, st, out_factor, o_rows, p.o_row_stride, lse_rows, row_base, sq, lane, p.o_fp16 != 0);
}

} // namespace fa4jit::device::attention
