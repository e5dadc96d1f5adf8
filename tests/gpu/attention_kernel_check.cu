// Standalone check of the mma.sync attention kernels (templates/fa4jit/attention) against a CPU
// model written from docs/NUMERICS.md, on the GPU machine. Not part of CI. Build one binary per
// route (they compile in parallel):
//   nvcc -std=c++17 -O2 -I templates -gencode=arch=compute_90a,code=sm_90a -DCHECK_ROUTE=2 \
//        tests/gpu/attention_kernel_check.cu -o check_directp
// The model shares formats.cuh and directp.cuh with the kernels (host-compiled), so P codes,
// block exponents and every rounding agree except where S differs in its last bits.
#include "fa4jit/attention/kernel.cuh"
#include "fa4jit/directp.cuh"
#include "fa4jit/formats.cuh"

#include <algorithm>
#include <cmath>
#include <functional>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

#ifndef CHECK_ROUTE
#define CHECK_ROUTE 2
#endif

using namespace fa4jit::device;
using namespace fa4jit::device::attention;

#define CUDA_CHECK(x)                                                                                        \
  do {                                                                                                       \
    cudaError_t e_ = (x);                                                                                    \
    if (e_ != cudaSuccess) {                                                                                 \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));                \
      std::exit(2);                                                                                          \
    }                                                                                                        \
  } while (0)

// FP32(softmax_scale * log2 e) for softmax_scale = 1/sqrt(D).
constexpr float kscaleFor(int d) { return d == 64 ? 0x1.715476p-3f : (d == 128 ? 0x1.0527dcp-3f : 0x1.715476p-4f); }

constexpr DirectPCoefficients kThreshold = {0, 2.0f, 0.0f,
                                            {-0x1p+1f, -0x1.a8ff98p-2f, 0x1.49a784p-2f, 0x1.9d5dap-1f,
                                             0x1.5269e2p+0f, 0x1.ceaedp+0f, 0x1.2934fp+1f},
                                            1.0f};
constexpr DirectPCoefficients withKind(int kind) {
  DirectPCoefficients c = kThreshold;
  c.kind = kind;
  c.beta = 0.3f; // affine: a fitted-looking offset; mixed: affine below y_split
  return c;
}

template <int kRoute, int kD, bool kCausal, int kGuard, int kClassifier = 0, int kQkWiden = 1, int kBlockN = 64>
struct Cfg {
  static constexpr Route route = static_cast<Route>(kRoute);
  static constexpr int head_dim = kD;
  static constexpr bool causal = kCausal;
  static constexpr int block_m = 64;
  static constexpr int block_n = kBlockN;
  static constexpr int warps = 4;
  static constexpr Widening qk_widening = kRoute == 0 ? Widening::Bf16 : static_cast<Widening>(kQkWiden);
  static constexpr int qk_widen_shift = 3;
  static constexpr int p_offset_log2 = 8;
  static constexpr bool v_keys_permuted16 = false;
  static constexpr float score_scale = kscaleFor(kD) * (kRoute != 0 && kQkWiden == 1 ? 64.0f : 1.0f);
  static constexpr DirectPCoefficients classifier = withKind(kClassifier);
  static constexpr GuardKind guard = static_cast<GuardKind>(kGuard);
  static constexpr int guard_sample_stride = 8;
  static constexpr float guard_slack_log2 = 0.0f;
};

template <class C> __global__ void __launch_bounds__(C::warps * 32) checkKernel(const AttentionParams p) {
  attentionForward<C>(p);
}

// ---------------------------------------------------------------------------------------------
struct Case {
  const char *name;
  int B, Hq, Hkv, Sq, Sk;
  int kind; // 0 gaussian, 1 huge logits, 2 one dominant key, 3 all-equal scores
};

static void parallelFor(int n, const std::function<void(int)> &f) {
  const int threads = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      for (int i = t; i < n; i += threads)
        f(i);
    });
  for (auto &th : pool)
    th.join();
}

struct Quantized {
  std::vector<uint8_t> payload, sf;
  std::vector<float> gscale;  // NVFP4 g / nvfp8 s_v per head
  std::vector<int32_t> shift; // MXFP4 v_shift per head
  std::vector<float> fed;     // model view: values as the tensor core consumes them, [heads][rows][D]
};

