#pragma once
// Private to the engine: how a workspace buffer grows, and a quantized tensor's buffers as an operand.
#include "fa4jit/runtime/device_objects.h"
#include "fa4jit/runtime/engine.h"

#include "engine/workspace_layout.h"
#include "fa4jit/quantize/params.cuh"

namespace fa4jit::engine_detail {

// Grows `buffer` to at least `bytes` (its old contents are not needed): kept when it already holds
// enough, so a steady stream of calls allocates nothing. `zeroed`: a grown buffer starts as zeros
// (a synchronous fill, done once, before any stream's launch).
inline llvm::Error ensureBytes(runtime::CudaDriver &driver, runtime::DeviceBuffer &buffer, std::size_t bytes,
                               bool zeroed = false) {
  if (buffer.size() >= bytes)
    return llvm::Error::success();
  buffer = runtime::DeviceBuffer{}; // free first
  auto grown = runtime::DeviceBuffer::allocate(driver, bytes);
  if (!grown)
    return grown.takeError();
  buffer = std::move(*grown);
  return zeroed ? buffer.fill(0) : llvm::Error::success();
}

// A QuantizedTensor's buffers as the operand the kernels take.
inline QuantizedOperand operandOf(const QuantizedTensor &t) {
  QuantizedOperand o;
  o.format = t.format;
  o.batch = t.batch, o.heads = t.heads, o.seqlen = t.seqlen, o.head_dim = t.head_dim;
  o.payload = t.payload.address(), o.scales = t.scales.address(), o.head_scalar = t.head_scalar.address();
  o.nonfinite_rows = t.nonfinite_rows.address(), o.amax_partial = t.amax_partial.address();
  // (after the partials, not known to be zero: a caller's memory, or a launch that failed)
  o.sync = o.amax_partial + amaxPartialBytes(t.batch * t.heads, t.seqlen);
  o.code_shift = t.code_shift;
  return o;
}

// Strides of one quantized operand's payload and scales, as the kernels' params want them (bytes).
struct QuantStrides {
  std::int64_t batch, head, row, sf_batch, sf_head;
};
static_assert(static_cast<int>(QuantFormat::E4m3Rows) == device::quantize::kFormatE4m3Rows &&
                  static_cast<int>(QuantFormat::Nvfp4) == 0 && static_cast<int>(QuantFormat::Mxfp4) == 1 &&
                  static_cast<int>(QuantFormat::Fp8PerHead) == 2,
              "the quantizer's format codes (quantize/params.cuh) are fa4jit::QuantFormat's");
inline QuantStrides quantStrides(const QuantizedOperand &t) {
  namespace dq = device::quantize;
  const int f = static_cast<int>(t.format);
  const std::int64_t head = dq::quantizePayloadBytesPerHead(f, t.head_dim, t.seqlen);
  const std::int64_t row = t.format == QuantFormat::Nvfp4      ? t.head_dim / 2
                           : t.format == QuantFormat::E4m3Rows ? t.head_dim
                           : t.format == QuantFormat::Mxfp4    ? dq::quantizePaddedKeys(t.seqlen) / 2
                                                               : dq::quantizePaddedKeys(t.seqlen);
  const std::int64_t sf = dq::quantizeScaleBytesPerHead(f, t.head_dim, t.seqlen);
  return {head * t.heads, head, row, sf * t.heads, sf};
}

} // namespace fa4jit::engine_detail
