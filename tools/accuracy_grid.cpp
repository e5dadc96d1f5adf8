// The accuracy experiment: Gaussian inputs, FP64 reference, route models, agreement metrics.
#include "accuracy_grid.h"

#include <cmath>

#include "fa4jit/codegen/classifier_fit.h"
#include "fa4jit/codegen/gaussian_rng.h"
#include "fa4jit/codegen/heuristics.h"
#include "fa4jit/codegen/spec_validate.h"
#include "fa4jit/cpu/model.h"
#include "fa4jit/cpu/reference.h"

namespace fa4jit::tools {

std::vector<float> gaussian(std::size_t n, double sigma, uint64_t seed) {
  GaussianRng rng(seed);
  std::vector<float> v(n);
  for (float &x : v)
    x = static_cast<float>(rng.normal() * sigma);
  return v;
}

namespace {

bool knownVariant(const std::string &v) {
  for (const char *k : kClassifierVariants)
    if (v == k)
      return true;
  return false;
}

} // namespace

llvm::Error validateGrid(const AccuracyGrid &g) {
  auto err = [](const std::string &m) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s", m.c_str());
  };
  if (g.sigmas.empty() || g.seqlens.empty() || g.head_dims.empty() || g.causal.empty() ||
      g.routes.empty())
    return err("the accuracy grid has an empty axis");
  for (double s : g.sigmas)
    if (!std::isfinite(s) || s <= 0)
      return err("sigma must be finite and > 0, got " + std::to_string(s));
  for (int n : g.seqlens)
    if (n < 1)
      return err("seqlen must be >= 1, got " + std::to_string(n));
  for (int d : g.head_dims)
    if (d != 64 && d != 128 && d != 256)
      return err("unsupported head dim " + std::to_string(d) + " (supported: 64, 128, 256)");
  if (g.rows < 1)
    return err("rows must be >= 1, got " + std::to_string(g.rows));
  for (const std::string &c : g.classifiers)
    if (!knownVariant(c))
      return err("unknown classifier '" + c + "' (piecewise, threshold, affine, affine-a2, mixed)");
  return llvm::Error::success();
}

llvm::Expected<ClassifierSpec> classifierForVariant(const std::string &variant, double sigma,
                                                   int seqlen, bool causal, uint64_t seed) {
  ClassifierSpec c;
  if (variant == "threshold" || variant == "piecewise") { // nothing to fit: the spec's defaults
    c.kind = variant == "threshold" ? ClassifierKind::Threshold : ClassifierKind::Piecewise;
    return c;
  }
  // Q, K ~ N(0, sigma^2) and scale 1/sqrt(D): q.k * scale ~ N(0, sigma^4) for every D.
  fit::GaussianScoreModel model;
  model.seqlen = seqlen;
  model.score_sigma = sigma * sigma;
  model.causal = causal;
  model.seed = seed;
  auto rows = fit::sampleGaussianScores(model);
  if (!rows)
    return rows.takeError();
  fit::FitOptions o;
  o.kind = variant == "mixed" ? ClassifierKind::Mixed : ClassifierKind::Affine;
  o.fit_alpha = variant != "affine-a2";
  auto r = fit::fitClassifier(*rows, o);
  if (!r)
    return r.takeError();
  return r->classifier;
}

GridPointInputs gridPointInputs(const AccuracyGrid &g, double sigma, int seqlen, int dim, bool causal) {
  GridPointInputs in;
  const std::size_t n = static_cast<std::size_t>(seqlen) * dim;
  in.q = gaussian(n, sigma, g.seed * 3 + 0);
  in.k = gaussian(n, sigma, g.seed * 3 + 1);
  in.v = gaussian(n, sigma, g.seed * 3 + 2);
  in.problem.shape = {1, 1, 1, seqlen, seqlen, dim};
  in.problem.q = cpu::TensorRef::contiguous(in.q.data(), 1, seqlen, dim);
  in.problem.k = cpu::TensorRef::contiguous(in.k.data(), 1, seqlen, dim);
  in.problem.v = cpu::TensorRef::contiguous(in.v.data(), 1, seqlen, dim);
  in.reference.causal = causal;
  in.reference.selection.threads = g.threads;
  const int nrows = std::min(g.rows, seqlen);
  for (int i = 0; i < nrows; ++i)
    in.reference.selection.rows.push_back(static_cast<int>((i + 0.5) * seqlen / nrows));
  return in;
}

