// Attention forward on the GPU against the CPU model of its route and the FP64 reference:
// fresh random inputs every run (the seed is in every failure message), ragged
// lengths, causal tails, Sq != Sk, grouped- and multi-query heads, the range-guard cases, and O
// poisoned with NaN before each launch so an unwritten element fails.
#include "gpu_fixture.h"

#include "fa4jit/codegen/heuristics.h"
#include "fa4jit/codegen/route_presets.h"
#include "fa4jit/codegen/spec_io.h"
#include "fa4jit/cpu/model.h"
#include "fa4jit/cpu/reference.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <vector>

using namespace fa4jit;
using namespace fa4jit::testing;

namespace {

enum class Pattern { Gaussian, HugeLogits, DominantKey, EqualScores, OutlierChannels };

struct Case {
  int batch, heads_q, heads_kv, seqlen_q, seqlen_k, head_dim;
  bool causal;
  Pattern pattern = Pattern::Gaussian;
};

struct Tolerance {
  double rel_l2_vs_model;  // ||O_gpu - O_model|| / ||O_model||
  double cos_vs_fp64;      // cosine against the FP64 reference (Gaussian inputs)
};

Tolerance toleranceFor(Route r) {
  switch (r) {
  case Route::Bf16: return {1e-2, 0.995};
  case Route::Nvfp8: return {2e-2, 0.97};
  case Route::DirectP: return {3e-2, 0.94};
  }
  return {0, 0};
}

struct Inputs {
  HostBf16 q, k, v;
};

Inputs makeInputs(const Case &c, std::mt19937_64 &rng) {
  const std::size_t nq = std::size_t(c.batch) * c.heads_q * c.seqlen_q * c.head_dim;
  const std::size_t nk = std::size_t(c.batch) * c.heads_kv * c.seqlen_k * c.head_dim;
  // |s| up to ~1000: q.k / sqrt(D) has standard deviation sigma^2.
  const float qk_sigma = c.pattern == Pattern::HugeLogits ? 17.0f : 1.0f;
  Inputs in{randomBf16(nq, qk_sigma, rng), randomBf16(nk, qk_sigma, rng), randomBf16(nk, 1.0f, rng)};
  const std::size_t rows = std::size_t(c.batch) * c.heads_kv * c.seqlen_k;
  if (c.pattern == Pattern::EqualScores || c.pattern == Pattern::DominantKey) {
    // Equal: every key row of a head is the head's first row. Dominant: additionally key 0 of
    // each head is scaled up so that one key takes nearly all the weight.
    for (std::size_t r = 0; r < rows; ++r) {
      const std::size_t head0 = (r / c.seqlen_k) * c.seqlen_k;
      for (int d = 0; d < c.head_dim; ++d) {
        float v = in.k.values[head0 * c.head_dim + d];
        if (c.pattern == Pattern::DominantKey && r == head0)
          v *= 8.0f;
        else if (c.pattern == Pattern::DominantKey)
          v = in.k.values[r * c.head_dim + d];
        in.k.bits[r * c.head_dim + d] = formats::floatToBF16(v);
        in.k.values[r * c.head_dim + d] = formats::bf16ToFloat(in.k.bits[r * c.head_dim + d]);
      }
    }
  }
  if (c.pattern == Pattern::OutlierChannels) {
    // Q's channel 0 and K's channel 1 at +-2e4 and zeros where they meet the other: the scores stay
    // the Gaussian rest's, while the heads' amax product (4e8) puts the FP16-score kernels'
    // multiplier above FP16's range (scores_fp16's fallback, NUMERICS.md §2.3).
    auto set = [](HostBf16 &t, std::size_t i, float v) {
      t.bits[i] = formats::floatToBF16(v);
      t.values[i] = formats::bf16ToFloat(t.bits[i]);
    };
    for (std::size_t r = 0; r < nq / c.head_dim; ++r) {
      set(in.q, r * c.head_dim, r % 2 ? 2e4f : -2e4f);
      set(in.q, r * c.head_dim + 1, 0.0f);
    }
    for (std::size_t r = 0; r < rows; ++r) {
      set(in.k, r * c.head_dim + 1, r % 3 ? 2e4f : -2e4f);
      set(in.k, r * c.head_dim, 0.0f);
    }
  }
  return in;
}

// The device tensors of one run of case c: BF16 Q, K, V as uploaded, O and LSE poisoned with NaN
// (BF16 0xFFFF and FP32 0xFFFFFFFF) so that an unwritten element shows.
struct DeviceCase {
  runtime::DeviceBuffer q, k, v, o, lse;
  std::size_t o_elems, lse_elems;
  // The engine's arguments for them, dense [B][H][S][D].
  ForwardArgs args(const Case &c, Route route) const {
    ForwardArgs a;
    a.q = TensorDesc::contiguous(q.address(), DType::BF16, c.batch, c.heads_q, c.seqlen_q, c.head_dim);
    a.k = TensorDesc::contiguous(k.address(), DType::BF16, c.batch, c.heads_kv, c.seqlen_k, c.head_dim);
    a.v = TensorDesc::contiguous(v.address(), DType::BF16, c.batch, c.heads_kv, c.seqlen_k, c.head_dim);
    a.o = TensorDesc::contiguous(o.address(), DType::BF16, c.batch, c.heads_q, c.seqlen_q, c.head_dim);
    a.lse = lse.address();
    a.route = route;
    a.causal = c.causal;
    return a;
  }
};
DeviceCase uploadCase(const Case &c, const Inputs &in) {
  Engine &engine = gpuEngine();
  DeviceCase d{upload(in.q.bits.data(), in.q.bits.size() * 2), upload(in.k.bits.data(), in.k.bits.size() * 2),
               upload(in.v.bits.data(), in.v.bits.size() * 2), {}, {}, in.q.bits.size(),
               std::size_t(c.batch) * c.heads_q * c.seqlen_q};
  auto o = runtime::DeviceBuffer::allocate(engine.driver(), d.o_elems * 2);
  auto lse = runtime::DeviceBuffer::allocate(engine.driver(), d.lse_elems * 4);
  REQUIRE_OK(o);
  REQUIRE_OK(lse);
  REQUIRE_SUCCESS(o->fill(0xFF));
  REQUIRE_SUCCESS(lse->fill(0xFF));
  d.o = std::move(*o);
  d.lse = std::move(*lse);
  return d;
}

// schedule: run this kernel schedule instead of the engine's default (both must pass the same
// contract; the CPU model does not depend on the schedule).
// tweak: a further change of the spec (consumer order, classifier) on top of the schedule.
// min_cos: the FP64 cosine floor when the spec's classifier is not the route default's.
// qk: how Q and K are stored (the E4M3 presets, through ForwardArgs::qk_format).
void runCase(Route route, const Case &c, uint64_t seed, std::optional<AttentionSchedule> schedule = std::nullopt,
             const std::function<void(KernelSpec &)> &tweak = {}, std::optional<double> min_cos = std::nullopt,
             QkFormat qk = QkFormat::Nvfp4) {
  INFO("route " << toString(RoutePreset{route, qk}) << " schedule " << (schedule ? toString(*schedule) : "default") << (tweak ? " (tweaked)" : "") << " B" << c.batch << " Hq" << c.heads_q << " Hkv" << c.heads_kv << " Sq"
                << c.seqlen_q << " Sk" << c.seqlen_k << " D" << c.head_dim << " causal " << c.causal << " pattern "
                << int(c.pattern) << " seed " << seed);
  std::mt19937_64 rng(seed);
  Inputs in = makeInputs(c, rng);
  Engine &engine = gpuEngine();
  const DeviceCase dev = uploadCase(c, in);
  const std::size_t no = dev.o_elems, nl = dev.lse_elems;
  ForwardArgs a = dev.args(c, route);
  a.qk_format = qk;
  // The model must run the launched spec: block_n sets where the online softmax rescales.
  auto spec = engine.attentionSpecFor(route, c.head_dim, c.causal, c.seqlen_k, std::nullopt, qk);
  REQUIRE_OK(spec);
  if (schedule || tweak) {
    if (schedule)
      *spec = withAttentionSchedule(*spec, *schedule);
    if (tweak)
      tweak(*spec);
    // A tweak that moved the key tile off 128 keeps Direct-P's quad blocks (as the tuner's and
    // the bench's variants do) where the default has thread key blocks.
    *spec = keepingFitKeyBlocks(std::move(*spec));
    a.spec = *spec;
  }
  if (auto err = engine.forward(a))
    FAIL(errorText(std::move(err)));
  auto o_bits = download<uint16_t>(dev.o, no);
  auto lse = download<float>(dev.lse, nl);

  cpu::AttentionProblem prob;
  prob.shape = {c.batch, c.heads_q, c.heads_kv, c.seqlen_q, c.seqlen_k, c.head_dim};
  prob.q = cpu::TensorRef::contiguous(in.q.values.data(), c.heads_q, c.seqlen_q, c.head_dim);
  prob.k = cpu::TensorRef::contiguous(in.k.values.data(), c.heads_kv, c.seqlen_k, c.head_dim);
  prob.v = cpu::TensorRef::contiguous(in.v.values.data(), c.heads_kv, c.seqlen_k, c.head_dim);
  cpu::ModelOptions mo;
  auto model = cpu::runRouteModel(spec->attention, prob, mo);
  REQUIRE_OK(model);
  cpu::ReferenceOptions ro;
  ro.causal = c.causal;
  auto ref = cpu::referenceAttention(prob, ro);
  REQUIRE_OK(ref);

  const auto &m = model->result;
  double diff2 = 0, norm2 = 0, dot = 0, gn2 = 0, rn2 = 0, lse_err = 0, lse_err_short = 0;
  std::size_t identical_rows = 0, nonfinite = 0, rows = 0, zero_rows = 0;
  for (int b = 0; b < c.batch; ++b)
    for (int h = 0; h < c.heads_q; ++h)
      for (int r = 0; r < c.seqlen_q; ++r) {
        const std::size_t row = (std::size_t(b) * c.heads_q + h) * c.seqlen_q + r;
        const double *om = m.oRow(b, h, r), *orf = ref->oRow(b, h, r);
        bool same = true, any_nonzero = false;
        for (int d = 0; d < c.head_dim; ++d) {
          const double g = formats::bf16ToFloat(o_bits[row * c.head_dim + d]);
          if (!std::isfinite(g))
            ++nonfinite;
          same &= g == om[d];
          any_nonzero |= g != 0.0;
          diff2 += (g - om[d]) * (g - om[d]);
          norm2 += om[d] * om[d];
          dot += g * orf[d], gn2 += g * g, rn2 += orf[d] * orf[d];
        }
        const double lm = m.lse[m.rowIndex(b, h, r)];
        if (std::isinf(lm)) {
          CHECK(lse[row] == lm); // fully masked row: -inf exactly
          CHECK_FALSE(any_nonzero);
        } else {
          // Rows with few visible keys are judged apart: there one P code flipped by S rounding
          // moves l by up to a third, so LSE by ~1e-2 (measured with FP8 wgmma, whose S keeps ~14
          // bits); from 32 keys on, a flip moves LSE by at most a few 1e-3. Rows of equal scores
          // are judged as rows carried by one key: every key has the same P, so one rounding that
          // falls the other way (an S bit, or nvfp8's FP16 row max on its 2^-4 grid one point
          // higher) moves all of l by one step of the fed format, and O not at all (measured 1.03e-2
          // on the D64 Sk512 case with FP16 scores, seed 5481702186711462397).
          const double e = std::fabs(double(lse[row]) - lm) / std::max(1.0, std::fabs(lm));
          const int visible = c.causal ? cpu::causalVisibleKeys(r, c.seqlen_q, c.seqlen_k) : c.seqlen_k;
          const bool many = visible >= 32 && c.pattern != Pattern::EqualScores;
          (many ? lse_err : lse_err_short) = std::max(many ? lse_err : lse_err_short, e);
          zero_rows += any_nonzero ? 0 : 1;
        }
        identical_rows += same;
        ++rows;
      }
  const Tolerance tol = toleranceFor(route);
  const double rel = norm2 > 0 ? std::sqrt(diff2 / norm2) : std::sqrt(diff2);
  const double cosv = (gn2 > 0 && rn2 > 0) ? dot / std::sqrt(gn2 * rn2) : 1.0;
  std::printf("  %-8s B%d Hq%d Hkv%d Sq%-5d Sk%-5d D%-3d c%d p%d: rel_l2 vs model %.2e, rows bit-identical %5.1f%%, "
              "max rel dLSE %.1e (rows < 32 keys %.1e), cos vs fp64 %.4f\n",
              toString(RoutePreset{route, qk}).c_str(), c.batch, c.heads_q, c.heads_kv, c.seqlen_q, c.seqlen_k, c.head_dim, int(c.causal),
              int(c.pattern), rel, 100.0 * identical_rows / rows, lse_err, lse_err_short, cosv);
  CHECK(nonfinite == 0);
  CHECK(zero_rows == 0);
  // Direct-P on FP8 wgmma (S with ~14 significant bits, below) flips a code now and then; a flip
  // on a heavy key moves its row's O by up to ~1/n_eff (measured 5.4e-2 on one of two rows of the
  // Sq1 Sk300 case, fresh seed; < 1e-2 on 13 other seeds). Flips are independent per row, so the
  // metric's noise falls as 1/sqrt(rows): the bound is the route's at >= 64 rows and grows as
  // sqrt(64 / rows) below (0.17 at 2 rows). A kernel bug moves every row (a wrong block exponent,
  // docs/NUMERICS.md §2.3, gives 0.09-0.13 on the cases of >= 100 rows), which the bound catches.
  // nvfp8 on FP16 scores alike: the wgmma rounds S's FP16 accumulators at every k-step where the
  // model rounds once, which moves an E4M3 rounding of P now and then, and on two rows that is
  // noise the rows do not average (2.03e-2 against 2e-2 on the Sq1 Sk300 D128 causal case,
  // seed 15138174181126868532; 6.8e-3 and 1.1e-2 on other seeds).
  const bool flips = (route == Route::DirectP || (route == Route::Nvfp8 && spec->attention.tile.softmax.scores_fp16)) &&
                     spec->attention.tile.schedule.kernel == AttentionSchedule::WgmmaWarpSpecialized;
  // nvfp8 on FP16 scores at huge logits (|t| in the hundreds): FP16 holds such an S to 2^-11 of
  // it, a quarter to half a log2 unit, and the wgmma rounds its FP16 accumulators at every k-step
  // of 32 where the model rounds the exact S once; on the rows one or two keys carry (all rows at
  // this pattern) a different rounding moves P, hence O, by up to 2^0.5. Measured on the H200:
  // 7% of the rows of the Sk512 D128 case differ, rel-L2 1.66e-2 (default guard) and 2.16e-2
  // (slack 2, seed 4303842007998106889). The FP64 cosine is not read at this pattern: the FP16
  // form's accuracy there is docs/ACCURACY.md's large-logit table.
  const bool huge_fp16 = route == Route::Nvfp8 && c.pattern == Pattern::HugeLogits && spec->attention.tile.softmax.scores_fp16;
  const double rel_tol = huge_fp16 ? 4e-2
                                   : tol.rel_l2_vs_model * (flips && rows < 64 ? std::sqrt(64.0 / double(rows)) : 1.0);
  CHECK(rel <= rel_tol);
  // Relative to max(1, |LSE|). FP8 wgmma accumulates with ~14 significant bits (DeepSeek-V3
  // §3.3.2, H800), so its S differs from the model's in about the 14th bit; where few keys carry a
  // row, one E4M3 rounding of P flipping moves l, hence LSE: up to 3.5e-3 measured on the H200.
  const bool wgmma = spec->attention.tile.schedule.kernel == AttentionSchedule::WgmmaWarpSpecialized;
  // Direct-P turns those S differences into whole-code flips: one flip in a row of ~40 keys moves
  // l by a few percent, hence LSE by up to ~1e-2 (measured 8.6e-3 with wgmma, fresh seeds); O stays
  // within the route's rel-L2 bound and the FP64 cosine below, which carry the accuracy claim. The
  // bound is a maximum over rows, so it grows with their count: 2.5e-2 on the 24000 rows of
  // B2 Hq40 Sq300 Sk280 causal (seed 12594138544207328568: a row of 32-40 keys
  // with two heavy flips; rel-L2 7.2e-3, cosine 0.979), hence 3e-2. A kernel bug moves every row's
  // LSE far more (a wrong block exponent: O off by 0.09-0.13).
  const bool affine = route == Route::DirectP && spec->attention.classifier.kind == ClassifierKind::Affine;
  // The affine classifier's codes step every 1/alpha in y, between magnitudes as far apart as 0.5
  // and 1 (the threshold one steps at the log2 midpoints): a flip moves l more, and rows of 32-77
  // keys measured 2.9e-2 and 6.4e-2 on two seeds (alpha 2, beta 0.875). O stays within the
  // route's rel-L2 bound and the FP64 cosine floor; two-level FP32 accumulation would tighten it.
  // BF16 wgmma accumulates in FP32 like mma.sync (the reduced accumulator is FP8's): 1e-3 there too.
  const bool fp8_wgmma = wgmma && route != Route::Bf16;
  // With the guard's slack (nvfp8's default, 3) the rescale is a threshold on S: where a tile max
  // lies within S rounding of m + slack, kernel and model can choose differently, and their row max
  // then differs by up to the slack, so every E4M3 rounding of that row's P falls independently
  // instead of only now and then: up to 5.0e-3 measured on the H200 (rows of 32-77 keys; 2.8e-3
  // with slack 0). O's rel-L2 and the FP64 cosine are unchanged.
  const bool slack = spec->attention.guard.kind == GuardKind::SampledAnchor && spec->attention.guard.slack_log2 > 0.0f;
  const double nvfp8_lse_tol = slack ? 1e-2 : 5e-3;
  // Direct-P with slack alike: a row whose kernel and model maxima differ takes every code on a
  // shifted grid, and E2M1's steps (up to 2x apart) move a row of 32-40 keys' l by several percent:
  // 3.7e-2 measured on the H200 (range-guard case, slack 2, B1 Hq2 Sq300 Sk100
  // D128 causal, seed 1536494045479950176; rel-L2 2.9e-2, cosine 0.979).
  const double directp_lse_tol = affine ? 1e-1 : slack ? 6e-2 : 3e-2;
  const double lse_tol = !fp8_wgmma ? 1e-3 : route != Route::DirectP ? nvfp8_lse_tol : directp_lse_tol;
  CHECK(lse_err <= lse_tol);
  // Rows of fewer than 32 keys, where one flip weighs most. Direct-P codes are at most 1 (the row
  // maximum's) and neighbouring codes differ by at most 2x, so one flip moves p by at most 0.5
  // while l >= 1: |dLSE| <= ln(1.5) = 0.405. Measured with wgmma: 0.20 (affine) and 0.105
  // (threshold, a row of a few keys in Sq300 Sk100 causal, the only non-identical row of 200).
  // nvfp8: an E4M3 value's ulp is at most 1/8 of it, so one rounding flipped the other way moves l
  // by at most an eighth of its share: |dLSE| <= ln(1.125) = 0.118 for one flip in a row carried by
  // one key. Measured: 5.5e-2 as the max over ~2500 short rows (B2 Hq40 Sq300 Sk280 causal,
  // seed 17468306414569357215, on which a bound of 5e-2 fails).
  const double short_tol = !fp8_wgmma ? 1e-3 : route == Route::DirectP ? std::log(1.5) : std::log(1.125);
  CHECK(lse_err_short <= short_tol);
  if (c.pattern == Pattern::Gaussian && c.seqlen_k >= 64)
    CHECK(cosv >= min_cos.value_or(tol.cos_vs_fp64));
}

const Case kCases[] = {
    {1, 1, 1, 1, 1, 64, false},        {1, 2, 2, 1, 300, 128, true},     {2, 4, 2, 77, 77, 128, true},
    {1, 4, 1, 130, 260, 64, true},     {1, 2, 2, 300, 100, 128, true},   {1, 2, 2, 256, 1024, 256, false},
    {1, 2, 1, 200, 333, 256, true},    {2, 2, 2, 512, 512, 128, false},  {1, 2, 2, 1000, 1000, 64, false},
    {1, 2, 2, 256, 512, 128, false, Pattern::HugeLogits},
    {1, 2, 2, 256, 512, 128, true, Pattern::DominantKey},
    {1, 2, 2, 256, 512, 64, false, Pattern::EqualScores},
};

// The wgmma kernel with two consumer warpgroups (128 rows) where the default has three (D64, and the
// FP8-fed routes at D128), on the two-consumer kernel's key tile; other kernels are left alone.
void twoConsumers(KernelSpec &s) {
  TileSpec &t = s.attention.tile;
  if (t.schedule.kernel != AttentionSchedule::WgmmaWarpSpecialized || t.shape.block_m == 128)
    return;
  t.shape.block_m = 128;
  t.shape.warps = 12;
  t.shape.block_n = s.attention.route == Route::DirectP ? 192 : 128;
}

// Both FP8-fed routes on every case, on one schedule (and variant).
void runFp8Routes(uint64_t seed, AttentionSchedule schedule, const std::function<void(KernelSpec &)> &tweak = {}) {
  for (Route r : {Route::Nvfp8, Route::DirectP})
    for (const Case &c : kCases)
      runCase(r, c, seed, schedule, tweak);
}

} // namespace

