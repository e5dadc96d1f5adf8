// Engine::quantize: the GPU quantizer of templates/fa4jit/quantize (per-head amax then encode, or
// one of the one-pass kernels; for MXFP4 the encode pass alone), into the exchange layouts of
// docs/NUMERICS.md §1, and the NonFinitePolicy applied to what the passes recorded.
#include "fa4jit/runtime/engine.h"

#include "fa4jit/codegen/emitter.h"
#include "fa4jit/codegen/heuristics.h"
#include "fa4jit/logging/log.h"
#include "fa4jit/quantize/params.cuh"
#include "fa4jit/runtime/forward_validate.h"

#include "engine/workspace_buffers.h"
#include "engine/workspace_layout.h"
#include "toolchain/driver_api.h"

#include "llvm/Support/FormatVariadic.h"

#include <vector>

namespace fa4jit {

namespace {
llvm::Error fail(const std::string &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

// The launch of the quantizer's one-pass kernel `k` into `launch` (its block already set): one
// cluster per head, of the size params.cuh decides. False where it cannot run (no cluster's shared
// memory holds a head, or the device holds no such cluster: more than 8 CTAs is non-portable, and
// MPS or a partition of the GPU may hold fewer SMs than a cluster); the two passes run instead. The
// device's answers are remembered per kernel, and one that cannot answer gets the two passes.
bool planClusterPass(runtime::Kernel &k, int heads, int seqlen, int head_dim, int elem_bytes,
                     runtime::LaunchConfig &launch) {
  namespace dq = device::quantize;
  const int ctas = dq::quantizeClusterCtas(seqlen, head_dim, elem_bytes);
  if (ctas == 0)
    return false;
  launch.grid = {unsigned(ctas), unsigned(heads), 1};
  launch.cluster = {unsigned(ctas), 1, 1};
  launch.dynamic_shared_bytes = static_cast<unsigned>(dq::quantizeClusterSliceBytes(seqlen, head_dim, elem_bytes, ctas));
  if (ctas == 1)
    return true;
  auto resident = k.maxActiveClusters(launch);
  if (!resident) {
    logging::logger().debug("quantizer {}: no cluster of {} CTAs ({}); the two passes run", k.name(), ctas,
                            llvm::toString(resident.takeError()));
    return false;
  }
  return *resident > 0;
}

// Where the pipelined one-pass kernel runs, the grid reads quantizePipelinedBytesInFlight of x
// between reducing a row group and encoding it; the encode reads them from L2 only if they stay
// there. Half the L2, so that the codes written meanwhile and the other partition's share leave
// them in place.
std::int64_t pipelinedL2Budget(int l2_bytes) {
  constexpr std::int64_t kUnknownL2 = 16ll << 20; // (a device that does not report its L2)
  return l2_bytes > 0 ? std::int64_t(l2_bytes) / 2 : kUnknownL2;
}

// The launch of the pipelined one-pass kernel `k` (its block already set) into `launch` and the
// row groups per head into `groups`: a grid of CTAs that are all resident at once (its waits need
// that), at most one per item. False where its bytes in flight would not fit L2 or the device
// cannot say how many CTAs it holds: the other passes run.
bool planPipelinedPass(runtime::Kernel &k, const runtime::DeviceInfo &device, int heads_total, int seqlen,
                       int head_dim, int threads, int elem_bytes, runtime::LaunchConfig &launch, int &groups) {
  namespace dq = device::quantize;
  auto per_sm = k.maxActiveBlocksPerSm(launch);
  if (!per_sm) {
    logging::logger().debug("quantizer {}: occupancy unknown ({}); the other passes run", k.name(),
                            llvm::toString(per_sm.takeError()));
    return false;
  }
  groups = dq::quantizePipelinedGroups(seqlen, threads, head_dim);
  const std::int64_t items = std::int64_t(groups) * heads_total;
  const std::int64_t resident = std::int64_t(*per_sm) * std::max(device.sm_count, 1);
  if (resident < 1)
    return false;
  const int grid = static_cast<int>(std::min(items, resident));
  if (dq::quantizePipelinedBytesInFlight(groups, grid, threads, head_dim, elem_bytes) >
      pipelinedL2Budget(device.l2_bytes))
    return false;
  launch.grid = {unsigned(grid), 1, 1};
  return true;
}

llvm::Error checkQuantizeInput(const TensorDesc &x, QuantFormat format, const char *what) {
  if (format == QuantFormat::Bf16)
    return fail(llvm::formatv("{0}: bf16 is not a quantized format", what));
  if (x.dtype != DType::BF16 && x.dtype != DType::F16 && x.dtype != DType::F32)
    return fail(llvm::formatv("{0}: quantizer input must be bf16, f16 or f32", what));
  if (auto err = runtime::validateTensor(x, what, x.dtype))
    return err;
  if (x.shape[0] * x.shape[1] > 65535)
    return fail(llvm::formatv("{0}: batch x heads = {1} exceeds 65535", what, x.shape[0] * x.shape[1]));
  return llvm::Error::success();
}
} // namespace

llvm::Expected<QuantizedTensor> Engine::quantize(const TensorDesc &x, QuantFormat format, const char *what,
                                                 void *stream, int code_shift) {
  QuantizedTensor out;
  if (auto err = quantize(x, format, out, what, stream, code_shift))
    return err;
  return out;
}

llvm::Error Engine::quantize(const TensorDesc &x, QuantFormat format, QuantizedTensor &into, const char *what,
                             void *stream, int code_shift) {
  if (format == QuantFormat::E4m3Rows ? code_shift < 3 || code_shift > 16 : code_shift != 0)
    return fail(llvm::formatv("{0}: code_shift {1}: e4m3_rows takes the attention kernel's qk_widen_shift (3 to "
                              "16), the other formats none",
                              what, code_shift));
  if (auto err = checkQuantizeInput(x, format, what))
    return err;
  const int B = static_cast<int>(x.shape[0]), H = static_cast<int>(x.shape[1]);
  const int S = static_cast<int>(x.shape[2]), D = static_cast<int>(x.shape[3]);
  engine_detail::QuantizedOperandLayout parts;
  engine_detail::layOutQuantized(format, B * H, S, D, 0, parts);
  // Buffers that already hold enough are kept: a steady stream of calls allocates nothing. The
  // caller's memory (quantizedIn) is never replaced behind its back.
  for (const auto &[buffer, extent] :
       {std::pair{&into.payload, parts.payload}, {&into.scales, parts.scales}, {&into.head_scalar, parts.head_scalar},
        {&into.nonfinite_rows, parts.nonfinite_rows}, {&into.amax_partial, parts.amax_partial}}) {
    if (!buffer->owned() && buffer->size() < extent.bytes)
      return fail(llvm::formatv("{0}: the operand's caller memory was laid out for another shape or format "
                                "({1} bytes where {2} are needed)",
                                what, buffer->size(), extent.bytes));
    if (auto err = engine_detail::ensureBytes(driver_, *buffer, extent.bytes))
      return err;
  }
  into.format = format;
  into.batch = B, into.heads = H, into.seqlen = S, into.head_dim = D;
  into.code_shift = code_shift;
  return quantizeOperand(x, engine_detail::operandOf(into), what, stream);
}

std::size_t Engine::quantizedBytes(QuantFormat format, int batch, int heads, int seqlen, int head_dim) {
  engine_detail::QuantizedOperandLayout parts;
  return engine_detail::layOutQuantized(format, batch * heads, seqlen, head_dim, 0, parts);
}

llvm::Expected<QuantizedTensor> Engine::quantizedIn(QuantFormat format, int batch, int heads, int seqlen,
                                                    int head_dim, std::uint64_t address, std::size_t bytes) const {
  if (format == QuantFormat::Bf16)
    return fail("quantized operand: bf16 is not a quantized format");
  if (batch <= 0 || heads <= 0 || seqlen <= 0 || head_dim <= 0)
    return fail(llvm::formatv("quantized operand: shape [{0}, {1}, {2}, {3}] must be positive", batch, heads, seqlen,
                              head_dim));
  if (address == 0 || address % engine_detail::kWorkspaceAlignment)
    return fail(llvm::formatv("quantized operand: address {0:x} must be non-zero and {1}-byte aligned", address,
                              engine_detail::kWorkspaceAlignment));
  engine_detail::QuantizedOperandLayout parts;
  const std::size_t need = engine_detail::layOutQuantized(format, batch * heads, seqlen, head_dim, 0, parts);
  if (bytes < need)
    return fail(llvm::formatv("quantized operand: {0} bytes given, the shape [{1}, {2}, {3}, {4}] needs {5}", bytes,
                              batch, heads, seqlen, head_dim, need));
  QuantizedTensor t;
  t.format = format;
  t.batch = batch, t.heads = heads, t.seqlen = seqlen, t.head_dim = head_dim;
  for (const auto &[buffer, extent] :
       {std::pair{&t.payload, parts.payload}, {&t.scales, parts.scales}, {&t.head_scalar, parts.head_scalar},
        {&t.nonfinite_rows, parts.nonfinite_rows}, {&t.amax_partial, parts.amax_partial}})
    if (extent.bytes)
      *buffer = runtime::DeviceBuffer::borrow(driver_, address + extent.offset, extent.bytes);
  return t;
}

llvm::Error Engine::quantizeOperand(const TensorDesc &x, const engine_detail::QuantizedOperand &out,
                                    const char *what, void *stream) {
  namespace dq = device::quantize;
  if (auto err = checkQuantizeInput(x, out.format, what))
    return err;
  const int B = out.batch, H = out.heads, S = out.seqlen, D = out.head_dim;
  if (S == 0 || B * H == 0)
    return llvm::Error::success();
  if (auto err = checkTensorMemory(x, what))
    return err;

  KernelSpec spec = defaultQuantizeSpec(out.format, D, target_,
                                        x.dtype == DType::F32   ? QuantInput::F32
                                        : x.dtype == DType::F16 ? QuantInput::F16
                                                                : QuantInput::Bf16);
  spec.quantize.code_shift = out.format == QuantFormat::E4m3Rows ? out.code_shift : 0;
  auto compiled = jit_->get(spec);
  if (!compiled)
    return compiled.takeError();
  const auto &entries = (*compiled)->emitted.entries;
  const std::size_t expected_entries = 2 + quantizeHasClusterPass(spec) + quantizeHasPipelinedPass(spec);
  if (entries.size() != expected_entries)
    return fail(llvm::formatv("quantizer {0} has {1} entry points, expected {2}", (*compiled)->emitted.name,
                              entries.size(), expected_entries));
  const int threads = entries[0].threads;
  const EntryPoint *cluster_entry = entryWithSuffix((*compiled)->emitted, kQuantizeClusterSuffix);
  const EntryPoint *pipelined_entry = entryWithSuffix((*compiled)->emitted, kQuantizePipelinedSuffix);

  const int f = static_cast<int>(out.format);
  dq::QuantizeParams p{};
  p.x = x.data;
  p.payload = out.payload;
  p.scales = out.format == QuantFormat::Fp8PerHead || out.format == QuantFormat::E4m3Rows ? 0 : out.scales;
  p.head_scalar = out.head_scalar;
  p.amax_partial = out.amax_partial;
  p.nonfinite_rows = out.nonfinite_rows;
  p.x_batch_stride = x.stride[0], p.x_head_stride = x.stride[1], p.x_row_stride = x.stride[2];
  p.batch = B, p.heads = H, p.seqlen = S;
  void *args[] = {&p};
  runtime::LaunchConfig launch;
  launch.block = {unsigned(threads), 1, 1};
  launch.stream = stream;

  const int elem_bytes = runtime::elementBytes(x.dtype);
  // The sync words of the one-pass kernels: zero at launch, and left zero.
  const auto clearSync = [&]() -> llvm::Error {
    if (out.sync_zero)
      return llvm::Error::success();
    return driver_.check(driver_.api().cuMemsetD32Async(out.sync, 0, dq::quantizeSyncWords(B * H),
                                                        static_cast<CUstream>(stream)),
                         "cuMemsetD32Async");
  };
  using runtime::QuantizePasses;
  const QuantizePasses passes = config_.quantize_passes;
  // One pass where the head fits a cluster's shared memory: x is read once (the fastest where it
  // fits: BENCHMARKS.md, "One-pass quantizers").
  if (cluster_entry && (passes == QuantizePasses::Auto || passes == QuantizePasses::Cluster) &&
      dq::quantizeVectorLoadsOk(p, elem_bytes)) { // (the cluster kernel reads x by 16-byte vectors only)
    auto clusterKernel = kernel(spec, cluster_entry->name);
    if (!clusterKernel)
      return clusterKernel.takeError();
    runtime::LaunchConfig cluster_launch = launch;
    if (planClusterPass(*clusterKernel, B * H, S, D, elem_bytes, cluster_launch)) {
      if (auto err = clusterKernel->launch(cluster_launch, args))
        return err;
      return checkNonFinite(out, what, stream);
    }
  }

  // Else one pass that reads x from memory once and again from L2, where its bytes in flight fit L2.
  if (pipelined_entry && (passes == QuantizePasses::Auto || passes == QuantizePasses::Pipelined) &&
      out.sync != 0) {
    auto pipelinedKernel = kernel(spec, pipelined_entry->name);
    if (!pipelinedKernel)
      return pipelinedKernel.takeError();
    runtime::LaunchConfig pipelined_launch = launch;
    int groups = 0;
    if (planPipelinedPass(*pipelinedKernel, device_, B * H, S, D, threads, elem_bytes, pipelined_launch, groups)) {
      if (auto err = clearSync())
        return err;
      p.sync = out.sync;
      p.amax_chunks = groups;
      if (auto err = pipelinedKernel->launch(pipelined_launch, args))
        return err;
      return checkNonFinite(out, what, stream);
    }
  }
  auto encodeKernel = kernel(spec, entries[1].name);
  if (!encodeKernel)
    return encodeKernel.takeError();
  const dq::Grid3 g = dq::quantizeEncodeGrid(f, D, threads, B, H, S);
  // MXFP4 needs no amax pass when it has sync words: its encode pass finishes the head's scalar
  // itself, and x is read once (params.cuh).
  if (out.format == QuantFormat::Mxfp4 && out.sync != 0) {
    if (auto err = clearSync())
      return err;
    p.sync = out.sync;
    launch.grid = {unsigned(g.x), unsigned(g.y), unsigned(g.z)};
    if (auto err = encodeKernel->launch(launch, args))
      return err;
    return checkNonFinite(out, what, stream);
  }

  auto amaxKernel = kernel(spec, entries[0].name);
  if (!amaxKernel)
    return amaxKernel.takeError();
  p.amax_chunks = dq::quantizeDefaultAmaxChunks(1, B * H, S);
  launch.grid = {unsigned(p.amax_chunks), unsigned(B * H), 1};
  if (auto err = amaxKernel->launch(launch, args))
    return err;
  launch.grid = {unsigned(g.x), unsigned(g.y), unsigned(g.z)};
  if (auto err = encodeKernel->launch(launch, args))
    return err;
  return checkNonFinite(out, what, stream);
}

llvm::Error Engine::checkNonFinite(const engine_detail::QuantizedOperand &out, const char *what, void *stream) {
  namespace dq = device::quantize;
  const int H = out.heads;
  if (config_.nonfinite == runtime::NonFinitePolicy::Propagate)
    return llvm::Error::success(); // the forward makes the rows they reach NaN

  // Check: the first non-finite row of every head, read once the quantizer is done. The copy runs
  // on the legacy stream, which does not wait for a non-blocking caller stream (PyTorch's, the
  // engine's own Stream), so the caller's stream is waited for first.
  if (auto err = driver_.check(driver_.api().cuStreamSynchronize(static_cast<CUstream>(stream)),
                               "cuStreamSynchronize"))
    return err;
  std::vector<std::int32_t> first(std::size_t(out.batch) * H);
  if (auto err = driver_.check(driver_.api().cuMemcpyDtoH(first.data(), out.nonfinite_rows, first.size() * 4),
                               "cuMemcpyDtoH"))
    return err;
  for (std::size_t bh = 0; bh < first.size(); ++bh)
    if (first[bh] != dq::kNoNonFiniteRow)
      return fail(llvm::formatv("{0}: input holds NaN or Inf (first at batch {1}, head {2}, row {3}); the engine "
                                "checks for them (FA4JIT_CHECK_FINITE, EngineOptions::nonfinite)",
                                what, bh / H, bh % H, first[bh]));
  return llvm::Error::success();
}

llvm::Error Engine::checkFiniteBf16(const ForwardArgs &a) {
  for (const auto &[t, name] : {std::pair{&a.q, "q"}, {&a.k, "k"}, {&a.v, "v"}})
    if (auto err = quantize(*t, QuantFormat::Nvfp4, workspace_->check_scratch, name, a.stream))
      return err;
  return llvm::Error::success();
}

} // namespace fa4jit
