// One query row of a route model: scores, tile-by-tile online softmax with the range guard, P
// per route, the normalizer from the fed values, the epilogue (docs/NUMERICS.md §2.1-§2.4).
#include <algorithm>
#include <cmath>
#include <limits>

#include "model_internal.h"
#include "fa4jit/codegen/formats.h"

namespace fa4jit::cpu::detail {

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

float e4m3Round(float x) { return formats::e4m3ToFloat(formats::floatToE4M3(x)); }

// The row's accumulators (formed in FP64, rounded to FP32 once, or to FP16 with scores_fp16;
// -inf for masked keys) and its log2-domain scores t = acc * mul, which the model uses only for
// the maxima (score_terms.cuh).
void rowScores(const RowInputs &in, float mul, std::vector<float> &acc, std::vector<float> &t) {
  const FedOperand &k = *in.k;
  acc.assign(k.seqlen, kNegInf);
  t.assign(k.seqlen, kNegInf);
  for (int j = 0; j < in.visible; ++j) {
    const float *kr = k.row(j);
    double sum = 0;
    for (int d = 0; d < k.head_dim; ++d)
      sum += static_cast<double>(in.q[d]) * kr[d];
    acc[j] = in.spec->tile.softmax.scores_fp16 ? static_cast<float>(device::roundToHalf(sum)) : static_cast<float>(sum);
    t[j] = acc[j] * mul;
  }
}

// SampledAnchor: max of t over the sampled visible keys of the first tile with a visible key.
// Visible keys are a prefix, so that tile is tile 0 whenever any key is visible.
float sampledAnchor(const RowInputs &in, const std::vector<float> &t) {
  const int block_n = in.spec->tile.shape.block_n, stride = in.spec->guard.sample_stride;
  float m = kNegInf;
  for (int j = 0; j < std::min(block_n, in.visible); j += stride)
    m = std::max(m, t[j]);
  return m;
}

// P for the keys [j0, j1) of one tile, given t = acc * mul and x = fma(acc, mul, -m) (masked keys:
// -inf).
// Returns the fed values in p (and codes / block exponents for directp); `lsum` gets the FP64 sum
// of what l adds.
void tileP(const RowInputs &in, const std::vector<float> &acc, const std::vector<float> &t, float mul, float m,
           const std::vector<float> &x,
           int j0, int j1, std::vector<float> &p,
           std::vector<uint8_t> &code, std::vector<int> &block_exp, double &lsum) {
  const AttentionSpec &spec = *in.spec;
  const int off = spec.operands.p_offset_log2;
  lsum = 0;
  switch (spec.route) {
  case Route::Bf16:
    for (int j = j0; j < j1; ++j) {
      const float e = x[j] == kNegInf ? 0.0f : std::exp2(x[j]);
      lsum += e; // l sums p before its BF16 rounding
      p[j] = formats::roundToBF16(e);
    }
    return;
  case Route::Nvfp8: {
    const float addend = static_cast<float>(off) - m;
    // FP16 scores: x_h = FP16(acc_h * FP16(mul) + addend) (one HFMA2, exact in double before its
    // rounding) and 2^x_h in FP16 where the row's exponents fit FP16, else x in FP32 and 2^x
    // rounded to FP16; E4M3 from the FP16 value (NUMERICS.md §2.3). The first exp2_poly_tiles n8
    // tiles of keys of each tile take 2^x_h as the kernel's FP16 polynomial (exp2PolyHalf).
    const bool fp16 = spec.tile.softmax.scores_fp16;
    const bool half_exponents = fp16 && device::halfExponentsFit(mul, addend);
    const double mul_h = device::roundToHalf(mul);
    for (int j = j0; j < j1; ++j) {
      if (x[j] == kNegInf) {
        p[j] = 0.0f;
      } else if (half_exponents) {
        const double x_h = device::roundToHalf(static_cast<double>(acc[j]) * mul_h + addend);
        const double e_h = device::exp2PolyKey(j % spec.tile.shape.block_n, spec.tile.softmax.exp2_poly_tiles)
                               ? device::exp2PolyHalf(x_h)
                               : device::roundToHalf(std::exp2(x_h));
        p[j] = e4m3Round(static_cast<float>(e_h));
      } else {
        const float e = std::exp2(device::scoreExponent(acc[j], mul, addend));
        p[j] = e4m3Round(fp16 ? static_cast<float>(device::roundToHalf(e)) : e);
      }
      lsum += p[j];
    }
    return;
  }
  case Route::DirectP: {
    const bool native = spec.operands.v_widening == Widening::Native;
    // FP16 scores: y in FP16 in a tile every row of the row's 64-row group sees whole (the kernel's
    // unmasked arm) while FP16(mul) is finite, else in FP32 (NUMERICS.md §2.3); with the pieces
    // folded onto S, the piecewise classifier's pieces read acc_h directly.
    const bool folded = spec.tile.softmax.pieces_from_scores && in.coeffs.kind == 3;
    const bool fp16_input = spec.tile.softmax.scores_fp16 && j0 + spec.tile.shape.block_n <= in.group_visible &&
                            device::directpHalfMultiplierFits(in.coeffs, mul, folded);
    for (int b0 = j0; b0 < j1; b0 += 32) {
      const int b1 = std::min(j1, b0 + 32);
      // e_b from t - m, not from x: the row max's block must see exactly 0 (NUMERICS.md §2.3).
      float bmax = kNegInf;
      for (int j = b0; j < b1; ++j)
        bmax = std::max(bmax, t[j]);
      if (bmax == kNegInf) {
        block_exp[b0 / 32] = kNoVisibleKey;
        for (int j = b0; j < b1; ++j) {
          p[j] = 0.0f;
          code[j] = 0;
        }
        continue;
      }
      const int eb = device::directpBlockExponent(bmax - m);
      block_exp[b0 / 32] = eb;
      for (int j = b0; j < b1; ++j) {
        const float e_f = static_cast<float>(eb);
        const int c = x[j] == kNegInf            ? 0
                      : fp16_input && folded ? device::directpPiecewiseFoldedCode(in.coeffs, acc[j], mul,
                                                                                 device::directpBias(m, e_f))
                      : fp16_input           ? device::directpClassifyFp16Score(in.coeffs, acc[j], mul, m, e_f)
                                             : device::directpClassify(in.coeffs, acc[j], mul, m, e_f);
        code[j] = static_cast<uint8_t>(c);
        const float mag = formats::kE2M1Magnitude[c];
        // E4m3 feed: exact unless e_b + off < -8, where E4M3's subnormals flush small codes.
        p[j] = native ? std::ldexp(mag, std::max(eb, -127)) : e4m3Round(std::ldexp(mag, eb + off));
        lsum += p[j];
      }
    }
    return;
  }
  }
}

} // namespace