TEST_CASE("forward matches the CPU model and FP64: bf16 route", "[gpu][forward]") {
  const uint64_t seed = freshSeed();
  for (const Case &c : kCases)
    runCase(Route::Bf16, c, seed);
}

TEST_CASE("forward matches the CPU model and FP64: nvfp8 route", "[gpu][forward]") {
  const uint64_t seed = freshSeed();
  for (const Case &c : kCases)
    runCase(Route::Nvfp8, c, seed);
}

TEST_CASE("forward matches the CPU model and FP64: directp route", "[gpu][forward]") {
  const uint64_t seed = freshSeed();
  for (const Case &c : kCases)
    runCase(Route::DirectP, c, seed);
}

// The bf16 route's wgmma kernel (BF16 wgmma on Q/K/V tiles loaded by TMA tensor maps, V read
// N-major; rows past seqlen arrive as zeros) and its serial consumer loop, beside the mma.sync
// kernel the default case above may run.
TEST_CASE("forward matches the CPU model and FP64: bf16 route on the wgmma schedule", "[gpu][forward]") {
  if (gpuEngine().target() != Target::Sm90a)
    return;
  const uint64_t seed = freshSeed();
  for (const Case &c : kCases) {
    runCase(Route::Bf16, c, seed, AttentionSchedule::WgmmaWarpSpecialized);
    runCase(Route::Bf16, c, seed, AttentionSchedule::WgmmaWarpSpecialized, [](KernelSpec &s) {
      s.attention.tile.pipeline.overlap = false;
      s.attention.tile.pipeline.pingpong = false;
    });
  }
}

