// The paged KV cache's host model (fa4jit/cpu/paged.h): the append's encoding through the kernel's
// own functions (templates/fa4jit/paged/params.cuh), decode's arithmetic, and the FP64 reference.
#include "fa4jit/cpu/paged.h"

#include "fa4jit/formats.cuh"
#include "fa4jit/paged/params.cuh"

#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <limits>

namespace fa4jit::cpu {

namespace dp = fa4jit::device::paged;
using namespace fa4jit::device;

namespace {
llvm::Error fail(const std::string &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s", message.c_str());
}
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

float bf16Round(float x) { return bf16ToFloat(floatToBF16(x)); }

// K element d of a row without the row scale: E2M1 x s_b, exact in FP32 (and in BF16).
float kUnscaled(const PagedCache &c, std::int64_t row, int d) {
  const std::uint8_t byte = c.k_codes[row * (c.head_dim / 2) + d / 2];
  const float s = ue4m3ToFloat(c.k_block_scales[row * (c.head_dim / 16) + d / 16]);
  return e2m1ToFloat(static_cast<std::uint8_t>(d % 2 ? byte >> 4 : byte & 0xF)) * s;
}
} // namespace

PagedCache PagedCache::create(int pages, int kv_heads, int page_size, int head_dim, KvValueFormat value_format) {
  PagedCache c;
  c.pages = pages, c.kv_heads = kv_heads, c.page_size = page_size, c.head_dim = head_dim;
  c.value_format = value_format;
  const std::size_t rows = static_cast<std::size_t>(pages) * kv_heads * page_size;
  const bool mx = value_format == KvValueFormat::Mxfp4;
  c.k_codes.assign(rows * head_dim / 2, 0);
  c.k_block_scales.assign(rows * head_dim / 16, 0);
  c.v_codes.assign(mx ? rows * head_dim / 2 : rows * head_dim, 0);
  c.v_block_scales.assign(mx ? rows * head_dim / 32 : 0, 0);
  c.k_row_scales.assign(rows, 0.0f);
  c.v_row_scales.assign(mx ? 0 : rows, 0.0f);
  return c;
}

float PagedCache::vUnscaled(std::int64_t row, int d) const {
  if (value_format == KvValueFormat::Fp8)
    return e4m3ToFloat(v_codes[row * head_dim + d]);
  const std::uint8_t byte = v_codes[row * (head_dim / 2) + d / 2];
  const std::uint8_t scale = v_block_scales[row * (head_dim / 32) + d / 32];
  // (the NaN byte reads as 0: the row's NaN is vRowFactor's)
  const float pow2 = scale == dp::kMxNaNScale ? 0.0f : exp2Int(ue8m0Exponent(scale));
  return e2m1ToFloat(static_cast<std::uint8_t>(d % 2 ? byte >> 4 : byte & 0xF)) * pow2;
}

float PagedCache::vRowFactor(std::int64_t row) const {
  if (value_format == KvValueFormat::Fp8)
    return v_row_scales[row];
  return v_block_scales[row * (head_dim / 32)] == dp::kMxNaNScale ? kNaN : 1.0f;
}

void PagedCache::dequantizeK(std::int64_t row, float *out) const {
  const float g = k_row_scales[row];
  for (int d = 0; d < head_dim; ++d)
    out[d] = kUnscaled(*this, row, d) * g;
}

void PagedCache::dequantizeV(std::int64_t row, float *out) const {
  const float factor = vRowFactor(row);
  for (int d = 0; d < head_dim; ++d)
    out[d] = vUnscaled(row, d) * factor;
}

llvm::Error appendModel(PagedCache &c, llvm::ArrayRef<float> k, llvm::ArrayRef<float> v,
                        llvm::ArrayRef<std::int64_t> slots) {
  const int D = c.head_dim, H = c.kv_heads;
  const std::size_t row_values = static_cast<std::size_t>(H) * D;
  if (k.size() != slots.size() * row_values || v.size() != k.size())
    return fail(llvm::formatv("append model: k and v need {0} tokens x {1} heads x {2} values", slots.size(), H, D));
  const std::int64_t capacity = static_cast<std::int64_t>(c.pages) * c.page_size;
  for (std::size_t t = 0; t < slots.size(); ++t) {
    const std::int64_t slot = slots[t];
    if (slot < 0 || slot >= capacity)
      continue;
    for (int h = 0; h < H; ++h) {
      const float *kx = k.data() + t * row_values + h * D, *vx = v.data() + t * row_values + h * D;
      std::vector<float> kr(kx, kx + D), vr(vx, vx + D);
      bool k_bad = false, v_bad = false;
      float k_amax = 0.0f, v_amax = 0.0f;
      for (int d = 0; d < D; ++d) {
        if (!dp::isFiniteValue(kr[d]))
          k_bad = true, kr[d] = 0.0f;
        if (!dp::isFiniteValue(vr[d]))
          v_bad = true, vr[d] = 0.0f;
        k_amax = std::fmax(k_amax, std::fabs(kr[d]));
        v_amax = std::fmax(v_amax, std::fabs(vr[d]));
      }
      const float g = dp::kRowScale(k_amax), s_v = dp::vRowScale(v_amax);
      const std::int64_t row = c.row(slot / c.page_size, h, static_cast<int>(slot % c.page_size));
      for (int blk = 0; blk < D / 16; ++blk) {
        float x[16], amax_b = 0.0f;
        for (int i = 0; i < 16; ++i)
          x[i] = kr[blk * 16 + i], amax_b = std::fmax(amax_b, std::fabs(x[i]));
        const std::uint8_t s = dp::kBlockScale(amax_b, g);
        std::uint8_t codes[8];
        dp::encodeKBlock<16>(x, s, g, codes);
        for (int i = 0; i < 8; ++i)
          c.k_codes[row * (D / 2) + blk * 8 + i] = k_bad ? 0 : codes[i];
        c.k_block_scales[row * (D / 16) + blk] = k_bad ? 0 : s;
      }
      c.k_row_scales[row] = k_bad ? kNaN : g;
      if (c.value_format == KvValueFormat::Mxfp4) {
        for (int blk = 0; blk < D / 32; ++blk) {
          float amax_b = 0.0f;
          for (int i = 0; i < 32; ++i)
            amax_b = std::fmax(amax_b, std::fabs(vr[blk * 32 + i]));
          const int e = fa4jit::device::quantize::mxBlockExponent(amax_b);
          const float inverse = exp2Int(-e);
          for (int i = 0; i < 16; ++i)
            c.v_codes[row * (D / 2) + blk * 16 + i] =
                v_bad ? 0 : dp::encodeVMxPair(vr[blk * 32 + 2 * i], vr[blk * 32 + 2 * i + 1], inverse);
          c.v_block_scales[row * (D / 32) + blk] = v_bad ? dp::kMxNaNScale : exponentToUE8M0(e);
        }
        continue;
      }
      const bool reciprocal = quotientByReciprocalOk(s_v);
      const float r = reciprocal ? 1.0f / s_v : 0.0f;
      for (int d = 0; d < D; ++d)
        c.v_codes[row * D + d] = v_bad ? 0 : dp::encodeV(vr[d], s_v, r, reciprocal);
      c.v_row_scales[row] = v_bad ? kNaN : s_v;
    }
  }
  return llvm::Error::success();
}

namespace {

// What both decode functions check, and each sequence's validity (length within the block table,
// every page it reads inside the cache).
llvm::Error checkDecode(const PagedCache &c, const DecodeProblem &p, llvm::ArrayRef<float> q,
                        std::vector<bool> &sequence_ok) {
  if (p.q_heads <= 0 || c.kv_heads <= 0 || p.q_heads % c.kv_heads != 0)
    return fail(llvm::formatv("decode model: q_heads {0} is not a multiple of kv_heads {1}", p.q_heads, c.kv_heads));
  if (q.size() != static_cast<std::size_t>(p.batch) * p.q_heads * p.queries * c.head_dim)
    return fail("decode model: q is not [batch, q_heads, queries, head_dim]");
  if (p.seq_lens.size() != static_cast<std::size_t>(p.batch) ||
      p.block_table.size() != static_cast<std::size_t>(p.batch) * p.block_table_stride)
    return fail("decode model: seq_lens is not [batch] or block_table not [batch, block_table_stride]");
  sequence_ok.assign(p.batch, true);
  for (int b = 0; b < p.batch; ++b) {
    const std::int64_t len = p.seq_lens[b];
    if (len < 0 || len > static_cast<std::int64_t>(p.block_table_stride) * c.page_size) {
      sequence_ok[b] = false;
      continue;
    }
    for (std::int64_t blk = 0; blk * c.page_size < len; ++blk) {
      const std::int32_t page = p.block_table[b * p.block_table_stride + blk];
      if (page < 0 || page >= c.pages)
        sequence_ok[b] = false;
    }
  }
  return llvm::Error::success();
}

float scoreScaleOf(const PagedCache &c, const DecodeProblem &p) {
  const double scale = p.softmax_scale != 0.0f ? p.softmax_scale : 1.0 / std::sqrt(static_cast<double>(c.head_dim));
  return static_cast<float>(scale * M_LOG2E);
}

// The cache row of token j of sequence b.
std::int64_t tokenRow(const PagedCache &c, const DecodeProblem &p, int b, int kv_head, std::int64_t j) {
  const std::int32_t page = p.block_table[b * p.block_table_stride + j / c.page_size];
  return c.row(page, kv_head, static_cast<int>(j % c.page_size));
}

} // namespace

llvm::Error decodeModel(const PagedCache &c, const DecodeProblem &p, llvm::ArrayRef<float> q, std::vector<float> &o,
                        std::vector<float> &lse) {
  std::vector<bool> ok;
  if (auto e = checkDecode(c, p, q, ok))
    return e;
  const int D = c.head_dim, group = p.q_heads / c.kv_heads;
  const float score_scale = scoreScaleOf(c, p);
  o.assign(q.size(), 0.0f);
  lse.assign(q.size() / D, 0.0f);
  for (int b = 0; b < p.batch; ++b)
    for (int h = 0; h < p.q_heads; ++h)
      for (int i = 0; i < p.queries; ++i) {
        const std::int64_t row = (static_cast<std::int64_t>(b) * p.q_heads + h) * p.queries + i;
        float *out = o.data() + row * D;
        if (!ok[b]) {
          std::fill(out, out + D, kNaN);
          lse[row] = kNaN;
          continue;
        }
        const float *qr = q.data() + row * D;
        const std::int64_t visible = std::min<std::int64_t>(p.seq_lens[b], std::int64_t(i) + p.seq_lens[b] - p.queries + 1);
        std::vector<float> t(std::max<std::int64_t>(visible, 0));
        float m = kNegInf;
        bool any_nan = false;
        for (std::int64_t j = 0; j < visible; ++j) {
          const std::int64_t r = tokenRow(c, p, b, h / group, j);
          // (K without g, E2M1 x s_b, is exact in BF16 and so in the tensor core's products)
          double acc = 0.0;
          for (int d = 0; d < D; ++d)
            acc += static_cast<double>(qr[d]) * kUnscaled(c, r, d);
          t[j] = static_cast<float>(acc) * (c.k_row_scales[r] * score_scale);
          any_nan = any_nan || std::isnan(t[j]);
          m = std::fmax(m, t[j]);
        }
        if (any_nan) { // (a key row that held a NaN or an Inf)
          std::fill(out, out + D, kNaN);
          lse[row] = kNaN;
          continue;
        }
        if (visible <= 0) {
          lse[row] = kNegInf;
          continue;
        }
        double l = 0.0;
        std::vector<double> acc(D, 0.0);
        for (std::int64_t j = 0; j < visible; ++j) {
          const std::int64_t r = tokenRow(c, p, b, h / group, j);
          const float pj = static_cast<float>(std::exp2(static_cast<double>(t[j] - m)));
          l += pj;
          const float fed = pj * c.vRowFactor(r);
          const float hi = bf16Round(fed), lo = bf16Round(fed - hi);
          for (int d = 0; d < D; ++d)
            acc[d] += (static_cast<double>(hi) + lo) * c.vUnscaled(r, d);
        }
        const float lf = static_cast<float>(l);
        for (int d = 0; d < D; ++d)
          out[d] = static_cast<float>(acc[d] / lf);
        lse[row] = (m + std::log2(lf)) * 0.6931471805599453f;
      }
  return llvm::Error::success();
}

llvm::Error decodeReference(const PagedCache &c, const DecodeProblem &p, llvm::ArrayRef<float> q,
                            std::vector<double> &o, std::vector<double> &lse) {
  std::vector<bool> ok;
  if (auto e = checkDecode(c, p, q, ok))
    return e;
  const int D = c.head_dim, group = p.q_heads / c.kv_heads;
  const double scale = p.softmax_scale != 0.0f ? p.softmax_scale : 1.0 / std::sqrt(static_cast<double>(D));
  o.assign(q.size(), 0.0);
  lse.assign(q.size() / D, 0.0);
  std::vector<float> k(D), v(D);
  for (int b = 0; b < p.batch; ++b)
    for (int h = 0; h < p.q_heads; ++h)
      for (int i = 0; i < p.queries; ++i) {
        const std::int64_t row = (static_cast<std::int64_t>(b) * p.q_heads + h) * p.queries + i;
        double *out = o.data() + row * D;
        if (!ok[b]) {
          std::fill(out, out + D, std::nan(""));
          lse[row] = std::nan("");
          continue;
        }
        const std::int64_t visible = std::min<std::int64_t>(p.seq_lens[b], std::int64_t(i) + p.seq_lens[b] - p.queries + 1);
        if (visible <= 0) {
          lse[row] = -std::numeric_limits<double>::infinity();
          continue;
        }
        std::vector<double> s(visible);
        double m = -std::numeric_limits<double>::infinity();
        for (std::int64_t j = 0; j < visible; ++j) {
          c.dequantizeK(tokenRow(c, p, b, h / group, j), k.data());
          double acc = 0.0;
          for (int d = 0; d < D; ++d)
            acc += static_cast<double>(q[row * D + d]) * k[d];
          s[j] = acc * scale;
          m = std::fmax(m, s[j]);
        }
        double l = 0.0;
        for (std::int64_t j = 0; j < visible; ++j) {
          const double w = std::exp(s[j] - m);
          l += w;
          c.dequantizeV(tokenRow(c, p, b, h / group, j), v.data());
          for (int d = 0; d < D; ++d)
            out[d] += w * v[d];
        }
        for (int d = 0; d < D; ++d)
          out[d] /= l;
        lse[row] = m + std::log(l);
      }
  return llvm::Error::success();
}

} // namespace fa4jit::cpu
