// Engine::forward: choose the attention spec, quantize what the route needs, fill the kernel's
// AttentionParams (templates/fa4jit/attention/params.cuh), for KvStaging::TensorMap kernels also
// their TMA tensor maps (tensor_maps.h), and launch.
#include "fa4jit/runtime/engine.h"

#include "fa4jit/attention/params.cuh"
#include "fa4jit/codegen/spec_validate.h"
#include "fa4jit/quantize/params.cuh"
#include "fa4jit/runtime/forward_validate.h"

#include "engine/workspace_buffers.h"
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

// Strides of one quantized operand's payload and scales, as AttentionParams wants them (bytes).
struct QuantStrides {
  std::int64_t batch, head, row, sf_batch, sf_head;
};
QuantStrides quantStrides(const QuantizedTensor &t) {
  namespace dq = device::quantize;
  const int f = static_cast<int>(t.format);
  const std::int64_t head = dq::quantizePayloadBytesPerHead(f, t.head_dim, t.seqlen);
  const std::int64_t row = t.format == QuantFormat::Nvfp4 ? t.head_dim / 2
                           : t.format == QuantFormat::Mxfp4 ? dq::quantizePaddedKeys(t.seqlen) / 2
                                                            : dq::quantizePaddedKeys(t.seqlen);
  const std::int64_t sf = dq::quantizeScaleBytesPerHead(f, t.head_dim, t.seqlen);
  return {head * t.heads, head, row, sf * t.heads, sf};
}
} // namespace

llvm::Error Engine::forward(const ForwardArgs &a) {
  if (auto err = runtime::validateForwardShapes(a.q, a.k, a.v, a.o, a.lse))
    return err;
  if (runtime::isEmpty(a.q)) // no batch, no query heads or no queries: nothing to compute
    return llvm::Error::success();
  const bool no_keys = a.k.shape[2] == 0;
  for (const auto &[t, name] : {std::pair{&a.q, "q"}, {&a.k, "k"}, {&a.v, "v"}, {&a.o, "o"}})
    if (!(no_keys && (t == &a.k || t == &a.v)))
      if (auto err = checkTensorMemory(*t, name))
        return err;
  if (a.lse)
    if (auto err = checkDeviceMemory(a.lse, std::uint64_t(a.o.shape[0] * a.o.shape[1] * a.o.shape[2]) * 4, "lse"))
      return err;
  if (no_keys)
    return writeNoKeysResult(a.o, a.lse, a.stream);
  const int D = static_cast<int>(a.q.shape[3]);
  KernelSpec spec;
  if (a.spec) {
    spec = *a.spec;
  } else {
    auto chosen = attentionSpecFor(a.route, D, a.causal, static_cast<int>(a.k.shape[2]), a.classifier);
    if (!chosen)
      return chosen.takeError();
    spec = *chosen;
  }
  if (a.softmax_scale != 0.0f)
    spec.attention.softmax_scale = a.softmax_scale;
  if (spec.attention.route == Route::Bf16)
    return launchAttention(spec, nullptr, nullptr, nullptr, &a.q, &a.k, &a.v, a.o, a.lse, a.stream);

  Workspace &w = *workspace_;
  const QuantFormat v_format = spec.attention.route == Route::DirectP ? QuantFormat::Mxfp4 : QuantFormat::Fp8PerHead;
  if (auto err = quantizeInto(a.q, QuantFormat::Nvfp4, "q", a.stream, w.q, w.amax_partial, w.nonfinite))
    return err;
  if (auto err = quantizeInto(a.k, QuantFormat::Nvfp4, "k", a.stream, w.k, w.amax_partial, w.nonfinite))
    return err;
  if (auto err = quantizeInto(a.v, v_format, "v", a.stream, w.v, w.amax_partial, w.nonfinite))
    return err;
  return launchAttention(spec, &w.q, &w.k, &w.v, nullptr, nullptr, nullptr, a.o, a.lse, a.stream);
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
    auto chosen = attentionSpecFor(a.route, a.q->head_dim, a.causal, a.k->seqlen, a.classifier);
    if (!chosen)
      return chosen.takeError();
    spec = *chosen;
  }
  if (a.softmax_scale != 0.0f)
    spec.attention.softmax_scale = a.softmax_scale;
  return launchAttention(spec, a.q, a.k, a.v, nullptr, nullptr, nullptr, a.o, a.lse, a.stream);
}

namespace {

using engine_detail::ensureBytes;

// The entry point of a wgmma kernel's widening pass by its name suffix (emit_attention.cpp).
const EntryPoint *widenEntry(const runtime::CompiledKernel &compiled, llvm::StringRef suffix) {
  for (const EntryPoint &e : compiled.emitted.entries)
    if (llvm::StringRef(e.name).endswith(suffix))
      return &e;
  return nullptr;
}

} // namespace