// NVFP4 of [heads][S][D] (NUMERICS.md §1), and the widened values (E4m3 with shift 3, or Bf16).
static Quantized quantNvfp4(const std::vector<float> &x, int heads, int S, int D, bool e4m3) {
  Quantized r;
  const int kb = D / 16;
  const int64_t sf_head = scaleFactorBytes(S, kb);
  r.payload.assign(static_cast<size_t>(heads) * S * D / 2, 0);
  r.sf.assign(static_cast<size_t>(heads * sf_head), 0);
  r.gscale.resize(heads);
  r.fed.resize(x.size());
  for (int h = 0; h < heads; ++h) {
    const float *xh = &x[static_cast<size_t>(h) * S * D];
    float amax = 0.0f;
    for (int i = 0; i < S * D; ++i)
      amax = std::max(amax, std::fabs(xh[i]));
    const float g = amax == 0.0f ? 1.0f : amax / (448.0f * 6.0f);
    r.gscale[h] = g;
    for (int s = 0; s < S; ++s)
      for (int b = 0; b < kb; ++b) {
        float am = 0.0f;
        for (int i = 0; i < 16; ++i)
          am = std::max(am, std::fabs(xh[s * D + b * 16 + i]));
        const uint8_t sb = floatToUE4M3(am / (6.0f * g));
        r.sf[h * sf_head + scaleFactorOffset(s, b, kb)] = sb;
        const float sbf = ue4m3ToFloat(sb);
        for (int i = 0; i < 16; ++i) {
          const int d = b * 16 + i;
          const uint8_t c = sbf == 0.0f ? 0 : floatToE2M1(xh[s * D + d] / (sbf * g));
          r.payload[(static_cast<size_t>(h) * S + s) * D / 2 + d / 2] |= static_cast<uint8_t>((c & 0xF) << (4 * (d % 2)));
          const float w = e2m1ToFloat(c) * sbf;
          r.fed[(static_cast<size_t>(h) * S + s) * D + d] = e4m3 ? e4m3ToFloat(floatToE4M3(w * 0.125f)) : w;
        }
      }
  }
  return r;
}

// V [heads][Sk][D] -> MXFP4 V^T [heads][D][Skp/2] with v_shift, fed = E4M3(E2M1*2^(E-shift)).
static Quantized quantMxfp4Vt(const std::vector<float> &v, int heads, int Sk, int D) {
  Quantized r;
  const int skp = (Sk + 127) / 128 * 128, cols = skp / 32;
  const int64_t sf_head = scaleFactorBytes(D, cols);
  r.payload.assign(static_cast<size_t>(heads) * D * skp / 2, 0);
  r.sf.assign(static_cast<size_t>(heads * sf_head), 0);
  r.shift.resize(heads);
  r.fed.assign(v.size(), 0.0f);
  std::vector<int> E(static_cast<size_t>(D) * cols);
  for (int h = 0; h < heads; ++h) {
    const float *vh = &v[static_cast<size_t>(h) * Sk * D];
    int emax = -127;
    for (int d = 0; d < D; ++d)
      for (int b = 0; b < cols; ++b) {
        float am = 0.0f;
        for (int j = b * 32; j < b * 32 + 32 && j < Sk; ++j)
          am = std::max(am, std::fabs(vh[j * D + d]));
        int e = -127;
        if (am > 0.0f) {
          int ex;
          std::frexp(am, &ex);
          e = std::min(127, std::max(-127, ex - 1 - 2));
        }
        E[d * cols + b] = e;
        emax = std::max(emax, e);
        r.sf[h * sf_head + scaleFactorOffset(d, b, cols)] = exponentToUE8M0(e);
      }
    const int shift = emax - 6;
    r.shift[h] = shift;
    for (int d = 0; d < D; ++d)
      for (int j = 0; j < Sk; ++j) {
        const int e = E[d * cols + j / 32];
        const uint8_t c = floatToE2M1(vh[j * D + d] * exp2Int(-e));
        r.payload[(static_cast<size_t>(h) * D + d) * skp / 2 + j / 2] |= static_cast<uint8_t>((c & 0xF) << (4 * (j % 2)));
        r.fed[(static_cast<size_t>(h) * Sk + j) * D + d] = e4m3ToFloat(e2m1ToE4M3Byte(e2m1ToE4M3TablePow2(e - shift), c));
      }
  }
  return r;
}