// D = 256 key tiles: the defaults run 128 keys (FP8-fed routes) and 80 (bf16, FlashAttention-3's
// tile) on the serial loop; the tuner's alternatives are the 64-key tiles of every route and bf16's
// 80-key tiles on the overlapped loop.
TEST_CASE("forward matches the CPU model and FP64: wgmma schedule, D = 256 key tiles", "[gpu][forward]") {
  if (gpuEngine().target() != Target::Sm90a)
    return;
  const uint64_t seed = freshSeed();
  for (const Case &c : kCases) {
    if (c.head_dim != 256)
      continue;
    for (Route r : {Route::Bf16, Route::Nvfp8, Route::DirectP})
      runCase(r, c, seed, AttentionSchedule::WgmmaWarpSpecialized,
              [](KernelSpec &s) { s.attention.tile.shape.block_n = 64; });
    runCase(Route::Bf16, c, seed, AttentionSchedule::WgmmaWarpSpecialized, [](KernelSpec &s) {
      REQUIRE(s.attention.tile.shape.block_n == 80);
      s.attention.tile.pipeline.overlap = true;
    });
    for (Route r : {Route::Bf16, Route::Nvfp8, Route::DirectP}) // the serial loop taking turns
      runCase(r, c, seed, AttentionSchedule::WgmmaWarpSpecialized,
              [](KernelSpec &s) { s.attention.tile.pipeline.pingpong = true; });
  }
}

