// Engine::backward: the backward spec, the workspace (delta, dO maxima, dQ's FP32 accumulator,
// the deterministic mode's semaphores, the staged per-query operands), BackwardParams
// (templates/fa4jit/attention_backward/params.cuh) and the four launches: prep, stage, main, dq.
#include "fa4jit/runtime/engine.h"

#include "fa4jit/attention_backward/params.cuh"
#include "fa4jit/codegen/heuristics.h"
#include "fa4jit/quantize/params.cuh"
#include "fa4jit/runtime/forward_validate.h"

#include "engine/workspace_buffers.h"
#include "toolchain/driver_api.h"

#include "llvm/Support/FormatVariadic.h"

#include <cstdint>

namespace fa4jit {

namespace {

llvm::Error fail(const std::string &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

std::size_t alignUp(std::size_t bytes) {
  constexpr std::size_t a = engine_detail::kWorkspaceAlignment;
  return (bytes + a - 1) / a * a;
}

// Where each part of the backward's workspace lies.
struct BackwardWorkspace {
  std::size_t delta = 0, do_amax = 0, dq_accum = 0, dq_semaphore = 0;
  std::size_t q8 = 0, qb = 0, do8 = 0, do_t = 0, lse2 = 0, total = 0;
};

BackwardWorkspace backwardWorkspace(const QuantizedTensor &q, int block_m) {
  const std::size_t heads = std::size_t(q.batch) * q.heads;
  const std::size_t rows = heads * q.seqlen;
  const std::size_t padded_rows = heads * device::attention_backward::backwardPaddedQueries(q.seqlen);
  const std::size_t m_blocks = (std::size_t(q.seqlen) + block_m - 1) / block_m;
  const std::size_t d = q.head_dim;
  BackwardWorkspace w;
  w.delta = 0;
  w.do_amax = alignUp(w.delta + padded_rows * 4);
  w.dq_accum = alignUp(w.do_amax + heads * 4);
  w.dq_semaphore = alignUp(w.dq_accum + rows * d * 4);
  w.q8 = alignUp(w.dq_semaphore + heads * m_blocks * 4);
  w.qb = alignUp(w.q8 + padded_rows * d);
  w.do8 = alignUp(w.qb + padded_rows * d * 2);
  w.do_t = alignUp(w.do8 + padded_rows * d);
  w.lse2 = alignUp(w.do_t + padded_rows * d);
  w.total = alignUp(w.lse2 + padded_rows * 4);
  return w;
}

// The entry point `<kernel name><suffix>` (emit_backward.cpp names them so: "_prep", "_stage",
// "" for the main pass, "_dq").
const EntryPoint *entryNamed(const runtime::CompiledKernel &compiled, llvm::StringRef suffix) {
  const std::string name = compiled.emitted.name + suffix.str();
  for (const EntryPoint &e : compiled.emitted.entries)
    if (e.name == name)
      return &e;
  return nullptr;
}

} // namespace

llvm::Expected<KernelSpec> Engine::backwardSpecFor(const BackwardArgs &a) const {
  if (a.spec) {
    if (a.spec->family != KernelFamily::AttentionBackward)
      return fail("backward: the spec is not an attention-backward spec");
    return *a.spec;
  }
  if (!a.q)
    return fail("backward: q (the forward's saved NVFP4 Q) must be given");
  // S is rebuilt with the Q/K widening of the forward this engine runs for the shape, so that P
  // repeats the forward's scores.
  auto forward = attentionSpecFor(Route::Nvfp8, a.q->head_dim, a.causal, a.k ? a.k->seqlen : 0, std::nullopt);
  if (!forward)
    return forward.takeError();
  forward->attention.softmax_scale = a.softmax_scale;
  KernelSpec spec = defaultBackwardSpec(forward->attention, target_);
  spec.backward.pv = a.pv;
  spec.backward.qk = a.qk;
  spec.backward.deterministic = a.deterministic;
  return spec;
}

llvm::Error Engine::backward(const BackwardArgs &a) {
  namespace db = device::attention_backward;
  if (auto err = runtime::validateBackward(a))
    return err;
  auto chosen = backwardSpecFor(a);
  if (!chosen)
    return chosen.takeError();
  const KernelSpec &spec = *chosen;
  const BackwardSpec &bs = spec.backward;
  const QuantizedTensor &q = *a.q, &k = *a.k, &v = *a.v;
  if (bs.forward.head_dim != q.head_dim)
    return fail(llvm::formatv("backward: spec head dim {0} differs from the tensors' {1}", bs.forward.head_dim,
                              q.head_dim));
  if (bs.forward.causal != a.causal || bs.pv != a.pv || bs.qk != a.qk)
    return fail("backward: args.spec disagrees with the arguments' causal, pv or qk");
  if (q.batch == 0 || q.heads == 0)
    return llvm::Error::success(); // nothing to differentiate
  if (q.batch > 65535 || q.heads > 65535)
    return fail(llvm::formatv("backward: batch {0} and query heads {1} must each be at most 65535", q.batch, q.heads));
  if ((std::int64_t(k.seqlen) + bs.tile.block_n - 1) / bs.tile.block_n > 65535)
    return fail(llvm::formatv("backward: {0} keys make more than 65535 blocks of {1} keys (the main launch's grid)",
                              k.seqlen, bs.tile.block_n));

  struct Checked {
    const TensorDesc *t;
    const char *name;
  };
  std::vector<Checked> tensors = {{&a.o, "o"}, {&a.d_o, "d_o"}, {&a.dq, "dq"}, {&a.dk, "dk"}, {&a.dv, "dv"}};
  if (bs.qk == BackwardQkOperands::Bf16)
    tensors.insert(tensors.end(), {{&a.q_bf16, "q_bf16"}, {&a.k_bf16, "k_bf16"}});
  for (const Checked &c : tensors)
    if (!runtime::isEmpty(*c.t))
      if (auto err = checkTensorMemory(*c.t, c.name))
        return err;
  if (q.seqlen > 0)
    if (auto err = checkDeviceMemory(a.lse, std::uint64_t(q.batch) * q.heads * q.seqlen * 4, "lse"))
      return err;

  auto compiled = jit_->get(spec);
  if (!compiled)
    return compiled.takeError();
  const EntryPoint *prep = entryNamed(**compiled, "_prep"), *main = entryNamed(**compiled, "");
  const EntryPoint *stage = entryNamed(**compiled, "_stage"), *dq_pass = entryNamed(**compiled, "_dq");
  if (!prep || !stage || !main || !dq_pass)
    return fail(llvm::formatv("backward: kernel {0} lacks its prep, stage, main or dq entry point",
                              (*compiled)->emitted.name));

  const BackwardWorkspace layout = backwardWorkspace(q, bs.tile.block_m);
  Workspace &w = *workspace_;
  if (auto err = engine_detail::ensureBytes(driver_, w.backward, layout.total))
    return err;
  const std::uint64_t base = w.backward.address();

  db::BackwardParams p{};
  p.q = a.q_bf16.data, p.k = a.k_bf16.data, p.o = a.o.data, p.d_o = a.d_o.data;
  p.dq = a.dq.data, p.dk = a.dk.data, p.dv = a.dv.data, p.lse = a.lse;
  p.q_payload = q.payload.address(), p.q_sf = q.scales.address(), p.q_global_scale = q.head_scalar.address();
  p.k_payload = k.payload.address(), p.k_sf = k.scales.address(), p.k_global_scale = k.head_scalar.address();
  p.v_payload = v.payload.address(), p.v_sf = v.scales.address(), p.v_head_scalar = v.head_scalar.address();
  p.delta = base + layout.delta, p.do_amax = base + layout.do_amax;
  p.dq_accum = base + layout.dq_accum, p.dq_semaphore = base + layout.dq_semaphore;
  p.q8 = base + layout.q8, p.qb = base + layout.qb, p.do8 = base + layout.do8, p.do_t = base + layout.do_t;
  p.lse2 = base + layout.lse2;
  auto strides = [](const TensorDesc &t, std::int64_t &batch, std::int64_t &head, std::int64_t &row) {
    batch = t.stride[0], head = t.stride[1], row = t.stride[2];
  };
  if (bs.qk == BackwardQkOperands::Bf16) {
    strides(a.q_bf16, p.q_batch_stride, p.q_head_stride, p.q_row_stride);
    strides(a.k_bf16, p.k_batch_stride, p.k_head_stride, p.k_row_stride);
  }
  strides(a.o, p.o_batch_stride, p.o_head_stride, p.o_row_stride);
  strides(a.d_o, p.do_batch_stride, p.do_head_stride, p.do_row_stride);
  strides(a.dq, p.dq_batch_stride, p.dq_head_stride, p.dq_row_stride);
  strides(a.dk, p.dk_batch_stride, p.dk_head_stride, p.dk_row_stride);
  strides(a.dv, p.dv_batch_stride, p.dv_head_stride, p.dv_row_stride);
  using engine_detail::operandOf, engine_detail::quantStrides;
  const engine_detail::QuantStrides qs = quantStrides(operandOf(q)), ks = quantStrides(operandOf(k)),
                                    vs = quantStrides(operandOf(v));
  p.q_payload_head_bytes = qs.head, p.q_payload_row_bytes = qs.row, p.q_sf_head_bytes = qs.sf_head;
  p.k_payload_head_bytes = ks.head, p.k_payload_row_bytes = ks.row, p.k_sf_head_bytes = ks.sf_head;
  p.v_payload_head_bytes = vs.head, p.v_payload_row_bytes = vs.row, p.v_sf_head_bytes = vs.sf_head;
  p.batch = q.batch, p.heads_q = q.heads, p.heads_kv = k.heads;
  p.seqlen_q = q.seqlen, p.seqlen_k = k.seqlen;
  p.dq_semaphore_blocks = (q.seqlen + bs.tile.block_m - 1) / bs.tile.block_m;
  p.seqlen_q_padded = db::backwardPaddedQueries(q.seqlen);

  CUstream stream = static_cast<CUstream>(a.stream);
  if (auto err = driver_.check(driver_.api().cuMemsetD32Async(p.do_amax, 0, std::size_t(q.batch) * q.heads, stream),
                               "cuMemsetD32Async"))
    return err;
  void *args[] = {&p};
  auto launch = [&](const EntryPoint &entry, runtime::Dim3 grid) -> llvm::Error {
    if (grid.x == 0 || grid.y == 0 || grid.z == 0)
      return llvm::Error::success();
    auto kern = kernel(spec, entry.name);
    if (!kern)
      return kern.takeError();
    runtime::LaunchConfig config;
    config.grid = grid;
    config.block = {unsigned(entry.threads), 1, 1};
    config.dynamic_shared_bytes = unsigned(entry.dynamic_shared_bytes);
    config.stream = a.stream;
    return kern->launch(config, args);
  };
  const unsigned row_blocks = unsigned((q.seqlen + db::kPrepRows - 1) / db::kPrepRows);
  if (auto err = launch(*prep, {row_blocks, unsigned(q.heads), unsigned(q.batch)}))
    return err;
  if (auto err = launch(*stage, {row_blocks, unsigned(q.heads), unsigned(q.batch)}))
    return err;
  // (no queries: the main pass still runs, and writes dK = dV = 0)
  const unsigned key_blocks = unsigned((k.seqlen + bs.tile.block_n - 1) / bs.tile.block_n);
  if (auto err = launch(*main, {unsigned(k.heads), key_blocks, unsigned(q.batch)}))
    return err;
  return launch(*dq_pass, {row_blocks, unsigned(q.heads), unsigned(q.batch)});
}

} // namespace fa4jit