// V -> FP8 V^T [heads][D][Skp] with per-head s_v; fed = the E4M3 payload value (s_v applied at the end).
static Quantized quantFp8Vt(const std::vector<float> &v, int heads, int Sk, int D) {
  Quantized r;
  const int skp = (Sk + 127) / 128 * 128;
  r.payload.assign(static_cast<size_t>(heads) * D * skp, 0);
  r.gscale.resize(heads);
  r.fed.assign(v.size(), 0.0f);
  for (int h = 0; h < heads; ++h) {
    const float *vh = &v[static_cast<size_t>(h) * Sk * D];
    float amax = 0.0f;
    for (int i = 0; i < Sk * D; ++i)
      amax = std::max(amax, std::fabs(vh[i]));
    const float sv = amax == 0.0f ? 1.0f : amax / 448.0f;
    r.gscale[h] = sv;
    for (int d = 0; d < D; ++d)
      for (int j = 0; j < Sk; ++j) {
        const uint8_t b = floatToE4M3(vh[j * D + d] / sv);
        r.payload[(static_cast<size_t>(h) * D + d) * skp + j] = b;
        r.fed[(static_cast<size_t>(h) * Sk + j) * D + d] = e4m3ToFloat(b);
      }
  }
  return r;
}

// ---- the CPU model of one row (NUMERICS.md §2) ---------------------------------------------------
template <class C>
static void modelRow(const Case &cs, const float *q, const float *kh, const float *vh, float mul, float f,
                     int i, float *out, float *lse) {
  constexpr int D = C::head_dim, BN = C::block_n;
  const int Sk = cs.Sk;
  int vis = Sk;
  if (C::causal)
    vis = std::max(0, std::min(Sk, i + Sk - cs.Sq + 1));
  const float ninf = -INFINITY;
  float m = ninf, l = 0.0f;
  std::vector<float> O(D, 0.0f), t(BN), P(BN);
  std::vector<double> acc(D);
  for (int key0 = 0; key0 < Sk; key0 += BN) {
    float tmax = ninf;
    for (int jj = 0; jj < BN; ++jj) {
      const int j = key0 + jj;
      t[jj] = ninf;
      if (j < vis) {
        double a = 0.0;
        for (int d = 0; d < D; ++d)
          a += static_cast<double>(q[d]) * kh[static_cast<size_t>(j) * D + d];
        t[jj] = static_cast<float>(a) * mul;
      }
      tmax = std::max(tmax, t[jj]);
    }
    float mn;
    if (C::guard == GuardKind::SampledAnchor) {
      if (key0 == 0) {
        m = ninf;
        for (int jj = 0; jj < BN; jj += C::guard_sample_stride)
          m = std::max(m, t[jj]);
      }
      mn = tmax <= m + C::guard_slack_log2 ? m : tmax;
    } else {
      mn = std::max(m, tmax);
    }
    if (mn != m) {
      const float r = m == ninf ? 0.0f : std::exp2(m - mn);
      for (auto &o : O)
        o *= r;
      l *= r;
      m = mn;
    }
    if (m == ninf)
      continue;
    if (C::route == Route::Bf16) {
      for (int jj = 0; jj < BN; ++jj) {
        const float p = std::exp2(t[jj] - m);
        l += p;
        P[jj] = bf16ToFloat(floatToBF16(p));
      }
    } else if (C::route == Route::Nvfp8) {
      for (int jj = 0; jj < BN; ++jj) {
        P[jj] = e4m3ToFloat(floatToE4M3(std::exp2((t[jj] - m) + static_cast<float>(C::p_offset_log2))));
        l += P[jj];
      }
    } else {
      constexpr DirectPCoefficients coef = C::classifier;
      for (int b = 0; b < BN; b += 32) {
        float bmax = ninf;
        for (int jj = b; jj < b + 32; ++jj)
          bmax = std::max(bmax, t[jj] == ninf ? ninf : t[jj] - m);
        if (bmax == ninf) {
          for (int jj = b; jj < b + 32; ++jj)
            P[jj] = 0.0f;
          continue;
        }
        const int eb = directpBlockExponent(bmax);
        const E2M1ToE4M3Table tab = e2m1ToE4M3TablePow2(eb + C::p_offset_log2);
        for (int jj = b; jj < b + 32; ++jj) {
          const int c = t[jj] == ninf ? 0 : directpCode(coef, (t[jj] - m) - static_cast<float>(eb));
          P[jj] = e4m3ToFloat(e2m1ToE4M3Byte(tab, static_cast<uint8_t>(c)));
          l += P[jj];
        }
      }
    }
    std::fill(acc.begin(), acc.end(), 0.0);
    for (int jj = 0; jj < BN && key0 + jj < Sk; ++jj)
      if (P[jj] != 0.0f)
        for (int d = 0; d < D; ++d)
          acc[d] += static_cast<double>(P[jj]) * vh[static_cast<size_t>(key0 + jj) * D + d];
    for (int d = 0; d < D; ++d)
      O[d] += static_cast<float>(acc[d]);
  }
  const int off = C::route == Route::Bf16 ? 0 : C::p_offset_log2;
  for (int d = 0; d < D; ++d)
    out[d] = l > 0.0f ? bf16ToFloat(floatToBF16(O[d] / l * f)) : 0.0f;
  *lse = l > 0.0f ? (m + std::log2(l) - static_cast<float>(off)) * 0.693147180559945309f : ninf;
}