void modelRow(const RowInputs &in, double *o_out, double *lse_out, RowTrace *trace) {
  const AttentionSpec &spec = *in.spec;
  const FedOperand &v = *in.v;
  const int n = in.k->seqlen, dim = v.head_dim, block_n = spec.tile.shape.block_n;
  std::vector<float> acc, t, x(n, kNegInf), p(n, 0.0f);
  std::vector<uint8_t> code(n, 0);
  std::vector<int> block_exp((n + 31) / 32, kNoVisibleKey);
  std::vector<float> o(dim, 0.0f);
  std::vector<double> tile_o(dim);
  const float mul = device::scoreMultiplier(in.score_factor);
  rowScores(in, mul, acc, t);

  float m = kNegInf, l = 0.0f;
  const bool sampled = spec.guard.kind == GuardKind::SampledAnchor;
  // nvfp8 on FP16 scores: every m on the FP16 exponents' grid (halfExponentRowMax)
  const bool half_grid = spec.route == Route::Nvfp8 && spec.tile.softmax.scores_fp16;
  const auto on_grid = [&](float t_max) {
    return half_grid ? device::halfExponentRowMax(t_max, static_cast<float>(spec.operands.p_offset_log2)) : t_max;
  };
  if (sampled)
    m = on_grid(sampledAnchor(in, t));
  if (trace)
    trace->anchor = m;

  for (int j0 = 0; j0 < n; j0 += block_n) {
    const int j1 = std::min(n, j0 + block_n);
    float tmax = kNegInf;
    for (int j = j0; j < j1; ++j)
      tmax = std::max(tmax, t[j]);
    if (tmax != kNegInf) { // a tile of masked keys changes nothing
      float m_new = std::max(m, on_grid(tmax));
      if (sampled)
        m_new = tmax <= m + spec.guard.slack_log2 ? m : on_grid(tmax);
      if (m_new != m) {
        const float r = m == kNegInf ? 0.0f : std::exp2(m - m_new);
        for (float &ov : o)
          ov *= r;
        l *= r;
        m = m_new;
      }
      for (int j = j0; j < j1; ++j)
        x[j] = t[j] == kNegInf ? kNegInf : device::scoreExponent(acc[j], mul, -m);
      double lsum = 0;
      tileP(in, acc, t, mul, m, x, j0, j1, p, code, block_exp, lsum);
      std::fill(tile_o.begin(), tile_o.end(), 0.0);
      for (int j = j0; j < j1; ++j) {
        if (p[j] == 0.0f)
          continue;
        const float *vr = v.row(j);
        for (int d = 0; d < dim; ++d)
          tile_o[d] += static_cast<double>(p[j]) * vr[d];
      }
      // One tile's sum in FP64, added in FP32: the kernel's order within a tile differs, this
      // keeps the model's own rounding out of the comparison.
      for (int d = 0; d < dim; ++d)
        o[d] += static_cast<float>(tile_o[d]);
      l += static_cast<float>(lsum);
    }
    if (trace) {
      trace->tile_m.push_back(m);
      trace->tile_l.push_back(l);
    }
  }

  float lse = kNegInf;
  if (in.visible == 0) {
    std::fill(o.begin(), o.end(), 0.0f);
  } else {
    for (float &ov : o)
      ov = formats::roundToBF16(ov / l * v.scale);
    lse = (m + std::log2(l) - static_cast<float>(lseOffset(spec))) * static_cast<float>(M_LN2);
  }
  for (int d = 0; d < dim; ++d)
    o_out[d] = o[d];
  *lse_out = lse;
  if (trace) {
    trace->acc = std::move(acc);
    trace->t = std::move(t);
    trace->score_mul = mul;
    trace->x = std::move(x);
    trace->p_fed = std::move(p);
    if (spec.route == Route::DirectP) {
      trace->code = std::move(code);
      trace->block_exponent = std::move(block_exp);
    }
    trace->m = m;
    trace->l = l;
    trace->lse = lse;
    trace->o = std::move(o);
  }
}

} // namespace fa4jit::cpu::detail
