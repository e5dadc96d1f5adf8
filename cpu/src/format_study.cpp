// The operand formats on their own (format_study.h).
#include "fa4jit/cpu/format_study.h"

#include "fa4jit/codegen/block_formats.h"
#include "fa4jit/codegen/formats.h"

#include "parallel.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace fa4jit::cpu {

namespace {

llvm::Error fail(const std::string &m) { return llvm::createStringError(llvm::inconvertibleErrorCode(), m); }

constexpr float kE4m3Max = 448.0f;
constexpr int kMxBlock = 32;
constexpr int kPOffsetLog2 = 8; // E4M3 P fed as P * 2^8 (docs/NUMERICS.md §2.3, nvfp8)

float e4m3Round(float x) { return formats::e4m3ToFloat(formats::floatToE4M3(x)); }

// E4M3 of x / scale, times scale (0 stays 0; saturating at 448).
float e4m3Scaled(float x, float scale) {
  if (scale == 0.0f)
    return 0.0f;
  const float y = std::clamp(x / scale, -kE4m3Max, kE4m3Max);
  return e4m3Round(y) * scale;
}

// The decoded matrix, row-major [rows, cols].
std::vector<float> e4m3PerRow(const float *data, int rows, int cols) {
  std::vector<float> out(static_cast<std::size_t>(rows) * cols);
  for (int r = 0; r < rows; ++r) {
    float amax = 0;
    for (int c = 0; c < cols; ++c)
      amax = std::max(amax, std::fabs(data[std::size_t(r) * cols + c]));
    const float s = amax / kE4m3Max;
    for (int c = 0; c < cols; ++c)
      out[std::size_t(r) * cols + c] = e4m3Scaled(data[std::size_t(r) * cols + c], s);
  }
  return out;
}

// E4M3 per 32 elements with the smallest power-of-two scale that keeps the block's maximum at or
// below 448: 2^ceil(log2(amax / 448)) (no element saturates).
std::vector<float> mxfp8(const float *data, int rows, int cols) {
  std::vector<float> out(static_cast<std::size_t>(rows) * cols);
  for (int r = 0; r < rows; ++r)
    for (int c0 = 0; c0 < cols; c0 += kMxBlock) {
      const int c1 = std::min(cols, c0 + kMxBlock);
      float amax = 0;
      for (int c = c0; c < c1; ++c)
        amax = std::max(amax, std::fabs(data[std::size_t(r) * cols + c]));
      float s = 0.0f;
      if (amax > 0) {
        int e = std::ilogb(amax / kE4m3Max);
        if (std::ldexp(1.0f, e) * kE4m3Max < amax)
          ++e;
        s = std::ldexp(1.0f, std::max(-127, e));
      }
      for (int c = c0; c < c1; ++c)
        out[std::size_t(r) * cols + c] = e4m3Scaled(data[std::size_t(r) * cols + c], s);
    }
  return out;
}

// P (one row's weights over `keys` keys) as the P/V format feeds it.
void quantizeP(PvFormat f, std::vector<double> &p, int keys) {
  if (f == PvFormat::E4m3) {
    for (int j = 0; j < keys; ++j)
      p[j] = std::ldexp(double(e4m3Round(std::ldexp(float(p[j]), kPOffsetLog2))), -kPOffsetLog2);
    return;
  }
  for (int j0 = 0; j0 < keys; j0 += kMxBlock) {
    const int j1 = std::min(keys, j0 + kMxBlock);
    double amax = 0;
    for (int j = j0; j < j1; ++j)
      amax = std::max(amax, p[j]);
    if (amax == 0)
      continue;
    const int e = std::max(-127, std::ilogb(amax) - 2);
    for (int j = j0; j < j1; ++j)
      p[j] = std::ldexp(double(formats::e2m1ToFloat(formats::floatToE2M1(float(std::ldexp(p[j], -e))))), e);
  }
}

// One head's [S, D] matrix of a [B, H, S, D] tensor, copied contiguous.
std::vector<float> headMatrix(const TensorRef &t, int b, int h, int rows, int cols) {
  std::vector<float> m(static_cast<std::size_t>(rows) * cols);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c)
      m[std::size_t(r) * cols + c] = t.at(b, h, r, c);
  return m;
}