// ---- one variant on one case -------------------------------------------------------------------
struct Result {
  double max_err_rel = 0, cos_model = 1, cos_exact = 1, lse_err = 0;
  bool ok = true;
};

static double cosine(const std::vector<float> &a, const std::vector<double> &b) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    ab += a[i] * b[i];
    aa += static_cast<double>(a[i]) * a[i];
    bb += b[i] * b[i];
  }
  return (aa == 0 && bb == 0) ? 1.0 : ab / std::sqrt(aa * bb + 1e-300);
}

template <class T> static T *toDevice(const std::vector<T> &h) {
  T *d = nullptr;
  CUDA_CHECK(cudaMalloc(&d, std::max<size_t>(h.size(), 1) * sizeof(T)));
  if (!h.empty())
    CUDA_CHECK(cudaMemcpy(d, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}

template <class C> static bool runVariant(const char *vname, const Case &cs, uint32_t seed) {
  using Tr = AttentionTraits<C>;
  constexpr int D = C::head_dim;
  const int B = cs.B, Hq = cs.Hq, Hkv = cs.Hkv, Sq = cs.Sq, Sk = cs.Sk;
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  // Logical inputs [B,H,S,D] (rounded to BF16, the inputs a user gives).
  std::vector<float> Q(static_cast<size_t>(B) * Hq * Sq * D), K(static_cast<size_t>(B) * Hkv * Sk * D),
      V(static_cast<size_t>(B) * Hkv * Sk * D);
  for (auto &x : Q)
    x = nd(rng);
  for (auto &x : K)
    x = nd(rng);
  for (auto &x : V)
    x = nd(rng);
  if (cs.kind == 1) // huge logits: |s| up to ~1000 after the 1/sqrt(D) scale
    for (auto &x : Q)
      x *= 60.0f;
  if (cs.kind == 2) // one dominant key per head (key Sk/2 aligned with every query)
    for (auto &x : Q)
      x = std::fabs(x) + 2.0f;
  if (cs.kind == 2)
    for (int h = 0; h < B * Hkv; ++h)
      for (int d = 0; d < D; ++d)
        K[(static_cast<size_t>(h) * Sk + Sk / 2) * D + d] = 3.0f;
  if (cs.kind == 3) // all-equal scores: every key the same
    for (int h = 0; h < B * Hkv; ++h)
      for (int j = 0; j < Sk; ++j)
        for (int d = 0; d < D; ++d)
          K[(static_cast<size_t>(h) * Sk + j) * D + d] = K[static_cast<size_t>(h) * Sk * D + d];
  for (auto *t : {&Q, &K, &V})
    for (auto &x : *t)
      x = bf16ToFloat(floatToBF16(x));

  AttentionParams p{};
  p.batch = B, p.heads_q = Hq, p.heads_kv = Hkv, p.seqlen_q = Sq, p.seqlen_k = Sk;
  std::vector<float> Qf, Kf, Vf; // fed values [heads][S][D] for the model
  std::vector<float> gq(B * Hq, 1.0f), gk(B * Hkv, 1.0f), vfac(B * Hkv, 1.0f);
  std::vector<void *> allocs;
  const int skp = (Sk + 127) / 128 * 128;
  if (C::route == Route::Bf16) {
    // Strided [B,S,H,D] storage (as PyTorch's usual layout) to exercise the strides.
    auto pack = [&](const std::vector<float> &x, int H, int S) {
      std::vector<uint16_t> r(x.size());
      for (int b = 0; b < B; ++b)
        for (int h = 0; h < H; ++h)
          for (int s = 0; s < S; ++s)
            for (int d = 0; d < D; ++d)
              r[((static_cast<size_t>(b) * S + s) * H + h) * D + d] =
                  floatToBF16(x[((static_cast<size_t>(b) * H + h) * S + s) * D + d]);
      return r;
    };
    auto *dq = toDevice(pack(Q, Hq, Sq)), *dk = toDevice(pack(K, Hkv, Sk)), *dv = toDevice(pack(V, Hkv, Sk));
    allocs.insert(allocs.end(), {dq, dk, dv});
    p.q = reinterpret_cast<uint64_t>(dq), p.k = reinterpret_cast<uint64_t>(dk), p.v = reinterpret_cast<uint64_t>(dv);
    p.q_batch_stride = static_cast<int64_t>(Sq) * Hq * D, p.q_head_stride = D, p.q_row_stride = Hq * D;
    p.k_batch_stride = static_cast<int64_t>(Sk) * Hkv * D, p.k_head_stride = D, p.k_row_stride = Hkv * D;
    p.v_batch_stride = p.k_batch_stride, p.v_head_stride = D, p.v_row_stride = Hkv * D;
    Qf = Q, Kf = K, Vf = V;
  } else {
    const bool e4 = C::qk_widening == Widening::E4m3;
    Quantized qq = quantNvfp4(Q, B * Hq, Sq, D, e4), qk = quantNvfp4(K, B * Hkv, Sk, D, e4);
    uint8_t *dq = toDevice(qq.payload), *dk = toDevice(qk.payload), *dqs = toDevice(qq.sf), *dks = toDevice(qk.sf);
    float *dgq = toDevice(qq.gscale), *dgk = toDevice(qk.gscale);
    allocs.insert(allocs.end(), {dq, dk, dqs, dks, dgq, dgk});
    p.q = reinterpret_cast<uint64_t>(dq), p.k = reinterpret_cast<uint64_t>(dk);
    p.q_sf = reinterpret_cast<uint64_t>(dqs), p.k_sf = reinterpret_cast<uint64_t>(dks);
    p.q_global_scale = reinterpret_cast<uint64_t>(dgq), p.k_global_scale = reinterpret_cast<uint64_t>(dgk);
    p.q_head_stride = static_cast<int64_t>(Sq) * D / 2, p.q_batch_stride = p.q_head_stride * Hq, p.q_row_stride = D / 2;
    p.k_head_stride = static_cast<int64_t>(Sk) * D / 2, p.k_batch_stride = p.k_head_stride * Hkv, p.k_row_stride = D / 2;
    p.q_sf_head_stride = scaleFactorBytes(Sq, D / 16), p.q_sf_batch_stride = p.q_sf_head_stride * Hq;
    p.k_sf_head_stride = scaleFactorBytes(Sk, D / 16), p.k_sf_batch_stride = p.k_sf_head_stride * Hkv;
    gq = qq.gscale, gk = qk.gscale, Qf = qq.fed, Kf = qk.fed;
    if (C::route == Route::Nvfp8) {
      Quantized qv = quantFp8Vt(V, B * Hkv, Sk, D);
      uint8_t *dv = toDevice(qv.payload);
      float *dvs = toDevice(qv.gscale);
      allocs.insert(allocs.end(), {dv, dvs});
      p.v = reinterpret_cast<uint64_t>(dv), p.v_scale = reinterpret_cast<uint64_t>(dvs);
      p.v_row_stride = skp, p.v_head_stride = static_cast<int64_t>(D) * skp, p.v_batch_stride = p.v_head_stride * Hkv;
      vfac = qv.gscale, Vf = qv.fed;
    } else {
      Quantized qv = quantMxfp4Vt(V, B * Hkv, Sk, D);
      uint8_t *dv = toDevice(qv.payload), *dvs = toDevice(qv.sf);
      int32_t *dsh = toDevice(qv.shift);
      allocs.insert(allocs.end(), {dv, dvs, dsh});
      p.v = reinterpret_cast<uint64_t>(dv), p.v_sf = reinterpret_cast<uint64_t>(dvs);
      p.v_shift = reinterpret_cast<uint64_t>(dsh);
      p.v_row_stride = skp / 2, p.v_head_stride = static_cast<int64_t>(D) * skp / 2, p.v_batch_stride = p.v_head_stride * Hkv;
      p.v_sf_head_stride = scaleFactorBytes(D, skp / 32), p.v_sf_batch_stride = p.v_sf_head_stride * Hkv;
      for (int h = 0; h < B * Hkv; ++h)
        vfac[h] = exp2Int(qv.shift[h]);
      Vf = qv.fed;
    }
  }
  // O: bf16 route writes [B,Sq,Hq,D] (strided), the others [B,Hq,Sq,D].
  const size_t on = static_cast<size_t>(B) * Hq * Sq * D;
  uint16_t *dO = nullptr;
  float *dL = nullptr;
  CUDA_CHECK(cudaMalloc(&dO, on * 2));
  CUDA_CHECK(cudaMemset(dO, 0xFF, on * 2)); // NaN pattern: every element must be written
  CUDA_CHECK(cudaMalloc(&dL, static_cast<size_t>(B) * Hq * Sq * 4));
  p.o = reinterpret_cast<uint64_t>(dO), p.lse = reinterpret_cast<uint64_t>(dL);
  if (C::route == Route::Bf16)
    p.o_batch_stride = static_cast<int64_t>(Sq) * Hq * D, p.o_head_stride = D, p.o_row_stride = Hq * D;
  else
    p.o_head_stride = static_cast<int64_t>(Sq) * D, p.o_batch_stride = p.o_head_stride * Hq, p.o_row_stride = D;

  CUDA_CHECK(cudaFuncSetAttribute(checkKernel<C>, cudaFuncAttributeMaxDynamicSharedMemorySize, Tr::kSharedBytes));
  dim3 grid((Sq + C::block_m - 1) / C::block_m, Hq, B);
  checkKernel<C><<<grid, Tr::kThreads, Tr::kSharedBytes>>>(p);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<uint16_t> Ok(on);
  std::vector<float> Lk(static_cast<size_t>(B) * Hq * Sq);
  CUDA_CHECK(cudaMemcpy(Ok.data(), dO, on * 2, cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(Lk.data(), dL, Lk.size() * 4, cudaMemcpyDeviceToHost));
  cudaFree(dO), cudaFree(dL);
  for (void *a : allocs)
    cudaFree(a);

  // Model, exact reference, comparison.
  std::vector<float> Om(on), Lm(Lk.size()), Okf(on);
  std::vector<double> Oexact(on);
  const int group = Hq / Hkv;
  parallelFor(B * Hq * Sq, [&](int idx) {
    const int i = idx % Sq, hq = (idx / Sq) % Hq, b = idx / (Sq * Hq);
    const int hk = b * Hkv + hq / group, hqq = b * Hq + hq;
    const float mul = C::route == Route::Bf16 ? C::score_scale : (gq[hqq] * gk[hk]) * C::score_scale;
    const size_t orow = (static_cast<size_t>(hqq) * Sq + i) * D;
    modelRow<C>(cs, &Qf[orow], &Kf[static_cast<size_t>(hk) * Sk * D], &Vf[static_cast<size_t>(hk) * Sk * D], mul,
                vfac[hk], i, &Om[orow], &Lm[static_cast<size_t>(hqq) * Sq + i]);
    // FP64 softmax attention on the unquantized inputs.
    const int vis = C::causal ? std::max(0, std::min(Sk, i + Sk - Sq + 1)) : Sk;
    std::vector<double> s(vis);
    double mx = -1e300;
    for (int j = 0; j < vis; ++j) {
      double a = 0;
      for (int d = 0; d < D; ++d)
        a += static_cast<double>(Q[orow + d]) * K[(static_cast<size_t>(hk) * Sk + j) * D + d];
      s[j] = a / std::sqrt(static_cast<double>(D));
      mx = std::max(mx, s[j]);
    }
    double den = 0;
    for (int d = 0; d < D; ++d)
      Oexact[orow + d] = 0;
    for (int j = 0; j < vis; ++j) {
      const double e = std::exp(s[j] - mx);
      den += e;
      for (int d = 0; d < D; ++d)
        Oexact[orow + d] += e * V[(static_cast<size_t>(hk) * Sk + j) * D + d];
    }
    for (int d = 0; d < D; ++d)
      Oexact[orow + d] = vis > 0 ? Oexact[orow + d] / den : 0.0;
    // Kernel output back to [B,Hq,Sq,D].
    const size_t krow = C::route == Route::Bf16 ? ((static_cast<size_t>(b) * Sq + i) * Hq + hq) * D : orow;
    for (int d = 0; d < D; ++d)
      Okf[orow + d] = bf16ToFloat(Ok[krow + d]);
  });

  Result r;
  double maxm = 0;
  std::vector<double> Omd(Om.begin(), Om.end());
  for (size_t i = 0; i < on; ++i)
    maxm = std::max(maxm, static_cast<double>(std::fabs(Om[i])));
  int bad_masked = 0, nonfinite = 0;
  for (size_t i = 0; i < on; ++i) {
    if (!std::isfinite(Okf[i]))
      ++nonfinite;
    r.max_err_rel = std::max(r.max_err_rel, std::fabs(Okf[i] - Om[i]) / std::max(maxm, 1e-30));
  }
  for (size_t i = 0; i < Lk.size(); ++i) {
    if (std::isinf(Lm[i]) || std::isinf(Lk[i])) {
      if (!(std::isinf(Lm[i]) && std::isinf(Lk[i]) && Lk[i] < 0))
        ++bad_masked;
      else
        for (int d = 0; d < D; ++d)
          bad_masked += Okf[i * D + d] != 0.0f;
      continue;
    }
    if (!std::isfinite(Lk[i]))
      ++nonfinite;
    r.lse_err = std::max(r.lse_err, std::fabs(static_cast<double>(Lk[i]) - Lm[i]) / std::max(1.0, std::fabs(static_cast<double>(Lm[i]))));
  }
  r.cos_model = cosine(Okf, Omd);
  r.cos_exact = cosine(Okf, Oexact);
  const double cos_min = C::route == Route::DirectP ? 0.999 : 0.9999;
  const double err_max = C::route == Route::DirectP ? 0.08 : 0.02;
  r.ok = nonfinite == 0 && bad_masked == 0 && r.cos_model >= cos_min && r.max_err_rel <= err_max && r.lse_err <= 2e-3;
  std::printf("%-4s %-34s %-10s B%d Hq%d Hkv%d Sq%-4d Sk%-4d  err %.2e cos(model) %.6f cos(fp64) %.4f lse %.1e%s%s\n",
              r.ok ? "ok" : "FAIL", vname, cs.name, B, Hq, Hkv, Sq, Sk, r.max_err_rel, r.cos_model, r.cos_exact, r.lse_err,
              nonfinite ? " NONFINITE" : "", bad_masked ? " BAD-MASKED-ROWS" : "");
  return r.ok;
}


// ---- speed (informational; the benchmark tool owns real numbers) --------------------------------
// Valid but synthetic operands: random payload bytes (every nibble is an E2M1 code), unit scales.
template <class C> static void benchVariant(const char *vname, int B, int H, int S) {
  using Tr = AttentionTraits<C>;
  constexpr int D = C::head_dim;
  const int skp = (S + 127) / 128 * 128;
  const size_t n = static_cast<size_t>(B) * H * S * D;
  std::mt19937 rng(7);
  std::vector<uint16_t> bf(n);
  std::vector<uint8_t> fp4(n / 2), fp8(static_cast<size_t>(B) * H * D * skp);
  for (auto &x : bf)
    x = floatToBF16(std::normal_distribution<float>(0.0f, 1.0f)(rng));
  for (auto &x : fp4)
    x = static_cast<uint8_t>(rng());
  for (auto &x : fp8)
    x = static_cast<uint8_t>(rng() & 0x3F); // positive, below 1
  std::vector<uint8_t> sf(static_cast<size_t>(B) * H * std::max<int64_t>(scaleFactorBytes(S, D / 16), scaleFactorBytes(D, skp / 32)), 0x38);
  std::vector<float> ones(B * H, 1.0f / 64.0f);
  std::vector<int32_t> zeros(B * H, 0);
  AttentionParams p{};
  p.batch = B, p.heads_q = H, p.heads_kv = H, p.seqlen_q = S, p.seqlen_k = S;
  std::vector<void *> allocs;
  auto up = [&](auto &v) { auto *d = toDevice(v); allocs.push_back(d); return reinterpret_cast<uint64_t>(d); };
  if (C::route == Route::Bf16) {
    p.q = up(bf), p.k = up(bf), p.v = up(bf);
    p.q_row_stride = p.k_row_stride = p.v_row_stride = D;
    p.q_head_stride = p.k_head_stride = p.v_head_stride = static_cast<int64_t>(S) * D;
  } else {
    p.q = up(fp4), p.k = up(fp4), p.q_sf = up(sf), p.k_sf = up(sf), p.v_sf = up(sf);
    p.q_global_scale = up(ones), p.k_global_scale = up(ones), p.v_scale = up(ones), p.v_shift = up(zeros);
    p.q_row_stride = p.k_row_stride = D / 2;
    p.q_head_stride = p.k_head_stride = static_cast<int64_t>(S) * D / 2;
    p.q_sf_head_stride = p.k_sf_head_stride = scaleFactorBytes(S, D / 16);
    p.v_sf_head_stride = scaleFactorBytes(D, skp / 32);
    p.v = C::route == Route::Nvfp8 ? up(fp8) : up(fp4);
    p.v_row_stride = C::route == Route::Nvfp8 ? skp : skp / 2;
    p.v_head_stride = static_cast<int64_t>(D) * p.v_row_stride;
  }
  p.q_batch_stride = p.q_head_stride * H, p.k_batch_stride = p.k_head_stride * H, p.v_batch_stride = p.v_head_stride * H;
  p.q_sf_batch_stride = p.q_sf_head_stride * H, p.k_sf_batch_stride = p.k_sf_head_stride * H;
  p.v_sf_batch_stride = p.v_sf_head_stride * H;
  std::vector<uint16_t> o(n);
  p.o = up(o);
  p.o_row_stride = D, p.o_head_stride = static_cast<int64_t>(S) * D, p.o_batch_stride = p.o_head_stride * H;
  CUDA_CHECK(cudaFuncSetAttribute(checkKernel<C>, cudaFuncAttributeMaxDynamicSharedMemorySize, Tr::kSharedBytes));
  dim3 grid((S + C::block_m - 1) / C::block_m, H, B);
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0), cudaEventCreate(&e1);
  for (int i = 0; i < 3; ++i)
    checkKernel<C><<<grid, Tr::kThreads, Tr::kSharedBytes>>>(p);
  const int reps = 10;
  cudaEventRecord(e0);
  for (int i = 0; i < reps; ++i)
    checkKernel<C><<<grid, Tr::kThreads, Tr::kSharedBytes>>>(p);
  cudaEventRecord(e1);
  CUDA_CHECK(cudaEventSynchronize(e1));
  float ms = 0;
  cudaEventElapsedTime(&ms, e0, e1);
  ms /= reps;
  const double flops = 4.0 * B * H * static_cast<double>(S) * S * D * (C::causal ? 0.5 : 1.0);
  std::printf("bench %-34s B%d H%d S%d: %.3f ms, %.1f TFLOP/s\n", vname, B, H, S, ms, flops / ms * 1e-9);
  for (void *a : allocs)
    cudaFree(a);
}

static const Case kCases[] = {
    {"gauss", 1, 2, 1, 77, 203, 0},    {"gauss", 2, 4, 2, 256, 256, 0},  {"len1", 1, 1, 1, 1, 1, 0},
    {"sq>sk", 1, 2, 2, 300, 100, 0},   {"sq<sk", 1, 2, 1, 40, 333, 0},   {"huge", 1, 2, 2, 64, 500, 1},
    {"dominant", 1, 2, 1, 70, 300, 2}, {"equal", 1, 2, 1, 64, 190, 3},
};

static bool g_bench = false;

template <class C> static int runAll(const char *vname) {
  if (g_bench) {
    benchVariant<C>(vname, 4, 16, 4096);
    return 0;
  }
  int fails = 0;
  uint32_t seed = 1234;
  for (const Case &cs : kCases)
    fails += runVariant<C>(vname, cs, seed++) ? 0 : 1;
  return fails;
}

#define VARIANT(...) fails += runAll<Cfg<__VA_ARGS__>>("Cfg<" #__VA_ARGS__ ">")

int main(int argc, char **argv) {
  g_bench = argc > 1 && std::string(argv[1]) == "--bench";
  int fails = 0;
#if CHECK_ROUTE == 0
  VARIANT(0, 64, false, 0);
  VARIANT(0, 64, true, 1);
  VARIANT(0, 128, false, 1);
  VARIANT(0, 128, true, 0);
  VARIANT(0, 256, false, 0);
  VARIANT(0, 256, true, 1);
#elif CHECK_ROUTE == 1
  VARIANT(1, 64, false, 1);
  VARIANT(1, 64, true, 0);
  VARIANT(1, 128, false, 0);
  VARIANT(1, 128, true, 1);
  VARIANT(1, 256, false, 1);
  VARIANT(1, 256, true, 0);
  VARIANT(1, 128, false, 1, 0, 0); // Bf16 widening of NVFP4 Q/K
#else
  VARIANT(2, 64, false, 1);
  VARIANT(2, 64, true, 0);
  VARIANT(2, 128, false, 1);
  VARIANT(2, 128, true, 1);
  VARIANT(2, 128, false, 0);
  VARIANT(2, 256, false, 0);
  VARIANT(2, 256, true, 1);
  VARIANT(2, 128, false, 1, 1);       // affine classifier
  VARIANT(2, 128, true, 1, 2);        // mixed classifier
  VARIANT(2, 128, false, 1, 0, 0);    // Bf16 widening of NVFP4 Q/K
  VARIANT(2, 128, true, 0, 0, 1, 128); // block_n 128
#endif
  std::printf("%s: %d failing\n", fails ? "FAILED" : "PASSED", fails);
  return fails ? 1 : 0;
}
