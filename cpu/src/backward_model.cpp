// The training route's backward (docs/NUMERICS.md §3): P rebuilt from the forward's NVFP4 Q/K and
// LSE, dO in E4M3 with a per-head scale, P and V fed in the BackwardSpec's format to dV = P^T dO
// and dP = dO V^T, dS in BF16 against the spec's BF16 Q and K for dQ and dK.
#include <cmath>
#include <limits>

#include "fa4jit/codegen/formats.h"
#include "fa4jit/cpu/backward.h"
#include "model_internal.h"
#include "parallel.h"

namespace fa4jit::cpu {

namespace {

template <typename... Ts> llvm::Error backwardError(const char *fmt, const Ts &...vals) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), fmt, vals...);
}

constexpr int kPBlock = 32; // queries per MXFP4 block of P (blocked along dV's reduction)

llvm::Error validateBackwardSpec(const BackwardSpec &spec, const AttentionShape &shape) {
  const AttentionSpec &f = spec.forward;
  if (f.route != Route::Nvfp8)
    return backwardError("the backward reads the nvfp8 training forward's operands (forward.route is %s)",
                         toString(f.route));
  if (f.head_dim != 64 && f.head_dim != 128 && f.head_dim != 256)
    return backwardError("unsupported head_dim %d (64, 128 or 256)", f.head_dim);
  if (f.head_dim != shape.head_dim)
    return backwardError("spec head_dim %d differs from the tensors' head_dim %d", f.head_dim, shape.head_dim);
  if (!std::isfinite(f.softmax_scale) || f.softmax_scale < 0)
    return backwardError("softmax_scale %g must be finite and >= 0 (0: 1/sqrt(head_dim))",
                         static_cast<double>(f.softmax_scale));
  if (f.operands.qk_widening == Widening::Native)
    return backwardError("the sm_90a backward widens Q/K to e4m3 or bf16, not native FP4");
  if (f.operands.qk_widening == Widening::E4m3 && (f.operands.qk_widen_shift < 3 || f.operands.qk_widen_shift > 16))
    return backwardError("operands.qk_widen_shift %d outside [3, 16]", f.operands.qk_widen_shift);
  // P <= ~1.07 (module comment of BackwardSpec): 2^8 keeps the largest fed P below 448.
  if (spec.p_offset_log2 < 0 || spec.p_offset_log2 > 8)
    return backwardError("p_offset_log2 %d outside [0, 8] (P * 2^offset must stay below 448)", spec.p_offset_log2);
  return llvm::Error::success();
}

llvm::Error checkLse(const float *lse, const AttentionShape &s) {
  if (!lse)
    return backwardError("LSE has no data");
  const std::size_t n = static_cast<std::size_t>(s.batch) * s.heads_q * s.seqlen_q;
  for (std::size_t i = 0; i < n; ++i)
    if (std::isnan(lse[i]) || lse[i] == std::numeric_limits<float>::infinity())
      return backwardError("LSE element %zu is %g (finite, or -inf for a row without a visible key)", i,
                           static_cast<double>(lse[i]));
  return llvm::Error::success();
}

// V of one kv head as dP = dO V^T consumes it, [Sk, D] row-major, with the factor applied outside:
// what the forward saved, read back. E4M3 P/V: the nvfp8 forward's per-head E4M3 V^T. MXFP4 P/V:
// directp's MXFP4 V^T (blocked along keys), widened exactly to E4M3 with its v_shift.
llvm::Expected<detail::FedOperand> feedBackwardV(const BackwardSpec &spec, const TensorRef &v, int b, int h,
                                                 int seqlen, int head_dim) {
  AttentionSpec saved = spec.forward;
  saved.route = spec.pv == BackwardPvFormat::E4m3 ? Route::Nvfp8 : Route::DirectP;
  saved.operands.v_widening = Widening::E4m3;
  return detail::feedV(saved, v, b, h, seqlen, head_dim);
}

// The operands of one head: as the S product reads them (the forward's widening, with the NVFP4
// global scale) and as the dS products read them (BackwardQkOperands; scale 1 for BF16).
struct QKOperands {
  detail::FedOperand widened, grad;
};

llvm::Expected<QKOperands> feedQKBoth(const BackwardSpec &spec, const TensorRef &t, int b, int h, int seqlen,
                                      int head_dim, const char *name) {
  auto widened = detail::feedQK(spec.forward, t, b, h, seqlen, head_dim, name);
  if (!widened)
    return widened.takeError();
  // E2M1 x UE4M3 is exact in BF16: the saved payload decodes without rounding.
  AttentionSpec grad_spec = spec.forward;
  grad_spec.operands.qk_widening = Widening::Bf16;
  if (spec.qk == BackwardQkOperands::Bf16)
    grad_spec.route = Route::Bf16;
  auto grad = detail::feedQK(grad_spec, t, b, h, seqlen, head_dim, name);
  if (!grad)
    return grad.takeError();
  return QKOperands{std::move(*widened), std::move(*grad)};
}

