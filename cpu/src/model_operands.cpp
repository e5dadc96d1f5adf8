// Operands as each route feeds them to the tensor cores (docs/NUMERICS.md §1, §2.1, §2.3):
// quantization through the host block formats, then the widening the spec chooses.
#include <cmath>

#include "model_internal.h"
#include "fa4jit/codegen/block_formats.h"
#include "fa4jit/codegen/formats.h"

namespace fa4jit::cpu::detail {

namespace {

// Round up to the 128-key granule of the exchange layout of V^T.
int paddedKeys(int seqlen) { return (seqlen + 127) / 128 * 128; }

// V^T of one head: rows = D, columns = keys (the reduction dimension of P V).
formats::MatrixView transposedView(const TensorRef &t, int b, int h, int seqlen, int head_dim) {
  formats::MatrixView m = headView(t, b, h, seqlen, head_dim);
  m.rows = head_dim;
  m.cols = seqlen;
  m.row_stride = t.strides[3];
  m.col_stride = t.strides[2];
  return m;
}

llvm::Error prefixed(const char *name, int b, int h, llvm::Error e) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s (batch %d, head %d): %s", name,
                                 b, h, llvm::toString(std::move(e)).c_str());
}

} // namespace

formats::MatrixView headView(const TensorRef &t, int b, int h, int seqlen, int head_dim) {
  formats::MatrixView m;
  m.data = t.data + b * t.strides[0] + h * t.strides[1];
  m.rows = seqlen;
  m.cols = head_dim;
  m.row_stride = t.strides[2];
  m.col_stride = t.strides[3];
  return m;
}

float e4m3Round(float x) { return formats::e4m3ToFloat(formats::floatToE4M3(x)); }

float softmaxScale(const AttentionSpec &spec) {
  return spec.softmax_scale != 0.0f ? spec.softmax_scale
                                    : static_cast<float>(1.0 / std::sqrt(static_cast<double>(spec.head_dim)));
}

float log2ScoreScale(const AttentionSpec &spec) {
  return static_cast<float>(static_cast<double>(softmaxScale(spec)) * M_LOG2E);
}

float scoreFactor(const AttentionSpec &spec, float q_scale, float k_scale) {
  const float kscale = log2ScoreScale(spec);
  if (spec.route == Route::Bf16)
    return kscale;
  // E4m3 widening pre-multiplied both operands by 2^-shift; 4^shift undoes it (exact).
  const float widen = spec.operands.qk_widening == Widening::E4m3
                          ? std::ldexp(kscale, 2 * spec.operands.qk_widen_shift)
                          : kscale;
  const float g = q_scale * k_scale;
  return g * widen;
}

int lseOffset(const AttentionSpec &spec) {
  if (spec.route == Route::Nvfp8)
    return spec.operands.p_offset_log2;
  if (spec.route == Route::DirectP && spec.operands.v_widening == Widening::E4m3)
    return spec.operands.p_offset_log2;
  return 0;
}

llvm::Expected<FedOperand> feedQK(const AttentionSpec &spec, const TensorRef &t, int b, int h,
                                  int seqlen, int head_dim, const char *name) {
  FedOperand out;
  out.seqlen = seqlen;
  out.head_dim = head_dim;
  out.values.resize(static_cast<std::size_t>(seqlen) * head_dim);
  if (spec.route == Route::Bf16) {
    for (int s = 0; s < seqlen; ++s)
      for (int d = 0; d < head_dim; ++d)
        out.values[static_cast<std::size_t>(s) * head_dim + d] = formats::roundToBF16(t.at(b, h, s, d));
    return out;
  }
  if (spec.operands.qk_format == QkFormat::E4m3) {
    // The stored codes are the fed values (the kernel copies them): E4M3(x / g * 2^-shift).
    auto e = formats::quantizeE4m3Rows(headView(t, b, h, seqlen, head_dim), spec.operands.qk_widen_shift);
    if (!e)
      return prefixed(name, b, h, e.takeError());
    out.scale = e->global_scale;
    for (int s = 0; s < seqlen; ++s)
      for (int d = 0; d < head_dim; ++d)
        out.values[static_cast<std::size_t>(s) * head_dim + d] = e->code(s, d);
    return out;
  }
  auto q = formats::quantizeNvfp4(headView(t, b, h, seqlen, head_dim));
  if (!q)
    return prefixed(name, b, h, q.takeError());
  out.scale = q->global_scale;
  const bool to_e4m3 = spec.operands.qk_widening == Widening::E4m3;
  const float shift = std::ldexp(1.0f, -spec.operands.qk_widen_shift);
  for (int s = 0; s < seqlen; ++s)
    for (int d = 0; d < head_dim; ++d) {
      // E2M1 x UE4M3 is exact in FP32 (and BF16); E4M3 keeps 4 significant bits: one rounding.
      const float v = formats::e2m1ToFloat(q->code(s, d)) * q->blockScale(s, d / 16);
      out.values[static_cast<std::size_t>(s) * head_dim + d] = to_e4m3 ? e4m3Round(v * shift) : v;
    }
  return out;
}

llvm::Expected<FedOperand> feedV(const AttentionSpec &spec, const TensorRef &v, int b, int h,
                                 int seqlen, int head_dim) {
  FedOperand out;
  out.seqlen = seqlen;
  out.head_dim = head_dim;
  out.values.resize(static_cast<std::size_t>(seqlen) * head_dim);
  auto at = [&](int s, int d) -> float & { return out.values[static_cast<std::size_t>(s) * head_dim + d]; };
  switch (spec.route) {
  case Route::Bf16:
    for (int s = 0; s < seqlen; ++s)
      for (int d = 0; d < head_dim; ++d)
        at(s, d) = formats::roundToBF16(v.at(b, h, s, d));
    return out;
  case Route::Nvfp8: {
    auto q = formats::quantizeFp8PerTensor(transposedView(v, b, h, seqlen, head_dim), paddedKeys(seqlen));
    if (!q)
      return prefixed("V", b, h, q.takeError());
    out.scale = q->scale;
    for (int s = 0; s < seqlen; ++s)
      for (int d = 0; d < head_dim; ++d)
        at(s, d) = formats::e4m3ToFloat(q->payload[static_cast<std::size_t>(d) * q->padded_cols + s]);
    return out;
  }
  case Route::DirectP: {
    auto q = formats::quantizeMxfp4(transposedView(v, b, h, seqlen, head_dim), paddedKeys(seqlen));
    if (!q)
      return prefixed("V", b, h, q.takeError());
    if (spec.operands.v_widening == Widening::Native) {
      for (int s = 0; s < seqlen; ++s)
        for (int d = 0; d < head_dim; ++d)
          at(s, d) = q->value(d, s);
      return out;
    }
    // E4M3 has 4 binades fewer than UE8M0: shift so the largest block lands at the top of
    // E4M3's range (6 * 2^6 = 384 <= 448); the epilogue multiplies 2^v_shift back.
    const int v_shift = q->maxBlockExponent() - 6;
    out.scale = std::ldexp(1.0f, v_shift);
    for (int s = 0; s < seqlen; ++s)
      for (int d = 0; d < head_dim; ++d) {
        const int e = q->blockExponent(d, s / 32) - v_shift;
        at(s, d) = e4m3Round(std::ldexp(formats::e2m1ToFloat(q->code(d, s)), e));
      }
    return out;
  }
  }
  return out;
}

} // namespace fa4jit::cpu::detail