// Two-CTA clusters (kv_multicast): each CTA loads half of every K/V stage into both, over pairs of
// m-blocks (odd counts leave the last pair's second CTA without rows), on the persistent grid of
// the FP8-fed routes (prewidened K/V; the spec rules refuse bf16's tensor-map tiles, which give
// wrong rows here), every case, causal ones included.
TEST_CASE("forward matches the CPU model and FP64: wgmma schedule, two-CTA clusters multicasting K/V",
          "[gpu][forward]") {
  if (gpuEngine().target() != Target::Sm90a)
    return;
  const uint64_t seed = freshSeed();
  auto multicast = [](KernelSpec &s) {
    s.attention.tile.schedule.persistent = true;
    s.attention.tile.schedule.kv_multicast = true;
  };
  runFp8Routes(seed, AttentionSchedule::WgmmaWarpSpecialized, multicast);
}

// Two consumer warpgroups where the default has three (D64 every route, D128 the FP8-fed ones), the
// tuner's alternative there: every case, persistent and per-tile.
TEST_CASE("forward matches the CPU model and FP64: wgmma schedule, two consumers where three are the default",
          "[gpu][forward]") {
  if (gpuEngine().target() != Target::Sm90a)
    return;
  const uint64_t seed = freshSeed();
  for (const bool flip : {false, true}) {
    auto two = [flip](KernelSpec &s) {
      twoConsumers(s);
      if (flip)
        s.attention.tile.schedule.persistent = !s.attention.tile.schedule.persistent;
    };
    runFp8Routes(seed, AttentionSchedule::WgmmaWarpSpecialized, two);
    for (const Case &c : kCases)
      if (c.head_dim == 64)
        runCase(Route::Bf16, c, seed, AttentionSchedule::WgmmaWarpSpecialized, two);
  }
}

// The tuner's alternative for bf16: tiles repacked by the widening pass (V^T, K-major) and bulk-copied,
// on the persistent grid and with one CTA per work tile.
TEST_CASE("forward matches the CPU model and FP64: bf16 wgmma kernel on repacked tiles", "[gpu][forward]") {
  if (gpuEngine().target() != Target::Sm90a)
    return;
  const uint64_t seed = freshSeed();
  for (const bool persistent : {true, false})
    for (const Case &c : kCases)
      runCase(Route::Bf16, c, seed, AttentionSchedule::WgmmaWarpSpecialized, [persistent](KernelSpec &s) {
        s.attention.tile.staging.kv = KvStaging::Prewidened;
        if (s.attention.tile.shape.block_n == 80) // (the repacked V^T: whole 128-byte rows, 64 keys at D256)
          s.attention.tile.shape.block_n = 64;
        s.attention.tile.schedule.persistent = persistent;
      });
}

// The FP8-fed routes default to the wgmma schedule on sm_90a; the mma.sync kernel (their default
// elsewhere, the tuner's alternative there) on the same cases.
TEST_CASE("forward matches the CPU model and FP64: FP8-fed routes on the mma.sync schedule", "[gpu][forward]") {
  runFp8Routes(freshSeed(), AttentionSchedule::MmaSync);
}

// The in-kernel K/V widening (every CTA's producer widens its tiles) on the same cases.
TEST_CASE("forward matches the CPU model and FP64: wgmma schedule, in-kernel K/V widening", "[gpu][forward]") {
  if (gpuEngine().target() != Target::Sm90a)
    return;
  runFp8Routes(freshSeed(), AttentionSchedule::WgmmaWarpSpecialized,
               [](KernelSpec &s) {
                 twoConsumers(s); // (three consumers leave the producer one thread)
                 s.attention.tile.staging.kv = KvStaging::InKernel;
                 s.attention.tile.schedule.persistent = false; // the persistent producer is one thread
                 s.attention.tile.shape.block_n = std::min(s.attention.tile.shape.block_n, 128); // one V^T column block
               });
}

// The normalizer summed on the ALUs from the decoded P bytes instead of by the PV wgmma's ones row
// (mma_row_sum, the default at D <= 128).
TEST_CASE("forward matches the CPU model and FP64: wgmma schedule, l summed on the ALUs", "[gpu][forward]") {
  if (gpuEngine().target() != Target::Sm90a)
    return;
  runFp8Routes(freshSeed(), AttentionSchedule::WgmmaWarpSpecialized,
               [](KernelSpec &s) { s.attention.tile.softmax.mma_row_sum = false; });
}

// Direct-P blocks in one thread's S columns (TileSpec::thread_key_blocks: the widening orders K's
// rows and V^T's columns, the masks and the anchor sample by tileKey): the defaults (three
// consumers of 128 keys at D64 and D128, two at D256), D128's 96-key tiles (blocks in thread pairs
// and the quad) and its 128-key alternatives the tuner may pick (two consumers on the overlapped
// loop, three on the serial one with FP32 scores), and K/V widened by every CTA's producer.
TEST_CASE("forward matches the CPU model and FP64: wgmma schedule, Direct-P blocks in one thread's columns",
          "[gpu][forward]") {
  if (gpuEngine().target() != Target::Sm90a)
    return;
  const uint64_t seed = freshSeed();
  for (const Case &c : kCases) {
    std::vector<std::function<void(KernelSpec &)>> kernels;
    if (c.head_dim == 128) {
      // the default: three consumers of 128 keys (FP16 scores)
      kernels.push_back([](KernelSpec &s) { REQUIRE(s.attention.tile.shape.block_n == 128); });
      // three consumers of 96 keys: two blocks in thread pairs, the third in the quad
      kernels.push_back([](KernelSpec &s) { s.attention.tile.shape.block_n = 96; });
      // two consumers of 128 keys, and three on the serial loop with FP32 scores
      kernels.push_back([](KernelSpec &s) {
        s.attention.tile.shape.block_m = 128;
        s.attention.tile.shape.warps = 12;
      });
      kernels.push_back([](KernelSpec &s) {
        s = withScoresFp16(s, false);
        s.attention.tile.pipeline.overlap = false;
        s.attention.tile.pipeline.pingpong = false;
      });
    } else {
      kernels.push_back([](KernelSpec &s) { REQUIRE(s.attention.tile.softmax.thread_key_blocks); });
    }
    if (c.head_dim <= 128) // (in-kernel widening at D256: 216 registers, 64-key tiles)
      kernels.push_back([](KernelSpec &s) {
        twoConsumers(s);
        s.attention.tile.shape.block_n = 128;
        s.attention.tile.softmax.thread_key_blocks = true;
        s.attention.tile.staging.kv = KvStaging::InKernel;
        s.attention.tile.schedule.persistent = false;
        s.attention.tile.schedule.kv_multicast = false;
      });
    for (const auto &kernel : kernels)
      runCase(Route::DirectP, c, seed, AttentionSchedule::WgmmaWarpSpecialized, [&](KernelSpec &s) {
        kernel(s);
        REQUIRE(s.attention.tile.softmax.thread_key_blocks);
      });
  }
}

