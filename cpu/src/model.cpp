// Route models: validate, feed the operands per head, then run the rows in parallel.
#include "fa4jit/cpu/model.h"

#include <cmath>

#include "model_internal.h"
#include "parallel.h"
#include "fa4jit/codegen/classifier_fit.h"
#include "llvm/ADT/Optional.h"

namespace fa4jit::cpu {

namespace {

template <typename... Ts> llvm::Error specError(const char *fmt, const Ts &...vals) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), fmt, vals...);
}

// The spec fields the model depends on, checked so that a bad spec is an error, never UB.
llvm::Error validateSpec(const AttentionSpec &spec, const AttentionShape &shape) {
  if (spec.head_dim != 64 && spec.head_dim != 128 && spec.head_dim != 256)
    return specError("unsupported head_dim %d (route models support 64, 128, 256)", spec.head_dim);
  if (spec.head_dim != shape.head_dim)
    return specError("spec head_dim %d differs from the tensors' head_dim %d", spec.head_dim,
                     shape.head_dim);
  // (bf16 has no 32-key blocks: its wgmma kernel's 80-key tiles are whole k-steps of 16)
  const int key_step = spec.route == Route::Bf16 ? 16 : 32;
  if (spec.tile.shape.block_n <= 0 || spec.tile.shape.block_n % key_step != 0)
    return specError("tile.shape.block_n %d must be a positive multiple of %d (%s)", spec.tile.shape.block_n, key_step,
                     spec.route == Route::Bf16 ? "the BF16 k-step" : "the Direct-P block");
  if (spec.guard.kind == GuardKind::SampledAnchor && spec.guard.sample_stride < 1)
    return specError("guard.sample_stride %d must be >= 1", spec.guard.sample_stride);
  if (!std::isfinite(spec.guard.slack_log2) || spec.guard.slack_log2 < 0)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "guard.slack_log2 %g must be finite and >= 0",
                                   static_cast<double>(spec.guard.slack_log2));
  if (!std::isfinite(spec.softmax_scale))
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "softmax_scale is not finite");
  if (spec.route == Route::Bf16)
    return llvm::Error::success();
  const OperandSpec &ops = spec.operands;
  // 6 * 448 * 2^-shift must fit E4M3 (448), and P's offset plus the guard's slack must keep the
  // largest fed P (6 * 2^(off + slack - 2) for directp, 2^(off + slack) for nvfp8) within 448.
  if (ops.qk_format == QkFormat::E4m3 && ops.qk_widening != Widening::E4m3)
    return specError("operands.qk_format e4m3 feeds Q/K as stored: qk_widening must be e4m3");
  if (ops.qk_widening == Widening::E4m3 && (ops.qk_widen_shift < 3 || ops.qk_widen_shift > 16))
    return specError("operands.qk_widen_shift %d outside [3, 16] (6*448*2^-shift must fit E4M3)",
                     ops.qk_widen_shift);
  const bool p_fp8 = spec.route == Route::Nvfp8 || ops.v_widening == Widening::E4m3;
  if (p_fp8 && (ops.p_offset_log2 < -16 ||
                ops.p_offset_log2 + static_cast<int>(std::ceil(spec.guard.slack_log2)) > 8))
    return specError("operands.p_offset_log2 %d plus ceil(guard.slack_log2) exceeds 8 (P must "
                     "stay <= 448 in E4M3) or is below -16",
                     ops.p_offset_log2);
  if (spec.route == Route::DirectP) {
    if (ops.v_widening == Widening::Bf16)
      return specError("directp with BF16-widened V is not defined by docs/NUMERICS.md "
                       "(use e4m3 or native)");
    const ClassifierSpec &c = spec.classifier;
    if (!std::isfinite(c.alpha) || !std::isfinite(c.beta) || !std::isfinite(c.y_split))
      return specError("classifier alpha, beta and y_split must be finite");
    // A block's largest key has y in [2, 3); a classifier that gives it code 0 would feed an
    // all-zero row (l = 0).
    const bool top_native = c.kind == ClassifierKind::Mixed && c.y_split <= 2.0f;
    if (c.kind != ClassifierKind::Threshold && !top_native &&
        (c.alpha <= 0 || std::floor(std::fma(c.alpha, 2.0f, c.beta)) < 1.0f))
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          "classifier alpha %g, beta %g maps a block's largest key (y = 2) to code 0",
          static_cast<double>(c.alpha), static_cast<double>(c.beta));
  }
  return llvm::Error::success();
}

struct FedHeads {
  std::vector<detail::FedOperand> q, k, v; // q per (b, hq); k, v per (b, hkv)
};

