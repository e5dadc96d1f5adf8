// Engine::quantize: the two-pass GPU quantizer (per-head amax, then encode) of
// templates/fa4jit/quantize, into the exchange layouts of docs/NUMERICS.md §1.
#include "fa4jit/runtime/engine.h"

#include "fa4jit/codegen/heuristics.h"
#include "fa4jit/quantize/params.cuh"
#include "fa4jit/runtime/forward_validate.h"

#include "engine/workspace_buffers.h"
#include "toolchain/driver_api.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>

namespace fa4jit {

namespace {
llvm::Error fail(const std::string &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}
} // namespace

llvm::Expected<QuantizedTensor> Engine::quantize(const TensorDesc &x, QuantFormat format, const char *what,
                                                 void *stream) {
  QuantizedTensor out;
  runtime::DeviceBuffer amax_partial, nonfinite;
  if (auto err = quantizeInto(x, format, what, stream, out, amax_partial, nonfinite))
    return err;
  return out;
}

namespace {
// (a quantizer's buffer is never empty: a 0-byte tensor part still gets a valid address)
llvm::Error reserve(runtime::CudaDriver &driver, runtime::DeviceBuffer &buffer, std::size_t bytes) {
  return engine_detail::ensureBytes(driver, buffer, std::max<std::size_t>(bytes, 16));
}
} // namespace

llvm::Error Engine::quantizeInto(const TensorDesc &x, QuantFormat format, const char *what, void *stream,
                                 QuantizedTensor &out, runtime::DeviceBuffer &amax_partial,
                                 runtime::DeviceBuffer &nonfinite) {
  namespace dq = device::quantize;
  if (format == QuantFormat::Bf16)
    return fail(llvm::formatv("{0}: bf16 is not a quantized format", what));
  if (x.dtype != DType::BF16 && x.dtype != DType::F32)
    return fail(llvm::formatv("{0}: quantizer input must be bf16 or f32", what));
  if (auto err = runtime::validateTensor(x, what, x.dtype))
    return err;
  if (auto err = checkTensorMemory(x, what))
    return err;
  const int B = static_cast<int>(x.shape[0]), H = static_cast<int>(x.shape[1]);
  const int S = static_cast<int>(x.shape[2]), D = static_cast<int>(x.shape[3]);
  if (B * H > 65535)
    return fail(llvm::formatv("{0}: batch x heads = {1} exceeds 65535", what, B * H));

  const KernelSpec spec = defaultQuantizeSpec(format, D, target_, x.dtype == DType::F32);
  auto compiled = jit_->get(spec);
  if (!compiled)
    return compiled.takeError();
  const auto &entries = (*compiled)->emitted.entries;
  if (entries.size() != 2)
    return fail(llvm::formatv("quantizer {0} has {1} entry points, expected 2", (*compiled)->emitted.name,
                              entries.size()));
  auto amaxKernel = kernel(spec, entries[0].name);
  if (!amaxKernel)
    return amaxKernel.takeError();
  auto encodeKernel = kernel(spec, entries[1].name);
  if (!encodeKernel)
    return encodeKernel.takeError();

  const int f = static_cast<int>(format);
  out.format = format;
  out.batch = B, out.heads = H, out.seqlen = S, out.head_dim = D;
  // Buffers that already hold enough are reused: a steady stream of calls allocates nothing.
  const int chunks = dq::quantizeDefaultAmaxChunks(B, H, S);
  if (auto err = reserve(driver_, out.payload, std::size_t(B) * H * dq::quantizePayloadBytesPerHead(f, D, S)))
    return err;
  if (auto err = reserve(driver_, out.scales, std::size_t(B) * H * dq::quantizeScaleBytesPerHead(f, D, S)))
    return err;
  if (auto err = reserve(driver_, out.head_scalar, std::size_t(B) * H * 4))
    return err;
  if (auto err = reserve(driver_, amax_partial, std::size_t(B) * H * chunks * 4))
    return err;
  if (auto err = reserve(driver_, nonfinite, 4))
    return err;
  // (on the caller's stream, ordered before the passes that may set it)
  if (auto err = driver_.check(driver_.api().cuMemsetD8Async(nonfinite.address(), 0, 4,
                                                             static_cast<CUstream>(stream)),
                               "cuMemsetD8Async"))
    return err;

  dq::QuantizeParams p{};
  p.x = x.data;
  p.payload = out.payload.address();
  p.scales = format == QuantFormat::Fp8PerHead ? 0 : out.scales.address();
  p.head_scalar = out.head_scalar.address();
  p.amax_partial = amax_partial.address();
  p.nonfinite = nonfinite.address();
  p.x_batch_stride = x.stride[0], p.x_head_stride = x.stride[1], p.x_row_stride = x.stride[2];
  p.batch = B, p.heads = H, p.seqlen = S, p.amax_chunks = chunks;
  void *args[] = {&p};

  runtime::LaunchConfig amaxLaunch;
  amaxLaunch.grid = {unsigned(chunks), unsigned(B * H), 1};
  amaxLaunch.block = {unsigned(entries[0].threads), 1, 1};
  amaxLaunch.stream = stream;
  if (auto err = amaxKernel->launch(amaxLaunch, args))
    return err;
  const dq::Grid3 g = dq::quantizeEncodeGrid(f, D, entries[1].threads, B, H, S);
  runtime::LaunchConfig encodeLaunch;
  encodeLaunch.grid = {unsigned(g.x), unsigned(g.y), unsigned(g.z)};
  encodeLaunch.block = {unsigned(entries[1].threads), 1, 1};
  encodeLaunch.stream = stream;
  if (auto err = encodeKernel->launch(encodeLaunch, args))
    return err;

  // The flag is read once both passes are done: NaN/Inf inputs are an error, never silent
  // garbage. The copy itself runs on the legacy stream, which does not wait for a non-blocking
  // caller stream (PyTorch's, the engine's own Stream), so the caller's stream is waited for first.
  if (auto err = driver_.check(driver_.api().cuStreamSynchronize(static_cast<CUstream>(stream)),
                               "cuStreamSynchronize"))
    return err;
  int found = 0;
  if (auto err = nonfinite.copyToHost(&found, 4))
    return err;
  if (found)
    return fail(llvm::formatv("{0}: input holds NaN or Inf; fa4jit quantizes finite values only", what));
  return llvm::Error::success();
}

} // namespace fa4jit