// S accumulated in FP16 by the QK^T wgmma (TileSpec::scores_fp16: Q/K widened by 2^-7, or 2^-8
// at D256, so |S| < 65504), the piecewise classifier on FP16 pairs from it (NUMERICS.md §2.3): the
// model rounds each accumulator to FP16 once, the tensor core at each k-step, so codes flip now and
// then as with FP32 S (the route's bounds). Every head dim on its default tiles with quad blocks,
// the huge-logit and dominant-key patterns included; then D64/D256 on quad blocks, heads whose
// multiplier overflows FP16, and D128 with the threshold classifier.
TEST_CASE("forward matches the CPU model and FP64: wgmma schedule, directp with FP16 scores", "[gpu][forward]") {
  if (gpuEngine().target() != Target::Sm90a)
    return;
  const uint64_t seed = freshSeed();
  for (const Case &c : kCases)
    runCase(Route::DirectP, c, seed, AttentionSchedule::WgmmaWarpSpecialized, [](KernelSpec &s) {
      s = withScoresFp16(s, true);
      REQUIRE(s.attention.tile.softmax.scores_fp16);
    });
  for (const Case &c : kCases) // D64 and D256 on quad blocks too (their default has thread blocks)
    if (c.head_dim != 128)
      runCase(Route::DirectP, c, seed, AttentionSchedule::WgmmaWarpSpecialized, [](KernelSpec &s) {
        s = withScoresFp16(s, true);
        s.attention.tile.softmax.thread_key_blocks = false;
      });
  // Heads whose multiplier overflows FP16: every tile on the masked arm, y in FP32.
  for (const Case &c : {Case{1, 2, 2, 256, 512, 128, false, Pattern::OutlierChannels},
                        Case{1, 2, 2, 300, 300, 64, true, Pattern::OutlierChannels}})
    runCase(Route::DirectP, c, seed, AttentionSchedule::WgmmaWarpSpecialized,
            [](KernelSpec &s) { s = withScoresFp16(s, true); });
  // The piecewise classifier's pieces folded onto S (pieces_from_scores), every case.
  for (const Case &c : kCases)
    runCase(Route::DirectP, c, seed, AttentionSchedule::WgmmaWarpSpecialized, [](KernelSpec &s) {
      s = withScoresFp16(s, true);
      s.attention.tile.softmax.pieces_from_scores = true;
    });
  for (const Case &c : kCases)
    if (c.head_dim == 128)
      runCase(Route::DirectP, c, seed, AttentionSchedule::WgmmaWarpSpecialized, [](KernelSpec &s) {
        s = withScoresFp16(s, true);
        s.attention.classifier.kind = ClassifierKind::Threshold;
        s.attention.tile.shape.block_n = 128; // (the threshold classifier's tile: two consumers)
        s.attention.tile.shape.block_m = 128;
        s.attention.tile.shape.warps = 12;
      });
}

// nvfp8 on FP16 scores (TileSpec::scores_fp16, NUMERICS.md §2.3): the exponents in one HFMA2 per
// pair and 2^x on the MUFU's FP16 form where a row's exponents fit FP16, in FP32 elsewhere (the
// huge-logit pattern's |m| >= 128, heads whose multiplier overflows FP16). Every case on the
// default tiles, D128 also on three consumers of 128 keys (S of 32 registers), then the FP16
// overflow heads, then 2^x_h as the FP16 polynomial of score_terms.cuh.
TEST_CASE("forward matches the CPU model and FP64: wgmma schedule, nvfp8 with FP16 scores", "[gpu][forward]") {
  if (gpuEngine().target() != Target::Sm90a)
    return;
  const uint64_t seed = freshSeed();
  for (const Case &c : kCases)
    runCase(Route::Nvfp8, c, seed, AttentionSchedule::WgmmaWarpSpecialized, [](KernelSpec &s) {
      s = withScoresFp16(s, true);
      REQUIRE(s.attention.tile.softmax.scores_fp16);
    });
  for (const Case &c : kCases)
    if (c.head_dim == 128)
      runCase(Route::Nvfp8, c, seed, AttentionSchedule::WgmmaWarpSpecialized, [](KernelSpec &s) {
        s = withScoresFp16(s, true);
        s.attention.tile.shape.block_n = 128;
        s.attention.tile.shape.block_m = 192;
        s.attention.tile.shape.warps = 16;
      });
  for (const Case &c : {Case{1, 2, 2, 256, 512, 128, false, Pattern::OutlierChannels},
                        Case{1, 2, 2, 300, 300, 64, true, Pattern::OutlierChannels},
                        Case{1, 2, 2, 256, 333, 256, true, Pattern::OutlierChannels}})
    runCase(Route::Nvfp8, c, seed, AttentionSchedule::WgmmaWarpSpecialized,
            [](KernelSpec &s) { s = withScoresFp16(s, true); });
  // 2^x_h as the FP16 polynomial (exp2_poly_tiles) for a quarter of the keys of every tile, and
  // for all of them (the model takes the same polynomial for the same keys).
  for (const int quarters : {1, 4})
    for (const Case &c : kCases)
      runCase(Route::Nvfp8, c, seed, AttentionSchedule::WgmmaWarpSpecialized, [quarters](KernelSpec &s) {
        s = withScoresFp16(s, true);
        s.attention.tile.softmax.exp2_poly_tiles = s.attention.tile.shape.block_n / 32 * quarters;
      });
}

// The consumer loop without the softmax/PV overlap (the tuner may pick it), with and without the
// consumers taking turns at each QK^T and PV.
TEST_CASE("forward matches the CPU model and FP64: wgmma schedule, serial consumer loop", "[gpu][forward]") {
  if (gpuEngine().target() != Target::Sm90a)
    return;
  const uint64_t seed = freshSeed();
  for (const bool turns : {false, true})
    runFp8Routes(seed, AttentionSchedule::WgmmaWarpSpecialized, [turns](KernelSpec &s) {
      s.attention.tile.pipeline.overlap = false;
      s.attention.tile.pipeline.pingpong = turns;
    });
}

// The affine classifier in its evaluated form (directp.cuh: one FMA with the row/block addend):
// both kernels run it as FFMA.SAT + magic-number FFMA.RM (attention/p_directp.cuh).
// alpha*3 + beta <= 7.5 skips the upper clamp at compile time; the second classifier needs it. These coefficients are not fitted to the shapes (the kernel-vs-model checks
// are the point), so the FP64 cosine floor is 0.90: measured 0.91-0.99 on the H200.
TEST_CASE("forward matches the CPU model and FP64: directp with affine classifiers", "[gpu][forward]") {
  const uint64_t seed = freshSeed();
  // beta keeps 2*alpha + beta (the code of y = 2, the row max's) off an integer: with all scores
  // equal, every key sits there, and wgmma's S would flip all of them at once against the model.
  const std::pair<float, float> classifiers[] = {{2.0f, 0.875f}, {2.5f, 1.125f}};
  for (auto [alpha, beta] : classifiers) {
    INFO("affine alpha " << alpha << " beta " << beta);
    auto affine = [alpha = alpha, beta = beta](KernelSpec &s) {
      s.attention.classifier.kind = ClassifierKind::Affine;
      s.attention.classifier.alpha = alpha;
      s.attention.classifier.beta = beta;
    };
    for (const Case &c : kCases) {
      runCase(Route::DirectP, c, seed, AttentionSchedule::MmaSync, affine, 0.90);
      if (gpuEngine().target() == Target::Sm90a)
        runCase(Route::DirectP, c, seed, AttentionSchedule::WgmmaWarpSpecialized, affine, 0.90);
    }
  }
}

// More work tiles (128 query rows of one head) than the H200 has SMs, so that every persistent CTA
// computes several: Q handed over between work tiles, the K/V ring running on across them, causal
// work tiles in longest-first order, GQA. Every route's default kernel (on sm_90a persistent
// where non-causal), and the persistent wgmma kernel on every case. The non-causal cases end in
// ragged m-blocks where a consumer has no rows (Sq 257 and 200 in 192-row blocks, 130 in 128-row
// ones): it only passes its turns, and the persistent stride rotates each head's m-blocks
// (work_tile_order.cuh), so that a CTA goes from full tiles to ragged ones and back (Sq 200: 140
// tiles, the heads from 66 on rotated by one).
TEST_CASE("forward matches the CPU model and FP64: persistent grid, several work tiles per CTA", "[gpu][forward]") {
  const uint64_t seed = freshSeed();
  const Case many[] = {{2, 40, 8, 300, 280, 128, true}, {3, 48, 48, 257, 190, 64, false},
                       {1, 136, 136, 130, 96, 256, false}, {1, 70, 35, 200, 300, 128, false}};
  for (Route r : {Route::Bf16, Route::Nvfp8, Route::DirectP})
    for (const Case &c : many)
      runCase(r, c, seed);
  if (gpuEngine().target() != Target::Sm90a)
    return;
  auto persistent = [](KernelSpec &s) { s.attention.tile.schedule.persistent = true; };
  for (Route r : {Route::Bf16, Route::Nvfp8, Route::DirectP}) {
    // The causal grid hands its work tiles out from a counter that each launch must leave at zero:
    // the same kernel twice in a row (a counter left behind would skip the second launch's tiles).
    for (int launch = 0; launch < 2; ++launch)
      for (const Case &c : many)
        if (c.causal)
          runCase(r, c, seed, AttentionSchedule::WgmmaWarpSpecialized, persistent);
    for (const Case &c : kCases)
      if (c.causal)
        runCase(r, c, seed, AttentionSchedule::WgmmaWarpSpecialized, persistent);
  }
}