llvm::Expected<FedHeads> feedAll(const AttentionSpec &spec, const AttentionProblem &p, int threads) {
  const AttentionShape &s = p.shape;
  FedHeads fed;
  fed.q.resize(static_cast<std::size_t>(s.batch) * s.heads_q);
  fed.k.resize(static_cast<std::size_t>(s.batch) * s.heads_kv);
  fed.v.resize(fed.k.size());
  const int nq = static_cast<int>(fed.q.size()), nkv = static_cast<int>(fed.k.size());
  std::vector<llvm::Optional<std::string>> errors(nq + 2 * nkv);
  parallelFor(nq + 2 * nkv, threads, [&](int i) {
    llvm::Expected<detail::FedOperand> r = llvm::createStringError(llvm::inconvertibleErrorCode(), "");
    if (i < nq)
      r = detail::feedQK(spec, p.q, i / s.heads_q, i % s.heads_q, s.seqlen_q, s.head_dim, "Q");
    else if (i < nq + nkv)
      r = detail::feedQK(spec, p.k, (i - nq) / s.heads_kv, (i - nq) % s.heads_kv, s.seqlen_k,
                         s.head_dim, "K");
    else
      r = detail::feedV(spec, p.v, (i - nq - nkv) / s.heads_kv, (i - nq - nkv) % s.heads_kv,
                        s.seqlen_k, s.head_dim);
    if (!r) {
      errors[i] = llvm::toString(r.takeError());
      return;
    }
    (i < nq ? fed.q[i] : i < nq + nkv ? fed.k[i - nq] : fed.v[i - nq - nkv]) = std::move(*r);
  });
  for (auto &e : errors)
    if (e)
      return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s", e->c_str());
  return fed;
}

} // namespace

llvm::Expected<ModelResult> runRouteModel(const AttentionSpec &spec, const AttentionProblem &problem,
                                          const ModelOptions &options) {
  if (auto e = validateProblem(problem, options.selection))
    return e;
  const AttentionShape &s = problem.shape;
  if (auto e = validateSpec(spec, s))
    return e;
  for (const TraceRow &tr : options.trace)
    if (tr.batch < 0 || tr.batch >= s.batch || tr.head < 0 || tr.head >= s.heads_q || tr.row < 0 ||
        tr.row >= s.seqlen_q)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "trace row (batch %d, head %d, row %d) is outside the problem",
                                     tr.batch, tr.head, tr.row);
  const int threads = options.selection.threads;
  auto fed = feedAll(spec, problem, threads);
  if (!fed)
    return fed.takeError();

  const device::DirectPCoefficients coeffs = fit::directpCoefficients(spec.classifier);
  auto inputsFor = [&](int b, int h, int row) {
    detail::RowInputs in;
    in.spec = &spec;
    in.coeffs = coeffs;
    const detail::FedOperand &q = fed->q[static_cast<std::size_t>(b) * s.heads_q + h];
    const std::size_t kv = static_cast<std::size_t>(b) * s.heads_kv + s.kvHead(h);
    in.q = q.row(row);
    in.k = &fed->k[kv];
    in.v = &fed->v[kv];
    in.score_factor = detail::scoreFactor(spec, q.scale, fed->k[kv].scale);
    in.visible = spec.causal ? causalVisibleKeys(row, s.seqlen_q, s.seqlen_k) : s.seqlen_k;
    in.group_visible = spec.causal ? causalVisibleKeys(row - row % 64, s.seqlen_q, s.seqlen_k) : s.seqlen_k;
    return in;
  };

  ModelResult out;
  AttentionResult &res = out.result;
  res.shape = s;
  res.rows = selectedRows(s, options.selection);
  const int nrows = static_cast<int>(res.rows.size());
  res.o.assign(static_cast<std::size_t>(s.batch) * s.heads_q * nrows * s.head_dim, 0.0);
  res.lse.assign(static_cast<std::size_t>(s.batch) * s.heads_q * nrows, 0.0);
  constexpr int kRowsPerItem = 8;
  const int chunks = (nrows + kRowsPerItem - 1) / kRowsPerItem;
  parallelFor(s.batch * s.heads_q * chunks, threads, [&](int item) {
    const int chunk = item % chunks, bh = item / chunks;
    const int b = bh / s.heads_q, h = bh % s.heads_q;
    for (int r = chunk * kRowsPerItem; r < std::min(nrows, (chunk + 1) * kRowsPerItem); ++r) {
      const std::size_t idx = res.rowIndex(b, h, r);
      detail::modelRow(inputsFor(b, h, res.rows[r]), res.o.data() + idx * s.head_dim,
                       res.lse.data() + idx, nullptr);
    }
  });

  out.traces.resize(options.trace.size());
  parallelFor(static_cast<int>(options.trace.size()), threads, [&](int i) {
    const TraceRow &tr = options.trace[i];
    std::vector<double> o(s.head_dim);
    double lse = 0;
    out.traces[i].where = tr;
    detail::modelRow(inputsFor(tr.batch, tr.head, tr.row), o.data(), &lse, &out.traces[i]);
  });
  return out;
}

} // namespace fa4jit::cpu