llvm::Error forEachGridPoint(const AccuracyGrid &g, const std::function<void(int, int)> &progress,
                             const std::function<llvm::Error(double, int, int, bool)> &fn) {
  const int total = static_cast<int>(g.sigmas.size() * g.seqlens.size() * g.head_dims.size() * g.causal.size());
  int done = 0;
  for (double sigma : g.sigmas)
    for (int seqlen : g.seqlens)
      for (int dim : g.head_dims)
        for (bool causal : g.causal) {
          if (llvm::Error e = fn(sigma, seqlen, dim, causal))
            return e;
          if (progress)
            progress(++done, total);
        }
  return llvm::Error::success();
}

llvm::Expected<std::vector<AccuracyRow>>
runAccuracyGrid(const AccuracyGrid &g, const std::function<void(int, int)> &progress) {
  if (auto e = validateGrid(g))
    return e;
  std::vector<AccuracyRow> out;
  llvm::Error walked = forEachGridPoint(g, progress, [&](double sigma, int seqlen, int dim, bool causal) -> llvm::Error {
    const GridPointInputs in = gridPointInputs(g, sigma, seqlen, dim, causal);
    const cpu::AttentionProblem &p = in.problem;
    const cpu::RowSelection &sel = in.reference.selection;
    auto ref = cpu::referenceAttention(p, in.reference);
    if (!ref)
      return ref.takeError();
    AttentionSpec spec;
    spec.head_dim = dim;
    spec.causal = causal;
    spec.operands.qk_widening = g.qk_widening;
    cpu::ModelOptions mo;
    mo.selection = sel;
    spec.route = Route::Bf16; // the BF16 route as it runs (its own range guard)
    applyRouteNumericsDefaults(spec);
    auto bf16 = cpu::runRouteModel(spec, p, mo);
    if (!bf16)
      return bf16.takeError();

    auto add = [&](const RoutePreset &preset, const std::string &cname, const ClassifierSpec &c) -> llvm::Error {
      const Route route = preset.route;
      spec.route = route;
      spec.classifier = c;
      spec.operands.qk_format = preset.qk_format;
      spec.operands.qk_widening = preset.qk_format == QkFormat::E4m3 ? Widening::E4m3 : g.qk_widening;
      applyRouteNumericsDefaults(spec);
      if (g.guard_slack_log2)
        setGuardSlack(spec, *g.guard_slack_log2);
      const bool fp16 = g.scores_fp16 && route != Route::Bf16 && spec.operands.qk_widening == Widening::E4m3;
      spec.tile.softmax.scores_fp16 = fp16;
      spec.operands.qk_widen_shift = fp16 ? minScoresFp16WidenShift(dim) : OperandSpec{}.qk_widen_shift;
      auto m = cpu::runRouteModel(spec, p, mo);
      if (!m)
        return m.takeError();
      const cpu::Agreement vs_ref = cpu::compareOutputs(m->result, *ref);
      const cpu::Agreement vs_bf16 = cpu::compareOutputs(m->result, bf16->result);
      AccuracyRow row;
      row.route = toString(preset);
      row.classifier = cname;
      row.coefficients = c;
      row.sigma = sigma;
      row.seqlen = seqlen;
      row.head_dim = dim;
      row.causal = causal;
      row.cos_vs_fp64 = vs_ref.cosine;
      row.cos_vs_bf16 = vs_bf16.cosine;
      row.rel_l2_vs_fp64 = vs_ref.rel_l2;
      row.rel_l2_vs_bf16 = vs_bf16.rel_l2;
      out.push_back(row);
      return llvm::Error::success();
    };
    for (const RoutePreset &preset : g.routes) {
      if (preset.route != Route::DirectP) {
        if (auto e = add(preset, "none", ClassifierSpec{}))
          return e;
        continue;
      }
      for (const std::string &variant : g.classifiers) {
        auto c = classifierForVariant(variant, sigma, seqlen, causal, g.seed);
        if (!c)
          return c.takeError();
        if (auto e = add(preset, variant, *c))
          return e;
      }
    }
    return llvm::Error::success();
  });
  if (walked)
    return walked;
  return out;
}

} // namespace fa4jit::tools