// The wgmma kernel with one CTA per work tile (the tuner's alternative to the persistent grid).
TEST_CASE("forward matches the CPU model and FP64: wgmma schedule, one CTA per work tile", "[gpu][forward]") {
  if (gpuEngine().target() != Target::Sm90a)
    return;
  const uint64_t seed = freshSeed();
  auto per_tile = [](KernelSpec &s) { s.attention.tile.schedule.persistent = false; };
  runFp8Routes(seed, AttentionSchedule::WgmmaWarpSpecialized, per_tile);
  for (const Case &c : kCases)
    runCase(Route::Bf16, c, seed, AttentionSchedule::WgmmaWarpSpecialized, per_tile);
}

// The threshold classifier (the piecewise one is the default) on both kernels.
TEST_CASE("forward matches the CPU model and FP64: directp with the threshold classifier", "[gpu][forward]") {
  const uint64_t seed = freshSeed();
  auto threshold = [](KernelSpec &s) {
    twoConsumers(s); // (it spills beside three consumers' 160 registers)
    s.attention.classifier.kind = ClassifierKind::Threshold;
    s.attention.tile.shape.block_n = std::min(s.attention.tile.shape.block_n, 128); // (it spills beside 192 keys)
    if (s.attention.head_dim == 256) // (and beside FP16 scores at D256: FP32 scores there)
      s = withScoresFp16(s, false);
  };
  for (const Case &c : kCases) {
    runCase(Route::DirectP, c, seed, AttentionSchedule::MmaSync, threshold);
    if (gpuEngine().target() == Target::Sm90a)
      runCase(Route::DirectP, c, seed, AttentionSchedule::WgmmaWarpSpecialized, threshold);
  }
}

// Causal consumers taking turns where their tile counts agree (the tuner's alternative; the default
// for causal kernels lets them run free).
TEST_CASE("forward matches the CPU model and FP64: wgmma schedule, causal ping-pong", "[gpu][forward]") {
  if (gpuEngine().target() != Target::Sm90a)
    return;
  const uint64_t seed = freshSeed();
  auto turns = [](KernelSpec &s) { s.attention.tile.pipeline.pingpong = s.attention.tile.pipeline.overlap; };
  for (Route r : {Route::Bf16, Route::Nvfp8, Route::DirectP})
    for (const Case &c : kCases)
      if (c.causal)
        runCase(r, c, seed, AttentionSchedule::WgmmaWarpSpecialized, turns);
}

// 192-key tiles of the FP8-fed routes (QK^T's wgmma N = 192, V^T in two column blocks, each with
// its own row-sum rows): persistent and per-tile, causal cases included.
TEST_CASE("forward matches the CPU model and FP64: wgmma schedule, 192-key tiles", "[gpu][forward]") {
  if (gpuEngine().target() != Target::Sm90a)
    return;
  const uint64_t seed = freshSeed();
  auto wide = [](KernelSpec &s) {
    twoConsumers(s);
    if (s.attention.head_dim <= 128)
      s.attention.tile.shape.block_n = 192;
  };
  runFp8Routes(seed, AttentionSchedule::WgmmaWarpSpecialized, wide);
  const Case many[] = {{2, 40, 8, 300, 280, 128, true}, {3, 48, 48, 257, 190, 64, false}};
  for (Route r : {Route::Nvfp8, Route::DirectP})
    for (const Case &c : many) {
      runCase(r, c, seed, AttentionSchedule::WgmmaWarpSpecialized, wide);
      runCase(r, c, seed, AttentionSchedule::WgmmaWarpSpecialized, [&](KernelSpec &s) {
        wide(s);
        s.attention.tile.schedule.persistent = !s.attention.tile.schedule.persistent;
        s.attention.tile.softmax.mma_row_sum = false; // and l from the ALUs
      });
    }
}

// Three consumer warpgroups (block_m 192, 512 threads, 160 registers per consumer; the tuner's
// alternative): 64 keys per tile at D128, 128 at D64 (registers), on every route where that
// fits, persistent (the default, more work tiles than SMs in the second set) and per-tile, with
// causal cases, GQA and three-way ping-pong.
TEST_CASE("forward matches the CPU model and FP64: wgmma schedule, three consumer warpgroups", "[gpu][forward]") {
  if (gpuEngine().target() != Target::Sm90a)
    return;
  const uint64_t seed = freshSeed();
  auto three = [](KernelSpec &s) {
    if (s.attention.head_dim > 128)
      return; // O of 256 columns beside S does not fit 160 registers: the two-consumer kernel
    s.attention.tile.shape.block_m = 192;
    s.attention.tile.shape.warps = 16;
    s.attention.tile.shape.block_n = s.attention.head_dim <= 64 ? 128 : 64;
  };
  runFp8Routes(seed, AttentionSchedule::WgmmaWarpSpecialized, three);
  // 96-key tiles (QK^T's wgmma N = 96, three Direct-P blocks per tile) at D128.
  runFp8Routes(seed, AttentionSchedule::WgmmaWarpSpecialized, [&](KernelSpec &s) {
    three(s);
    if (s.attention.head_dim == 128)
      s.attention.tile.shape.block_n = 96;
  });
  const Case many[] = {{2, 40, 8, 300, 280, 128, true}, {3, 48, 48, 257, 190, 64, false},
                       {2, 70, 70, 400, 333, 128, false}};
  for (Route r : {Route::Nvfp8, Route::DirectP, Route::Bf16})
    for (const Case &c : many) {
      runCase(r, c, seed, AttentionSchedule::WgmmaWarpSpecialized, [&](KernelSpec &s) {
        three(s);
        if (r == Route::Bf16) // BF16 P takes twice the registers: 64 keys at D64 too
          s.attention.tile.shape.block_n = 64;
      });
      runCase(r, c, seed, AttentionSchedule::WgmmaWarpSpecialized, [&](KernelSpec &s) {
        three(s);
        if (r == Route::Bf16)
          s.attention.tile.shape.block_n = 64;
        s.attention.tile.schedule.persistent = !s.attention.tile.schedule.persistent;
      });
    }
}

// The range guard with slack (a tile max may pass the row max by up to 2 log2 units before O is
// rescaled; the FP8-fed routes feed P with 2 fewer bits of offset): every route's default kernel and
// the mma.sync kernel on every case, the huge-logit and dominant-key ones included, and the
// persistent grid of several work tiles per CTA.
TEST_CASE("forward matches the CPU model and FP64: range guard with slack", "[gpu][forward]") {
  const uint64_t seed = freshSeed();
  auto slack = [](KernelSpec &s) { setGuardSlack(s.attention, 2.0f); };
  // (the last: 192 work tiles of 700 keys, so that persistent CTAs run several through the
  // unmasked arm's lean row max)
  const Case many[] = {{2, 40, 8, 300, 280, 128, true}, {3, 48, 48, 257, 190, 64, false},
                       {2, 48, 48, 300, 700, 128, false}};
  for (Route r : {Route::Bf16, Route::Nvfp8, Route::DirectP}) {
    for (const Case &c : kCases) {
      runCase(r, c, seed, std::nullopt, slack);
      if (r != Route::Bf16)
        runCase(r, c, seed, AttentionSchedule::MmaSync, slack);
    }
    for (const Case &c : many)
      runCase(r, c, seed, std::nullopt, slack);
  }
}