float dot(const float *a, const float *b, int n) { // FP64 sum, rounded once
  double acc = 0;
  for (int d = 0; d < n; ++d)
    acc += static_cast<double>(a[d]) * b[d];
  return static_cast<float>(acc);
}

// The MXFP4 value of x in the block whose largest magnitude is amax (docs/NUMERICS.md §1).
float mxfp4Value(float x, float amax) {
  if (amax == 0.0f)
    return 0.0f;
  const int e = std::max(-127, std::min(127, static_cast<int>(std::floor(std::log2(amax))) - 2));
  return std::ldexp(formats::e2m1ToFloat(formats::floatToE2M1(std::ldexp(x, -e))), e);
}

} // namespace

llvm::Expected<GradientResult> runBackwardModel(const BackwardSpec &spec, const BackwardProblem &problem,
                                                int threads) {
  const AttentionProblem &p = problem.forward;
  if (auto e = validateProblem(p, RowSelection{}))
    return e;
  const AttentionShape &s = p.shape;
  if (auto e = validateBackwardSpec(spec, s))
    return e;
  if (auto e = checkFinite("dO", problem.d_o, s.batch, s.heads_q, s.seqlen_q, s.head_dim))
    return e;
  if (auto e = checkFinite("O", problem.o, s.batch, s.heads_q, s.seqlen_q, s.head_dim))
    return e;
  if (auto e = checkLse(problem.lse, s))
    return e;

  const AttentionSpec &fwd = spec.forward;
  const int D = s.head_dim, group = s.heads_q / s.heads_kv;
  const float softmax_scale = detail::softmaxScale(fwd);
  const float log2e = static_cast<float>(M_LOG2E);
  const float fed_p_scale = std::ldexp(1.0f, spec.p_offset_log2);
  GradientResult out;
  out.shape = s;
  out.dq.assign(static_cast<std::size_t>(s.batch) * s.heads_q * s.seqlen_q * D, 0.0);
  out.dk.assign(static_cast<std::size_t>(s.batch) * s.heads_kv * s.seqlen_k * D, 0.0);
  out.dv.assign(out.dk.size(), 0.0);
  std::vector<std::string> errors(static_cast<std::size_t>(s.batch) * s.heads_kv);

  // One work item per (batch, kv head): it owns dK and dV of that head and dQ of its group.
  parallelFor(s.batch * s.heads_kv, threads, [&](int item) {
    const int b = item / s.heads_kv, kvh = item % s.heads_kv;
    auto k = feedQKBoth(spec, p.k, b, kvh, s.seqlen_k, D, "K");
    if (!k) {
      errors[item] = llvm::toString(k.takeError());
      return;
    }
    auto v = feedBackwardV(spec, p.v, b, kvh, s.seqlen_k, D);
    if (!v) {
      errors[item] = llvm::toString(v.takeError());
      return;
    }
    const std::size_t kv_elems = static_cast<std::size_t>(s.seqlen_k) * D;
    std::vector<float> dk_group(kv_elems, 0.0f), dv_group(kv_elems, 0.0f);
    std::vector<double> dk_acc(kv_elems), dv_acc(kv_elems);
    std::vector<float> prob(static_cast<std::size_t>(kPBlock) * s.seqlen_k), ds_fed(prob.size()), p_fed(prob.size());
    std::vector<double> dq_acc(D);
    for (int h = kvh * group; h < (kvh + 1) * group; ++h) {
      auto q = feedQKBoth(spec, p.q, b, h, s.seqlen_q, D, "Q");
      if (!q) {
        errors[item] = llvm::toString(q.takeError());
        return;
      }
      auto d_o = formats::quantizeFp8PerTensor(detail::headView(problem.d_o, b, h, s.seqlen_q, D), D);
      if (!d_o) {
        errors[item] = llvm::toString(
            backwardError("dO (batch %d, head %d): %s", b, h, llvm::toString(d_o.takeError()).c_str()));
        return;
      }
      std::vector<float> do_fed(static_cast<std::size_t>(s.seqlen_q) * D);
      for (std::size_t i = 0; i < do_fed.size(); ++i)
        do_fed[i] = formats::e4m3ToFloat(d_o->payload[i]);
      const float score_mul = detail::scoreFactor(fwd, q->widened.scale, k->widened.scale);
      const float dp_factor = d_o->scale * v->scale;
      const float dq_factor = softmax_scale * k->grad.scale;
      const float dk_factor = softmax_scale * q->grad.scale;
      const float dv_factor = std::ldexp(d_o->scale, -spec.p_offset_log2);
      std::fill(dk_acc.begin(), dk_acc.end(), 0.0);
      std::fill(dv_acc.begin(), dv_acc.end(), 0.0);
      for (int i0 = 0; i0 < s.seqlen_q; i0 += kPBlock) {
        const int rows = std::min(kPBlock, s.seqlen_q - i0);
        std::fill(prob.begin(), prob.end(), 0.0f);
        std::fill(ds_fed.begin(), ds_fed.end(), 0.0f);
        for (int r = 0; r < rows; ++r) {
          const int i = i0 + r;
          const std::size_t row = (static_cast<std::size_t>(b) * s.heads_q + h) * s.seqlen_q + i;
          const int visible = fwd.causal ? causalVisibleKeys(i, s.seqlen_q, s.seqlen_k) : s.seqlen_k;
          if (visible == 0 || problem.lse[row] == -std::numeric_limits<float>::infinity())
            continue; // (no visible key: O = 0, nothing to differentiate)
          const float lse2 = problem.lse[row] * log2e;
          double delta_acc = 0;
          for (int d = 0; d < D; ++d)
            delta_acc += static_cast<double>(problem.d_o.at(b, h, i, d)) * problem.o.at(b, h, i, d);
          const float delta = static_cast<float>(delta_acc);
          const float *qw = q->widened.row(i), *dor = do_fed.data() + static_cast<std::size_t>(i) * D;
          for (int j = 0; j < visible; ++j) {
            const float acc = dot(qw, k->widened.row(j), D);
            const float pj = static_cast<float>(std::exp2(static_cast<double>(std::fma(acc, score_mul, -lse2))));
            const float dp = dot(dor, v->row(j), D) * dp_factor;
            prob[static_cast<std::size_t>(r) * s.seqlen_k + j] = pj;
            ds_fed[static_cast<std::size_t>(r) * s.seqlen_k + j] = formats::roundToBF16(pj * (dp - delta));
          }
        }
        // P as fed to dV: E4M3(P 2^off), or its MXFP4 value (per key, over the block's queries)
        // widened exactly the same way.
        for (int j = 0; j < s.seqlen_k; ++j) {
          float amax = 0;
          if (spec.pv == BackwardPvFormat::Mxfp4)
            for (int r = 0; r < rows; ++r)
              amax = std::max(amax, prob[static_cast<std::size_t>(r) * s.seqlen_k + j]);
          for (int r = 0; r < rows; ++r) {
            const float pj = prob[static_cast<std::size_t>(r) * s.seqlen_k + j];
            const float value = spec.pv == BackwardPvFormat::Mxfp4 ? mxfp4Value(pj, amax) : pj;
            p_fed[static_cast<std::size_t>(r) * s.seqlen_k + j] = detail::e4m3Round(value * fed_p_scale);
          }
        }
        for (int r = 0; r < rows; ++r) {
          const int i = i0 + r;
          const float *qe = q->grad.row(i), *dor = do_fed.data() + static_cast<std::size_t>(i) * D;
          std::fill(dq_acc.begin(), dq_acc.end(), 0.0);
          for (int j = 0; j < s.seqlen_k; ++j) {
            const float ds = ds_fed[static_cast<std::size_t>(r) * s.seqlen_k + j];
            const float pf = p_fed[static_cast<std::size_t>(r) * s.seqlen_k + j];
            if (ds == 0.0f && pf == 0.0f)
              continue;
            const float *ke = k->grad.row(j);
            double *dk = dk_acc.data() + static_cast<std::size_t>(j) * D;
            double *dv = dv_acc.data() + static_cast<std::size_t>(j) * D;
            for (int d = 0; d < D; ++d) {
              dq_acc[d] += static_cast<double>(ds) * ke[d];
              dk[d] += static_cast<double>(ds) * qe[d];
              dv[d] += static_cast<double>(pf) * dor[d];
            }
          }
          double *dq = out.dq.data() + ((static_cast<std::size_t>(b) * s.heads_q + h) * s.seqlen_q + i) * D;
          for (int d = 0; d < D; ++d)
            dq[d] = formats::roundToBF16(static_cast<float>(dq_acc[d]) * dq_factor);
        }
      }
      // This head's share, in FP32, added to the group's in head order.
      for (std::size_t x = 0; x < kv_elems; ++x) {
        dk_group[x] += static_cast<float>(dk_acc[x]) * dk_factor;
        dv_group[x] += static_cast<float>(dv_acc[x]) * dv_factor;
      }
    }
    const std::size_t base = static_cast<std::size_t>(item) * kv_elems;
    for (std::size_t x = 0; x < kv_elems; ++x) {
      out.dk[base + x] = formats::roundToBF16(dk_group[x]);
      out.dv[base + x] = formats::roundToBF16(dv_group[x]);
    }
  });
  for (const std::string &e : errors)
    if (!e.empty())
      return backwardError("%s", e.c_str());
  return out;
}

} // namespace fa4jit::cpu