// The decoded [rows, cols] matrix of a quantized one: value(r, c), or value(c, r) for a matrix that
// was quantized transposed (V^T).
template <class Quantized>
std::vector<float> decoded(const Quantized &q, int rows, int cols, bool transposed = false) {
  std::vector<float> out(static_cast<std::size_t>(rows) * cols);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c)
      out[std::size_t(r) * cols + c] = transposed ? q.value(c, r) : q.value(r, c);
  return out;
}

llvm::Expected<std::vector<float>> roundTripV(PvFormat f, const std::vector<float> &v, int keys, int dims) {
  if (f == PvFormat::E4m3) {
    formats::MatrixView view{v.data(), keys, dims, dims, 1};
    auto q = formats::quantizeFp8PerTensor(view, dims);
    if (!q)
      return q.takeError();
    return decoded(*q, keys, dims);
  }
  // V^T: rows = head dims, columns = keys (blocks of 32 keys), padded to a multiple of 32.
  formats::MatrixView vt{v.data(), dims, keys, 1, dims};
  auto q = formats::quantizeMxfp4(vt, (keys + kMxBlock - 1) / kMxBlock * kMxBlock);
  if (!q)
    return q.takeError();
  return decoded(*q, keys, dims, /*transposed=*/true);
}

} // namespace

const char *toString(StudyQkFormat f) {
  switch (f) {
  case StudyQkFormat::Nvfp4: return "nvfp4";
  case StudyQkFormat::Mxfp4: return "mxfp4";
  case StudyQkFormat::E4m3Head: return "e4m3-head";
  case StudyQkFormat::E4m3Row: return "e4m3-row";
  case StudyQkFormat::Mxfp8: return "mxfp8";
  }
  return "?";
}

const char *toString(PvFormat f) { return f == PvFormat::Mxfp4 ? "mxfp4" : "e4m3"; }

std::string toString(const FormatPair &pair) { return std::string(toString(pair.qk)) + " / " + toString(pair.pv); }

std::vector<FormatPair> allFormatPairs() {
  std::vector<FormatPair> out;
  for (StudyQkFormat qk : {StudyQkFormat::Nvfp4, StudyQkFormat::Mxfp4, StudyQkFormat::E4m3Head, StudyQkFormat::E4m3Row,
                           StudyQkFormat::Mxfp8})
    for (PvFormat pv : {PvFormat::Mxfp4, PvFormat::E4m3})
      out.push_back({qk, pv});
  return out;
}

llvm::Expected<std::vector<float>> roundTripQk(StudyQkFormat format, const float *data, int rows, int cols) {
  for (std::size_t i = 0; i < std::size_t(rows) * cols; ++i)
    if (!std::isfinite(data[i]))
      return fail("format study: element " + std::to_string(i) + " is not finite");
  formats::MatrixView view{data, rows, cols, cols, 1};
  switch (format) {
  case StudyQkFormat::Nvfp4: {
    auto q = formats::quantizeNvfp4(view);
    if (!q)
      return q.takeError();
    return decoded(*q, rows, cols);
  }
  case StudyQkFormat::Mxfp4: {
    auto q = formats::quantizeMxfp4(view, cols);
    if (!q)
      return q.takeError();
    return decoded(*q, rows, cols);
  }
  case StudyQkFormat::E4m3Head: {
    auto q = formats::quantizeE4m3Rows(view, 7);
    if (!q)
      return q.takeError();
    return decoded(*q, rows, cols);
  }
  case StudyQkFormat::E4m3Row:
    return e4m3PerRow(data, rows, cols);
  case StudyQkFormat::Mxfp8:
    if (cols % kMxBlock)
      return fail("format study: mxfp8 needs a multiple of 32 columns, got " + std::to_string(cols));
    return mxfp8(data, rows, cols);
  }
  return fail("format study: unknown Q/K format");
}

