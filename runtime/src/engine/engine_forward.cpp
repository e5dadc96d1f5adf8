// Engine::forward: choose the attention spec, quantize what the route needs, fill the kernel's
// AttentionParams (templates/fa4jit/attention/params.cuh), for KvStaging::TensorMap kernels also
// their TMA tensor maps (tensor_maps.h), and launch.
#include "fa4jit/runtime/engine.h"

#include "fa4jit/attention/params.cuh"
#include "fa4jit/codegen/route_presets.h"
#include "fa4jit/codegen/spec_validate.h"
#include "fa4jit/quantize/params.cuh"
#include "fa4jit/runtime/forward_validate.h"

#include "engine/workspace_buffers.h"
#include "engine/workspace_layout.h"
#include "toolchain/driver_api.h"
#include "toolchain/tensor_maps.h"

#include "llvm/Support/FormatVariadic.h"

#include "fa4jit/logging/log.h"

#include <algorithm>
#include <array>
#include <cstdint>

namespace fa4jit {

namespace {
llvm::Error fail(const std::string &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

} // namespace

llvm::Error Engine::checkForwardArgs(const ForwardArgs &a, bool &empty) const {
  empty = false;
  if (auto err = runtime::validateForwardShapes(a.q, a.k, a.v, a.o, a.lse))
    return err;
  if (runtime::isEmpty(a.q)) { // no batch, no query heads or no queries: nothing to compute
    empty = true;
    return llvm::Error::success();
  }
  const bool no_keys = a.k.shape[2] == 0;
  for (const auto &[t, name] : {std::pair{&a.q, "q"}, {&a.k, "k"}, {&a.v, "v"}, {&a.o, "o"}})
    if (!(no_keys && (t == &a.k || t == &a.v)))
      if (auto err = checkTensorMemory(*t, name))
        return err;
  if (a.lse)
    if (auto err = checkDeviceMemory(a.lse, std::uint64_t(a.o.shape[0] * a.o.shape[1] * a.o.shape[2]) * 4, "lse"))
      return err;
  return llvm::Error::success();
}

llvm::Expected<KernelSpec> Engine::forwardSpec(const ForwardArgs &a) const {
  KernelSpec spec;
  if (a.spec) {
    spec = *a.spec;
  } else {
    Route route = a.route;
    QkFormat qk_format = a.qk_format;
    if (a.auto_route) {
      auto choice = autoRoute(static_cast<int>(a.q.shape[3]), a.causal, static_cast<int>(a.k.shape[2]), *a.auto_route,
                              a.q.dtype);
      if (!choice)
        return choice.takeError();
      route = choice->preset.route, qk_format = choice->preset.qk_format;
    }
    auto chosen = attentionSpecFor(route, static_cast<int>(a.q.shape[3]), a.causal, static_cast<int>(a.k.shape[2]),
                                   a.classifier, qk_format);
    if (!chosen)
      return chosen.takeError();
    spec = *chosen;
  }
  if (a.softmax_scale != 0.0f)
    spec.attention.softmax_scale = a.softmax_scale;
  return spec;
}

namespace {
engine_detail::ForwardShape forwardShape(const TensorDesc &q, const TensorDesc &k) {
  engine_detail::ForwardShape s;
  s.batch = static_cast<int>(q.shape[0]), s.heads_q = static_cast<int>(q.shape[1]);
  s.heads_kv = static_cast<int>(k.shape[1]), s.seqlen_q = static_cast<int>(q.shape[2]);
  s.seqlen_k = static_cast<int>(k.shape[2]), s.head_dim = static_cast<int>(q.shape[3]);
  return s;
}
} // namespace

llvm::Error Engine::growWorkspace(const engine_detail::WorkspaceLayout &layout) {
  Workspace &w = *workspace_;
  if (w.buffer.size() >= layout.total)
    return llvm::Error::success();
  // (zeroed once when allocated: the counters' starting state; a synchronous fill, done before
  // any stream's launch on it)
  if (auto err = engine_detail::ensureBytes(driver_, w.buffer, layout.total, /*zeroed=*/true))
    return err;
  w.counters_zero_bytes = w.buffer.size();
  return llvm::Error::success();
}

llvm::Error Engine::forward(const ForwardArgs &a) { return forwardFromBf16(a, nullptr); }

llvm::Error Engine::forward(const ForwardArgs &a, std::uint64_t workspace, std::size_t workspace_bytes) {
  const CallerWorkspace caller{workspace, workspace_bytes};
  return forwardFromBf16(a, &caller);
}

llvm::Expected<std::size_t> Engine::workspaceSize(const ForwardArgs &a) const {
  if (auto err = runtime::validateForwardShapes(a.q, a.k, a.v, a.o, a.lse))
    return err;
  if (runtime::isEmpty(a.q) || a.k.shape[2] == 0)
    return std::size_t(0);
  auto spec = forwardSpec(a);
  if (!spec)
    return spec.takeError();
  return engine_detail::workspaceLayout(*spec, forwardShape(a.q, a.k), true).total;
}

llvm::Error Engine::forwardFromBf16(const ForwardArgs &a, const CallerWorkspace *caller) {
  bool empty = false;
  if (auto err = checkForwardArgs(a, empty))
    return err;
  if (empty)
    return llvm::Error::success();
  if (a.k.shape[2] == 0)
    return writeNoKeysResult(a.o, a.lse, a.stream);
  auto spec = forwardSpec(a);
  if (!spec)
    return spec.takeError();
  const engine_detail::WorkspaceLayout layout = engine_detail::workspaceLayout(*spec, forwardShape(a.q, a.k), true);
  if (!caller) {
    if (auto err = growWorkspace(layout))
      return err;
    return forwardOn(a, *spec, layout, workspace_->buffer.address(), /*engine_workspace=*/true);
  }
  if (caller->bytes < layout.total)
    return fail(llvm::formatv("forward: the workspace holds {0} bytes; this call needs {1} (workspaceSize)",
                              caller->bytes, layout.total));
  if (caller->address % engine_detail::kWorkspaceAlignment != 0)
    return fail(llvm::formatv("forward: the workspace address {0:x} is not {1}-byte aligned", caller->address,
                              engine_detail::kWorkspaceAlignment));
  if (auto err = checkDeviceMemory(caller->address, layout.total, "workspace"))
    return err;
  return forwardOn(a, *spec, layout, caller->address, /*engine_workspace=*/false);
}

llvm::Error Engine::forwardOn(const ForwardArgs &a, const KernelSpec &spec, const engine_detail::WorkspaceLayout &layout,
                              std::uint64_t workspace, bool engine_workspace) {
  const bool counters_zero = engine_workspace && workspace_->counters_zero_bytes >= layout.counters.bytes;
  if (engine_workspace) // the kernels leave the counters zero; every other part is written below
    workspace_->counters_zero_bytes = layout.counters.bytes;
  if (spec.attention.route == Route::Bf16) {
    if (a.q.dtype != DType::BF16) // (its kernels feed the tensor cores with the tensors as they are)
      return fail(llvm::formatv("route bf16 reads BF16 q, k and v; {0} inputs take route nvfp8 or directp, or a "
                                "conversion to BF16",
                                toString(a.q.dtype)));
    if (config_.nonfinite == runtime::NonFinitePolicy::Check)
      if (auto err = checkFiniteBf16(a))
        return err;
    return launchAttention(spec, nullptr, nullptr, nullptr, &a.q, &a.k, &a.v, a.o, a.lse, a.stream, layout, workspace,
                           counters_zero);
  }
  const engine_detail::ForwardShape s = forwardShape(a.q, a.k);
  using engine_detail::operandAt;
  const QkQuantization qk = qkQuantizationOf(spec.attention);
  auto q = operandAt(workspace, layout.q, qk.format, s.batch, s.heads_q, s.seqlen_q, s.head_dim);
  auto k = operandAt(workspace, layout.k, qk.format, s.batch, s.heads_kv, s.seqlen_k, s.head_dim);
  q.code_shift = k.code_shift = qk.code_shift;
  auto v = operandAt(workspace, layout.v, engine_detail::valueFormat(spec.attention.route), s.batch, s.heads_kv,
                     s.seqlen_k, s.head_dim);
  // The counters (the quantizers' sync words among them) are cleared before the first pass that
  // may use them, unless known to be zero; every pass leaves them zero for the next.
  if (!counters_zero)
    if (auto err = driver_.check(driver_.api().cuMemsetD8Async(workspace + layout.counters.offset, 0,
                                                               layout.counters.bytes, static_cast<CUstream>(a.stream)),
                                 "cuMemsetD8Async"))
      return err;
  for (engine_detail::QuantizedOperand *operand : {&q, &k, &v}) { // (one after the other on a.stream)
    operand->sync = workspace + layout.counters.offset + layout.quantize_sync_offset;
    operand->sync_zero = true;
  }
  if (auto err = quantizeOperand(a.q, q, "q", a.stream))
    return err;
  if (auto err = quantizeOperand(a.k, k, "k", a.stream))
    return err;
  if (auto err = quantizeOperand(a.v, v, "v", a.stream))
    return err;
  return launchAttention(spec, &q, &k, &v, nullptr, nullptr, nullptr, a.o, a.lse, a.stream, layout, workspace,
                         /*counters_zero=*/true);
}

llvm::Error Engine::forward(const QuantizedForwardArgs &a) {
  if (auto err = runtime::validateQuantizedForward(a))
    return err;
  if (auto err = checkTensorMemory(a.o, "o"))
    return err;
  if (a.lse)
    if (auto err = checkDeviceMemory(a.lse, std::uint64_t(a.o.shape[0] * a.o.shape[1] * a.o.shape[2]) * 4, "lse"))
      return err;
  KernelSpec spec;
  if (a.spec) {
    spec = *a.spec;
  } else {
    auto chosen = attentionSpecFor(a.route, a.q->head_dim, a.causal, a.k->seqlen, a.classifier,
                                   a.q->format == QuantFormat::E4m3Rows ? QkFormat::E4m3 : QkFormat::Nvfp4);
    if (!chosen)
      return chosen.takeError();
    spec = *chosen;
  }
  if (a.softmax_scale != 0.0f)
    spec.attention.softmax_scale = a.softmax_scale;
  engine_detail::ForwardShape shape;
  shape.batch = a.q->batch, shape.heads_q = a.q->heads, shape.heads_kv = a.k->heads;
  shape.seqlen_q = a.q->seqlen, shape.seqlen_k = a.k->seqlen, shape.head_dim = a.q->head_dim;
  const engine_detail::WorkspaceLayout layout = engine_detail::workspaceLayout(spec, shape, false);
  if (auto err = growWorkspace(layout))
    return err;
  const bool counters_zero = workspace_->counters_zero_bytes >= layout.counters.bytes;
  workspace_->counters_zero_bytes = layout.counters.bytes;
  using engine_detail::operandOf;
  const auto q = operandOf(*a.q), k = operandOf(*a.k), v = operandOf(*a.v);
  return launchAttention(spec, &q, &k, &v, nullptr, nullptr, nullptr, a.o, a.lse, a.stream, layout,
                         workspace_->buffer.address(), counters_zero);
}

// The pass that makes NaN the output rows a non-finite input reaches (attention/nonfinite_rows.cuh),
// after the attention entry point on the same stream.
llvm::Error Engine::launchNonFiniteRows(const KernelSpec &spec, const runtime::CompiledKernel &compiled,
                                        device::attention::AttentionParams &p, void *stream) {
  const EntryPoint *entry = entryWithSuffix(compiled.emitted, "_nonfinite_rows");
  if (!entry)
    return fail(llvm::formatv("forward: kernel {0} has no _nonfinite_rows entry point", compiled.emitted.name));
  auto pass = kernel(spec, entry->name);
  if (!pass)
    return pass.takeError();
  runtime::LaunchConfig launch;
  launch.grid = {unsigned(p.heads_q), unsigned(p.batch), 1};
  launch.block = {unsigned(entry->threads), 1, 1};
  launch.stream = stream;
  void *args[] = {&p};
  return pass->launch(launch, args);
}

// A widening pass of a wgmma kernel: launches the entry point named `suffix` on `grid` (128
// threads, no shared memory), which writes the images p points at.
llvm::Error Engine::launchWidening(const KernelSpec &spec, const runtime::CompiledKernel &compiled,
                                   llvm::StringRef suffix, std::array<unsigned, 3> grid,
                                   device::attention::AttentionParams &p, void *stream) {
  const EntryPoint *entry = entryWithSuffix(compiled.emitted, suffix);
  if (!entry)
    return fail(llvm::formatv("forward: kernel {0} has no {1} entry point", compiled.emitted.name, suffix));
  auto widen = kernel(spec, entry->name);
  if (!widen)
    return widen.takeError();
  runtime::LaunchConfig launch;
  launch.grid = {grid[0], grid[1], grid[2]};
  launch.block = {unsigned(entry->threads), 1, 1};
  launch.stream = stream;
  void *args[] = {&p};
  return widen->launch(launch, args);
}

llvm::Error Engine::launchAttention(const KernelSpec &spec, const engine_detail::QuantizedOperand *q,
                                    const engine_detail::QuantizedOperand *k, const engine_detail::QuantizedOperand *v,
                                    const TensorDesc *bq, const TensorDesc *bk, const TensorDesc *bv,
                                    const TensorDesc &o, std::uint64_t lse, void *stream,
                                    const engine_detail::WorkspaceLayout &layout, std::uint64_t workspace,
                                    bool counters_zero) {
  namespace da = device::attention;
  if (spec.family != KernelFamily::AttentionForward)
    return fail("forward: the spec is not an attention-forward spec");
  const AttentionSpec &as = spec.attention;
  const int D = static_cast<int>(o.shape[3]);
  if (as.head_dim != D)
    return fail(llvm::formatv("forward: spec head dim {0} differs from the tensors' {1}", as.head_dim, D));
  const bool quantized = as.route != Route::Bf16;
  if (quantized != (q != nullptr))
    return fail(llvm::formatv("forward: route {0} got the wrong kind of operands", toString(as.route)));
  const QkQuantization qk = qkQuantizationOf(as);
  if (quantized && (q->format != qk.format || k->format != q->format))
    return fail(llvm::formatv("forward: the spec reads {0} Q and K; the operands are {1} and {2}", toString(qk.format),
                              toString(q->format), toString(k->format)));
  if (quantized && (q->code_shift != qk.code_shift || k->code_shift != qk.code_shift))
    return fail(llvm::formatv("forward: the kernel reads E4M3 Q/K scaled by 2^-{0}; q and k were quantized with "
                              "code_shift {1} and {2}",
                              qk.code_shift, q->code_shift, k->code_shift));
  // TensorMap kernels load tiles by TMA straight from the BF16 tensors (the spec rules, which the
  // JIT applies before emitting, keep them to the bf16 route).
  const bool tensor_maps = as.tile.staging.kv == KvStaging::TensorMap;

  auto compiled = jit_->get(spec);
  if (!compiled)
    return compiled.takeError();
  const EntryPoint &entry = (*compiled)->emitted.entries.at(0);
  auto kern = kernel(spec, entry.name);
  if (!kern)
    return kern.takeError();

  da::AttentionParams p{};
  if (quantized) {
    using engine_detail::quantStrides;
    const engine_detail::QuantStrides qs = quantStrides(*q), ks = quantStrides(*k), vs = quantStrides(*v);
    p.q = q->payload, p.k = k->payload, p.v = v->payload;
    p.q_sf = q->scales, p.k_sf = k->scales;
    p.v_sf = v->format == QuantFormat::Mxfp4 ? v->scales : 0;
    p.q_global_scale = q->head_scalar, p.k_global_scale = k->head_scalar;
    p.v_scale = v->format == QuantFormat::Fp8PerHead ? v->head_scalar : 0;
    p.v_shift = v->format == QuantFormat::Mxfp4 ? v->head_scalar : 0;
    p.q_nonfinite_rows = q->nonfinite_rows, p.k_nonfinite_rows = k->nonfinite_rows;
    p.v_nonfinite_rows = v->nonfinite_rows;
    p.q_batch_stride = qs.batch, p.q_head_stride = qs.head, p.q_row_stride = qs.row;
    p.k_batch_stride = ks.batch, p.k_head_stride = ks.head, p.k_row_stride = ks.row;
    p.v_batch_stride = vs.batch, p.v_head_stride = vs.head, p.v_row_stride = vs.row;
    p.q_sf_batch_stride = qs.sf_batch, p.q_sf_head_stride = qs.sf_head;
    p.k_sf_batch_stride = ks.sf_batch, p.k_sf_head_stride = ks.sf_head;
    p.v_sf_batch_stride = vs.sf_batch, p.v_sf_head_stride = vs.sf_head;
    p.batch = q->batch, p.heads_q = q->heads, p.heads_kv = k->heads;
    p.seqlen_q = q->seqlen, p.seqlen_k = k->seqlen;
  } else {
    p.q = bq->data, p.k = bk->data, p.v = bv->data;
    p.q_batch_stride = bq->stride[0], p.q_head_stride = bq->stride[1], p.q_row_stride = bq->stride[2];
    p.k_batch_stride = bk->stride[0], p.k_head_stride = bk->stride[1], p.k_row_stride = bk->stride[2];
    p.v_batch_stride = bv->stride[0], p.v_head_stride = bv->stride[1], p.v_row_stride = bv->stride[2];
    p.batch = static_cast<int32_t>(bq->shape[0]), p.heads_q = static_cast<int32_t>(bq->shape[1]);
    p.heads_kv = static_cast<int32_t>(bk->shape[1]);
    p.seqlen_q = static_cast<int32_t>(bq->shape[2]), p.seqlen_k = static_cast<int32_t>(bk->shape[2]);
  }
  p.o = o.data;
  p.o_fp16 = o.dtype == DType::F16 ? 1 : 0;
  p.o_batch_stride = o.stride[0], p.o_head_stride = o.stride[1], p.o_row_stride = o.stride[2];
  p.lse = lse;
  if (p.batch > 65535 || p.heads_q > 65535)
    return fail(llvm::formatv("forward: batch {0} and query heads {1} must each be at most 65535", p.batch,
                              p.heads_q));

  // The persistent FP8-fed kernel may write its images itself (attention_sm90/widen_ahead.cuh):
  // then no pass runs, and its counters start at zero (each launch leaves them so).
  const bool fused = fusesWidening(as);
  const bool counters = fused || (as.tile.schedule.persistent && handsOutWorkTiles(as));
  if (counters && !counters_zero)
    if (auto err = driver_.check(driver_.api().cuMemsetD8Async(workspace + layout.counters.offset, 0,
                                                               layout.counters.bytes, static_cast<CUstream>(stream)),
                                 "cuMemsetD8Async"))
      return err;
  if (fused)
    p.widen_state = workspace + layout.counters.offset + layout.widen_state_offset;
  // The images live in the workspace either way: written by the passes launched below, or by the
  // kernel itself while its consumers compute.
  std::array<unsigned, 3> kv_grid{}, q_grid{};
  if (as.tile.staging.kv == KvStaging::Prewidened) {
    // Every K/V tile's shared-memory image (attention_sm90/widen_kv.cuh), [B*Hkv][tiles][stage].
    const unsigned tiles = unsigned((p.seqlen_k + as.tile.shape.block_n - 1) / as.tile.shape.block_n);
    p.kv_tiles = workspace + layout.kv_tiles.offset;
    kv_grid = {tiles, unsigned(p.heads_kv), unsigned(p.batch)};
  }
  if (as.tile.schedule.persistent && !tensor_maps) { // a TensorMap kernel's producer loads Q blocks by TMA too
    // Every block_m-row Q block's image (attention_sm90/widen_q.cuh), [B*Hq][blocks][Q tile].
    const unsigned blocks = unsigned((p.seqlen_q + as.tile.shape.block_m - 1) / as.tile.shape.block_m);
    p.q_tiles = workspace + layout.q_tiles.offset;
    q_grid = {blocks, unsigned(p.heads_q), unsigned(p.batch)};
  }
  if (!fused && kv_grid[0] != 0)
    if (auto err = launchWidening(spec, **compiled, "_widen_kv", kv_grid, p, stream))
      return err;
  if (!fused && q_grid[0] != 0)
    if (auto err = launchWidening(spec, **compiled, "_widen_q", q_grid, p, stream))
      return err;

  runtime::LaunchConfig launch;
  const unsigned m_blocks = unsigned((p.seqlen_q + as.tile.shape.block_m - 1) / as.tile.shape.block_m);
  launch.grid = {m_blocks, unsigned(p.heads_q), unsigned(p.batch)};
  if (as.tile.schedule.persistent) {
    // One CTA per SM at most (one fits: its 384 or 512 threads hold the register file), each
    // looping over the work tiles (attention_sm90/work_tiles.cuh).
    const std::uint64_t work = std::uint64_t(m_blocks) * unsigned(p.heads_q) * unsigned(p.batch);
    if (work > std::uint64_t(INT32_MAX)) // the kernel counts work tiles in int
      return fail(llvm::formatv("forward: {0} work tiles of {1} query rows exceed the persistent kernel's 2^31 - 1",
                                work, as.tile.shape.block_m));
    const std::uint64_t sms = device_.sm_count > 0 ? std::uint64_t(device_.sm_count) : 1u;
    launch.grid = {unsigned(std::min(work, sms)), 1, 1};
    if (handsOutWorkTiles(as)) {
      // The grid hands its work tiles out from two counters (attention_sm90/work_tiles.cuh), whose
      // tickets run up to work + grid.
      if (work + sms > std::uint64_t(INT32_MAX))
        return fail(llvm::formatv("forward: {0} work tiles exceed the persistent causal kernel's tickets", work));
      p.work_counter = workspace + layout.counters.offset;
    }
  }
  launch.block = {unsigned(entry.threads), 1, 1};
  launch.dynamic_shared_bytes = unsigned(entry.dynamic_shared_bytes);
  if (as.tile.schedule.kv_multicast) {
    // Two-CTA clusters over pairs of m-blocks (attention_sm90/work_tiles.cuh), as many as can be
    // resident at once: a second wave of clusters would wait for the first to finish its loop.
    launch.cluster = {2, 1, 1};
    auto resident = kern->maxActiveClusters(launch);
    if (!resident)
      return resident.takeError();
    if (*resident < 1)
      return fail(llvm::formatv("forward: no two-CTA cluster of {0} fits on the device", entry.name));
    const std::uint64_t pairs = std::uint64_t((m_blocks + 1) / 2) * unsigned(p.heads_q) * unsigned(p.batch);
    launch.grid = {unsigned(2 * std::min(pairs, std::uint64_t(*resident))), 1, 1};
    logging::logger().debug("fa4jit forward: {0}: {1} two-CTA clusters resident, grid {2}", entry.name, *resident,
                  launch.grid.x);
  }
  launch.stream = stream;
  if (tensor_maps) {
    // The kernel's second parameter, (const __grid_constant__ AttentionTensorMaps maps).
    auto maps = runtime::encodeAttentionTensorMaps(driver_.api(), *bq, *bk, *bv, as.tile.shape.block_m, as.tile.shape.block_n);
    if (!maps)
      return maps.takeError();
    void *args[] = {&p, &*maps};
    return kern->launch(launch, args);
  }
  void *args[] = {&p};
  if (auto err = kern->launch(launch, args))
    return err;
  return quantized ? launchNonFiniteRows(spec, **compiled, p, stream) : llvm::Error::success();
}

} // namespace fa4jit