namespace {
// [B][H][S][D] -> [B][S][H][D] (the layout most callers hold: heads interleaved per token).
std::vector<uint16_t> toBshd(const std::vector<uint16_t> &bhsd, int b, int h, int s, int d) {
  std::vector<uint16_t> out(bhsd.size());
  for (int ib = 0; ib < b; ++ib)
    for (int ih = 0; ih < h; ++ih)
      for (int is = 0; is < s; ++is)
        for (int id = 0; id < d; ++id)
          out[((std::size_t(ib) * s + is) * h + ih) * d + id] = bhsd[((std::size_t(ib) * h + ih) * s + is) * d + id];
  return out;
}
TensorDesc bshdView(uint64_t data, int b, int h, int s, int d) {
  return {data, DType::BF16, {b, h, s, d}, {int64_t(s) * h * d, d, int64_t(h) * d, 1}};
}
} // namespace

// The bf16 wgmma kernel reads Q, K and V through tensor maps built from the caller's strides: a
// [B][S][H][D] (BSHD) view of the same values must give bit-identical O and LSE to the dense
// [B][H][S][D] tensors (and so must the repacking alternative, whose pass reads the strides too);
// a misaligned base address is refused with an error, not read.
TEST_CASE("bf16 wgmma kernel: strided (BSHD) operands give the dense result bit for bit", "[gpu][forward]") {
  if (gpuEngine().target() != Target::Sm90a)
    return;
  std::mt19937_64 rng(freshSeed());
  Engine &engine = gpuEngine();
  const Case cases[] = {{2, 4, 2, 300, 333, 128, true}, {1, 6, 3, 257, 190, 64, false}, {1, 2, 1, 200, 130, 256, false}};
  for (const Case &c : cases)
    for (const KvStaging staging : {KvStaging::TensorMap, KvStaging::Prewidened}) {
      INFO("B" << c.batch << " Hq" << c.heads_q << " Hkv" << c.heads_kv << " Sq" << c.seqlen_q << " Sk" << c.seqlen_k
                << " D" << c.head_dim << " causal " << c.causal << " staging " << toString(staging));
      const Inputs in = makeInputs(c, rng);
      auto spec = engine.attentionSpecFor(Route::Bf16, c.head_dim, c.causal, c.seqlen_k, std::nullopt);
      REQUIRE_OK(spec);
      REQUIRE(spec->attention.tile.schedule.kernel == AttentionSchedule::WgmmaWarpSpecialized);
      spec->attention.tile.staging.kv = staging;
      if (staging == KvStaging::Prewidened && spec->attention.tile.shape.block_n == 80)
        spec->attention.tile.shape.block_n = 64; // (the repacked V^T: whole 128-byte rows)
      const std::size_t no = in.q.bits.size(), nl = std::size_t(c.batch) * c.heads_q * c.seqlen_q;
      auto run = [&](bool bshd) {
        auto q = bshd ? toBshd(in.q.bits, c.batch, c.heads_q, c.seqlen_q, c.head_dim) : in.q.bits;
        auto k = bshd ? toBshd(in.k.bits, c.batch, c.heads_kv, c.seqlen_k, c.head_dim) : in.k.bits;
        auto v = bshd ? toBshd(in.v.bits, c.batch, c.heads_kv, c.seqlen_k, c.head_dim) : in.v.bits;
        auto dq = upload(q.data(), q.size() * 2), dk = upload(k.data(), k.size() * 2), dv = upload(v.data(), v.size() * 2);
        auto dout = runtime::DeviceBuffer::allocate(engine.driver(), no * 2);
        auto dlse = runtime::DeviceBuffer::allocate(engine.driver(), nl * 4);
        REQUIRE_OK(dout);
        REQUIRE_OK(dlse);
        REQUIRE_SUCCESS(dout->fill(0xFF));
        REQUIRE_SUCCESS(dlse->fill(0xFF));
        ForwardArgs a;
        auto desc = [&](uint64_t p, int h, int s) {
          return bshd ? bshdView(p, c.batch, h, s, c.head_dim) : TensorDesc::contiguous(p, DType::BF16, c.batch, h, s, c.head_dim);
        };
        a.q = desc(dq.address(), c.heads_q, c.seqlen_q);
        a.k = desc(dk.address(), c.heads_kv, c.seqlen_k);
        a.v = desc(dv.address(), c.heads_kv, c.seqlen_k);
        a.o = TensorDesc::contiguous(dout->address(), DType::BF16, c.batch, c.heads_q, c.seqlen_q, c.head_dim);
        a.lse = dlse->address();
        a.route = Route::Bf16;
        a.causal = c.causal;
        a.spec = *spec;
        if (auto err = engine.forward(a))
          FAIL(errorText(std::move(err)));
        return std::make_pair(download<uint16_t>(*dout, no), download<float>(*dlse, nl));
      };
      const auto dense = run(false), strided = run(true);
      std::size_t nan = 0;
      for (uint16_t b : dense.first)
        nan += (b & 0x7fffu) > 0x7f80u;
      CHECK(nan == 0); // every output written
      CHECK(dense.first == strided.first);
      CHECK(std::memcmp(dense.second.data(), strided.second.data(), nl * 4) == 0);
    }
  // A base address off the 16-byte grid: refused, naming the operand.
  const Case c{1, 2, 2, 128, 128, 128, false};
  const Inputs in = makeInputs(c, rng);
  std::vector<uint16_t> padded(in.q.bits.size() + 8, 0);
  std::copy(in.q.bits.begin(), in.q.bits.end(), padded.begin() + 1);
  auto dq = upload(padded.data(), padded.size() * 2), dk = upload(in.k.bits.data(), in.k.bits.size() * 2);
  auto dout = runtime::DeviceBuffer::allocate(engine.driver(), in.q.bits.size() * 2);
  REQUIRE_OK(dout);
  ForwardArgs a;
  a.q = TensorDesc::contiguous(dq.address() + 2, DType::BF16, 1, 2, 128, 128);
  a.k = a.v = TensorDesc::contiguous(dk.address(), DType::BF16, 1, 2, 128, 128);
  a.o = TensorDesc::contiguous(dout->address(), DType::BF16, 1, 2, 128, 128);
  a.route = Route::Bf16;
  const std::string msg = errorText(engine.forward(a));
  CHECK_THAT(msg, Catch::Contains("q") && Catch::Contains("aligned"));
}

// Fused widening (the FP8-fed persistent default: the producer's spare warps write the K/V and Q
// images that the passes would, claiming K/V pieces across CTAs) against the passes: the same
// images, so the same O and LSE bit for bit, on every head dim, causal (the grid that hands its
// tiles out) and not, GQA, a single key and a single query, ragged blocks, many work tiles per
// CTA and heads shared by many CTAs. Each fused kernel runs twice in a row: counters a launch
// left behind (they must be zero) or a missing wait (a tile copied before its widening landed)
// would change the second result.
TEST_CASE("fused widening gives the widening passes' result bit for bit", "[gpu][forward]") {
  if (gpuEngine().target() != Target::Sm90a)
    return;
  std::mt19937_64 rng(freshSeed());
  Engine &engine = gpuEngine();
  const Case cases[] = {{1, 1, 1, 1, 1, 64, false},         {2, 8, 2, 77, 300, 128, true},
                        {1, 4, 1, 300, 129, 128, false},    {3, 48, 48, 257, 190, 64, false},
                        {1, 16, 4, 1024, 4096, 128, false}, {1, 70, 35, 200, 300, 128, false},
                        {2, 40, 8, 300, 280, 128, true},    {1, 8, 8, 512, 2048, 256, true},
                        {1, 6, 3, 200, 333, 256, false}};
  for (QkFormat qk : {QkFormat::Nvfp4, QkFormat::E4m3})
  for (Route r : {Route::Nvfp8, Route::DirectP})
    for (const Case &c : cases) {
      INFO(toString(RoutePreset{r, qk}) << " B" << c.batch << " Hq" << c.heads_q << " Hkv" << c.heads_kv << " Sq" << c.seqlen_q << " Sk"
                       << c.seqlen_k << " D" << c.head_dim << " causal " << c.causal);
      const Inputs in = makeInputs(c, rng);
      auto spec = engine.attentionSpecFor(r, c.head_dim, c.causal, c.seqlen_k, std::nullopt, qk);
      REQUIRE_OK(spec);
      spec->attention.tile.schedule.persistent = true; // (causal beyond 8k keys: one CTA per work tile by default)
      spec->attention.tile.staging.fused_widening = true;
      REQUIRE(canonicalize(*spec).attention.tile.staging.fused_widening);
      const std::size_t nl = std::size_t(c.batch) * c.heads_q * c.seqlen_q;
      auto run = [&](bool fused) {
        const DeviceCase dev = uploadCase(c, in); // (fresh, poisoned outputs for every run)
        ForwardArgs a = dev.args(c, r);
        KernelSpec chosen = *spec;
        chosen.attention.tile.staging.fused_widening = fused;
        a.spec = chosen;
        if (auto err = engine.forward(a))
          FAIL(errorText(std::move(err)));
        return std::make_pair(download<uint16_t>(dev.o, dev.o_elems), download<float>(dev.lse, nl));
      };
      const auto passes = run(false), fused = run(true), again = run(true);
      std::size_t nan = 0;
      for (uint16_t b : passes.first)
        nan += (b & 0x7fffu) > 0x7f80u;
      CHECK(nan == 0);
      CHECK(fused.first == passes.first);
      CHECK(std::memcmp(fused.second.data(), passes.second.data(), nl * 4) == 0);
      CHECK(again.first == passes.first);
      CHECK(std::memcmp(again.second.data(), passes.second.data(), nl * 4) == 0);
    }
}