llvm::Expected<AttentionResult> formatStudyAttention(const FormatPair &formats, const AttentionProblem &p,
                                                     const ReferenceOptions &options) {
  if (llvm::Error e = validateProblem(p, options.selection))
    return e;
  const AttentionShape &s = p.shape;
  AttentionResult out;
  out.shape = s;
  out.rows = options.selection.rows;
  if (out.rows.empty())
    for (int r = 0; r < s.seqlen_q; ++r)
      out.rows.push_back(r);
  const int R = static_cast<int>(out.rows.size()), D = s.head_dim;
  out.o.assign(std::size_t(s.batch) * s.heads_q * R * D, 0.0);
  out.lse.assign(std::size_t(s.batch) * s.heads_q * R, 0.0);
  // Operands per head, quantized once.
  std::vector<std::vector<float>> q(std::size_t(s.batch) * s.heads_q), k(std::size_t(s.batch) * s.heads_kv),
      v(std::size_t(s.batch) * s.heads_kv);
  for (int b = 0; b < s.batch; ++b) {
    for (int h = 0; h < s.heads_q; ++h) {
      auto m = roundTripQk(formats.qk, headMatrix(p.q, b, h, s.seqlen_q, D).data(), s.seqlen_q, D);
      if (!m)
        return m.takeError();
      q[std::size_t(b) * s.heads_q + h] = std::move(*m);
    }
    for (int h = 0; h < s.heads_kv; ++h) {
      auto mk = roundTripQk(formats.qk, headMatrix(p.k, b, h, s.seqlen_k, D).data(), s.seqlen_k, D);
      if (!mk)
        return mk.takeError();
      k[std::size_t(b) * s.heads_kv + h] = std::move(*mk);
      auto mv = roundTripV(formats.pv, headMatrix(p.v, b, h, s.seqlen_k, D), s.seqlen_k, D);
      if (!mv)
        return mv.takeError();
      v[std::size_t(b) * s.heads_kv + h] = std::move(*mv);
    }
  }
  const double scale = options.scale(D);
  const int units = s.batch * s.heads_q * R;
  parallelFor(units, options.selection.threads, [&](int u) {
    const int r = u % R, bh = u / R, b = bh / s.heads_q, h = bh % s.heads_q;
    const int row = out.rows[std::size_t(r)], kvh = s.kvHead(h);
    const float *qr = q[std::size_t(bh)].data() + std::size_t(row) * D;
    const std::vector<float> &kk = k[std::size_t(b) * s.heads_kv + kvh], &vv = v[std::size_t(b) * s.heads_kv + kvh];
    const int visible = options.causal ? causalVisibleKeys(row, s.seqlen_q, s.seqlen_k) : s.seqlen_k;
    double *o = out.o.data() + std::size_t(u) * D;
    if (visible == 0) {
      out.lse[std::size_t(u)] = -std::numeric_limits<double>::infinity();
      return;
    }
    std::vector<double> w(static_cast<std::size_t>(visible));
    double mx = -std::numeric_limits<double>::infinity();
    for (int j = 0; j < visible; ++j) {
      double acc = 0;
      for (int d = 0; d < D; ++d)
        acc += double(qr[d]) * kk[std::size_t(j) * D + d];
      w[std::size_t(j)] = acc * scale;
      mx = std::max(mx, w[std::size_t(j)]);
    }
    double exact_sum = 0;
    for (double &x : w) {
      x = std::exp(x - mx);
      exact_sum += x;
    }
    out.lse[std::size_t(u)] = mx + std::log(exact_sum);
    quantizeP(formats.pv, w, visible);
    double l = 0;
    for (int j = 0; j < visible; ++j) {
      l += w[std::size_t(j)];
      for (int d = 0; d < D; ++d)
        o[d] += w[std::size_t(j)] * vv[std::size_t(j) * D + d];
    }
    for (int d = 0; d < D; ++d)
      o[d] = l > 0 ? o[d] / l : 0.0;
  });
  return out;
}

} // namespace fa4jit::cpu