// A widening pass of a wgmma kernel: launches the entry point named `suffix` on `grid` (128
// threads, no shared memory), which writes the images p points at.
llvm::Error Engine::launchWidening(const KernelSpec &spec, const runtime::CompiledKernel &compiled,
                                   llvm::StringRef suffix, std::array<unsigned, 3> grid,
                                   device::attention::AttentionParams &p, void *stream) {
  const EntryPoint *entry = widenEntry(compiled, suffix);
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

llvm::Error Engine::launchAttention(const KernelSpec &spec, const QuantizedTensor *q, const QuantizedTensor *k,
                                    const QuantizedTensor *v, const TensorDesc *bq, const TensorDesc *bk,
                                    const TensorDesc *bv, const TensorDesc &o, std::uint64_t lse, void *stream) {
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
    const QuantStrides qs = quantStrides(*q), ks = quantStrides(*k), vs = quantStrides(*v);
    p.q = q->payload.address(), p.k = k->payload.address(), p.v = v->payload.address();
    p.q_sf = q->scales.address(), p.k_sf = k->scales.address();
    p.v_sf = v->format == QuantFormat::Mxfp4 ? v->scales.address() : 0;
    p.q_global_scale = q->head_scalar.address(), p.k_global_scale = k->head_scalar.address();
    p.v_scale = v->format == QuantFormat::Fp8PerHead ? v->head_scalar.address() : 0;
    p.v_shift = v->format == QuantFormat::Mxfp4 ? v->head_scalar.address() : 0;
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
  p.o_batch_stride = o.stride[0], p.o_head_stride = o.stride[1], p.o_row_stride = o.stride[2];
  p.lse = lse;
  if (p.batch > 65535 || p.heads_q > 65535)
    return fail(llvm::formatv("forward: batch {0} and query heads {1} must each be at most 65535", p.batch,
                              p.heads_q));

  // The persistent FP8-fed kernel may write its images itself (attention_sm90/widen_ahead.cuh):
  // then no pass runs, and its counters start at zero (each launch leaves them so).
  const bool fused = fusesWidening(as);
  if (fused) {
    const std::size_t words = 2 + std::size_t(p.batch) * std::size_t(p.heads_kv);
    if (auto err = ensureBytes(driver_, workspace_->widen_state, words * sizeof(std::uint32_t), /*zeroed=*/true))
      return err;
    p.widen_state = workspace_->widen_state.address();
  }
  // The images live in the workspace either way: written by the passes launched below, or by the
  // kernel itself while its consumers compute.
  std::array<unsigned, 3> kv_grid{}, q_grid{};
  if (as.tile.staging.kv == KvStaging::Prewidened) {
    // Every K/V tile's shared-memory image (attention_sm90/widen_kv.cuh), [B*Hkv][tiles][stage].
    const unsigned tiles = unsigned((p.seqlen_k + as.tile.shape.block_n - 1) / as.tile.shape.block_n);
    const std::size_t bytes = std::size_t(p.batch) * std::size_t(p.heads_kv) * tiles * std::size_t(wgmmaStageBytes(as));
    if (auto err = ensureBytes(driver_, workspace_->kv_tiles, bytes))
      return err;
    p.kv_tiles = workspace_->kv_tiles.address();
    kv_grid = {tiles, unsigned(p.heads_kv), unsigned(p.batch)};
  }
  if (as.tile.schedule.persistent && !tensor_maps) { // a TensorMap kernel's producer loads Q blocks by TMA too
    // Every block_m-row Q block's image (attention_sm90/widen_q.cuh), [B*Hq][blocks][Q tile].
    const unsigned blocks = unsigned((p.seqlen_q + as.tile.shape.block_m - 1) / as.tile.shape.block_m);
    const std::size_t bytes = std::size_t(p.batch) * std::size_t(p.heads_q) * blocks * std::size_t(wgmmaQTileBytes(as));
    if (auto err = ensureBytes(driver_, workspace_->q_tiles, bytes))
      return err;
    p.q_tiles = workspace_->q_tiles.address();
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
      if (workspace_->work_counter.size() == 0) {
        auto counter = runtime::DeviceBuffer::allocate(driver_, 2 * sizeof(std::int32_t));
        if (!counter)
          return counter.takeError();
        const std::int32_t zeros[2] = {0, 0}; // (a synchronous copy: done before any stream's launch)
        if (auto err = counter->copyFromHost(zeros, sizeof(zeros)))
          return err;
        workspace_->work_counter = std::move(*counter);
      }
      p.work_counter = workspace_->work_counter.address();
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
  return kern->launch(launch, args);
}

} // namespace fa4jit