// E4M3 Q/K (the fp8 and fp8-directp presets, docs/NUMERICS.md §1.4) through the public call, on
// each producer path that fills the Q/K images: the default kernel (its passes or its spare warps),
// the in-kernel producer and the other causal grids.
TEST_CASE("forward matches the CPU model and FP64: E4M3 Q/K", "[gpu][forward]") {
  if (gpuEngine().target() != Target::Sm90a)
    return;
  const uint64_t seed = freshSeed();
  const auto in_kernel = [](KernelSpec &s) {
    twoConsumers(s);
    s.attention.tile.staging.kv = KvStaging::InKernel;
    s.attention.tile.schedule.persistent = false;
    s.attention.tile.shape.block_n = std::min(s.attention.tile.shape.block_n, 128);
  };
  const auto per_tile = [](KernelSpec &s) { s.attention.tile.schedule.persistent = false; };
  const auto persistent = [](KernelSpec &s) { s.attention.tile.schedule.persistent = true; };
  for (Route r : {Route::Nvfp8, Route::DirectP})
    for (const Case &c : kCases) {
      runCase(r, c, seed, std::nullopt, {}, std::nullopt, QkFormat::E4m3);
      runCase(r, c, seed, AttentionSchedule::WgmmaWarpSpecialized, in_kernel, std::nullopt, QkFormat::E4m3);
      if (c.causal) {
        runCase(r, c, seed, AttentionSchedule::WgmmaWarpSpecialized, per_tile, std::nullopt, QkFormat::E4m3);
        runCase(r, c, seed, AttentionSchedule::WgmmaWarpSpecialized, persistent, std::nullopt, QkFormat::E4m3);
      }
    }
}

// What E4M3 Q/K are for: logits with a standard deviation of 16 (Q, K ~ N(0, 4^2)), where NVFP4's
// error in the logits decides the weights (docs/ACCURACY.md, operand formats: the CPU models give
// about 0.86 for NVFP4 Q/K and 0.985 for E4M3 Q/K with E4M3 P/V at N = 1024).
TEST_CASE("E4M3 Q/K keep the accuracy at large logits that NVFP4 Q/K lose", "[gpu][forward]") {
  if (gpuEngine().target() != Target::Sm90a)
    return;
  std::mt19937_64 rng(freshSeed());
  const Case c{1, 4, 4, 256, 1024, 128, false};
  Inputs in{randomBf16(std::size_t(4) * 256 * 128, 4.0f, rng), randomBf16(std::size_t(4) * 1024 * 128, 4.0f, rng),
            randomBf16(std::size_t(4) * 1024 * 128, 1.0f, rng)};
  cpu::AttentionProblem prob;
  prob.shape = {c.batch, c.heads_q, c.heads_kv, c.seqlen_q, c.seqlen_k, c.head_dim};
  prob.q = cpu::TensorRef::contiguous(in.q.values.data(), c.heads_q, c.seqlen_q, c.head_dim);
  prob.k = cpu::TensorRef::contiguous(in.k.values.data(), c.heads_kv, c.seqlen_k, c.head_dim);
  prob.v = cpu::TensorRef::contiguous(in.v.values.data(), c.heads_kv, c.seqlen_k, c.head_dim);
  auto ref = cpu::referenceAttention(prob, {});
  REQUIRE_OK(ref);
  std::map<std::string, double> cosine;
  for (const RoutePreset &preset : routePresets()) {
    const DeviceCase dev = uploadCase(c, in);
    ForwardArgs a = dev.args(c, preset.route);
    a.qk_format = preset.qk_format;
    if (auto err = gpuEngine().forward(a))
      FAIL(errorText(std::move(err)));
    const auto o = download<uint16_t>(dev.o, dev.o_elems);
    double dot = 0, gn = 0, rn = 0;
    for (int h = 0; h < c.heads_q; ++h)
      for (int r = 0; r < c.seqlen_q; ++r)
        for (int d = 0; d < c.head_dim; ++d) {
          const double g = formats::bf16ToFloat(o[(std::size_t(h) * c.seqlen_q + r) * c.head_dim + d]);
          const double x = ref->oRow(0, h, r)[d];
          dot += g * x, gn += g * g, rn += x * x;
        }
    cosine[toString(preset)] = dot / std::sqrt(gn * rn);
    std::printf("  large logits (sigma 4, D128, Sk 1024): %-12s cosine vs fp64 %.4f\n", toString(preset).c_str(),
                cosine[toString(preset)]);
  }
  CHECK(cosine["nvfp8"] < 0.92);
  CHECK(cosine["directp"] < 0.92);
  CHECK(cosine["fp8"] >= 0.975);
  CHECK(cosine["fp8-directp"] >= 0.96);
  CHECK(cosine["bf16"] >= 0.999);
}

// Route "auto": a forward with a budget runs the preset Engine::autoRoute names, bit for bit as
// that preset called by name; at large logits that is an E4M3 Q/K preset.
TEST_CASE("route auto runs the preset its budget selects", "[gpu][forward][auto]") {
  if (gpuEngine().target() != Target::Sm90a)
    return;
  std::mt19937_64 rng(freshSeed());
  Engine &engine = gpuEngine();
  const Case c{1, 4, 4, 256, 1024, 128, false};
  Inputs in{randomBf16(std::size_t(4) * 256 * 128, 4.0f, rng), randomBf16(std::size_t(4) * 1024 * 128, 4.0f, rng),
            randomBf16(std::size_t(4) * 1024 * 128, 1.0f, rng)};
  const runtime::AccuracyBudget budget{0.98, 16.0};
  auto choice = engine.autoRoute(c.head_dim, c.causal, c.seqlen_k, budget);
  REQUIRE_OK(choice);
  CHECK(choice->preset.qk_format == QkFormat::E4m3);
  CHECK(choice->predicted_cosine >= 0.98);
  const auto run = [&](const std::function<void(ForwardArgs &)> &route) {
    const DeviceCase dev = uploadCase(c, in);
    ForwardArgs a = dev.args(c, Route::DirectP);
    route(a);
    if (auto err = engine.forward(a))
      FAIL(errorText(std::move(err)));
    return download<uint16_t>(dev.o, dev.o_elems);
  };
  const auto by_budget = run([&](ForwardArgs &a) { a.auto_route = budget; });
  const auto by_name = run([&](ForwardArgs &a) {
    a.route = choice->preset.route;
    a.qk_format = choice->preset.qk_format;
  });
  CHECK(by_budget == by_name);
  // A loose budget at unit logits: the fastest preset.
  auto loose = engine.autoRoute(128, false, 4096, {0.95, 1.0});
  REQUIRE_OK(loose);
  CHECK(toString(loose->preset) == "directp");
}
