// RouteTuner (route_tuner.h): route "auto", the fastest preset that meets an accuracy budget.
#include "fa4jit/runtime/route_tuner.h"

#include "fa4jit/codegen/candidates.h"
#include "tune_common.h"

#include "llvm/Support/FormatVariadic.h"

#include <cmath>

namespace fa4jit::runtime {

double entrySigmaForLogitStd(double logit_std) { return std::sqrt(logit_std); }

llvm::Error checkAccuracyBudget(const AccuracyBudget &b) {
  if (!(b.min_cosine > -1.0 && b.min_cosine <= 1.0))
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   llvm::formatv("route auto: min_cosine {0} is not in (-1, 1]", b.min_cosine).str());
  if (!(b.logit_std > 0.0) || !std::isfinite(b.logit_std))
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        llvm::formatv("route auto: logit_std {0} must be positive and finite", b.logit_std).str());
  return llvm::Error::success();
}

cache::TuningKey routeTuningKey(Target target, int head_dim, bool causal, int seqlen_k, const AccuracyBudget &b) {
  cache::TuningKey k;
  k.family = KernelFamily::AttentionForward;
  k.target = target;
  k.head_dim = head_dim;
  k.causal = causal;
  k.seqlen_bucket = seqlenBucket(seqlen_k);
  k.route_auto = true;
  k.min_cosine = b.min_cosine;
  k.logit_std = b.logit_std;
  return k;
}

RoutePreset presetOf(const KernelSpec &spec) {
  const AttentionSpec &a = spec.attention;
  return {a.route, a.route == Route::Bf16 ? QkFormat::Nvfp4 : a.operands.qk_format};
}

namespace {
llvm::Error fail(const std::string &m) { return llvm::createStringError(llvm::inconvertibleErrorCode(), m); }
} // namespace

llvm::Expected<TuneOutcome> RouteTuner::choose(const RouteTuneRequest &r, const SpecFor &spec_for,
                                               const TunerOptions &options) {
  const AccuracyBudget &b = r.budget;
  if (llvm::Error e = checkAccuracyBudget(b))
    return e;
  const cache::TuningKey key = routeTuningKey(r.target, r.head_dim, r.causal, r.problem.seqlen_k, b);
  TuneOutcome out;
  const bool timed = timing_ != nullptr && compiler_ != nullptr;
  if (timed) { // (an untimed choice is never stored, so there is nothing to reuse)
    auto reused = reuseRecord(db_, key, options, out);
    if (!reused)
      return reused.takeError();
    if (*reused)
      return out;
  }
  auto progress = [&](const char *phase, size_t done, size_t total) {
    if (options.progress)
      options.progress(phase, done, total);
  };
  cache::TuningRecord &rec = out.record;
  rec.key = key;
  rec.heuristic = 0;
  rec.min_cosine = b.min_cosine;
  rec.accuracy_source = accuracy_.describe();
  const std::vector<RoutePreset> order = routePreferenceOrder(r.target);
  for (size_t i = 0; i < order.size(); ++i) {
    progress("accuracy", i + 1, order.size());
    auto spec = spec_for(order[i]);
    if (!spec) {
      rec.pruned.push_back({toString(order[i]), llvm::toString(spec.takeError())});
      continue;
    }
    cache::CandidateResult c;
    c.spec = *spec;
    c.label = toString(order[i]);
    auto cos = accuracy_.cosine(*spec);
    ++out.accuracy_evaluations;
    if (!cos) {
      c.error = "accuracy: " + clipped(llvm::toString(cos.takeError()));
    } else {
      c.cosine = *cos;
      if (*cos < b.min_cosine)
        c.error = llvm::formatv("predicted cosine {0:f4} is below min_cosine {1}", *cos, b.min_cosine).str();
    }
    rec.candidates.push_back(std::move(c));
  }
  int most_accurate = -1;
  for (size_t i = 0; i < rec.candidates.size(); ++i)
    if (rec.candidates[i].cosine &&
        (most_accurate < 0 || *rec.candidates[i].cosine > *rec.candidates[size_t(most_accurate)].cosine))
      most_accurate = int(i);
  const auto meets = [&](const cache::CandidateResult &c) { return c.cosine && *c.cosine >= b.min_cosine; };
  if (std::none_of(rec.candidates.begin(), rec.candidates.end(), meets))
    return fail(llvm::formatv("route auto: no route meets min_cosine {0} at logit std {1} (d{2}, {3}): the most "
                              "accurate, {4}, is predicted at {5:f4}",
                              b.min_cosine, b.logit_std, r.head_dim, r.causal ? "causal" : "non-causal",
                              most_accurate < 0 ? "none" : rec.candidates[size_t(most_accurate)].label,
                              most_accurate < 0 ? 0.0 : *rec.candidates[size_t(most_accurate)].cosine));
  if (!timed) {
    for (size_t i = 0; i < rec.candidates.size(); ++i)
      if (meets(rec.candidates[i])) {
        rec.winner = int(i);
        break;
      }
    return out;
  }
  // Every preset that meets the budget, compiled, then timed from BF16 tensors.
  std::vector<KernelSpec> specs;
  std::vector<size_t> which;
  for (size_t i = 0; i < rec.candidates.size(); ++i)
    if (meets(rec.candidates[i]) && rec.candidates[i].error.empty()) {
      specs.push_back(rec.candidates[i].spec);
      which.push_back(i);
    }
  out.compiled = int(specs.size());
  std::vector<llvm::Error> compiled =
      compiler_->compileAll(specs, [&](size_t done, size_t total) { progress("compile", done, total); });
  for (size_t j = 0; j < which.size(); ++j) {
    cache::CandidateResult &c = rec.candidates[which[j]];
    if (j >= compiled.size()) {
      c.error = "compile: the compiler returned no result";
      continue;
    }
    if (compiled[j]) {
      c.error = "compile: " + clipped(llvm::toString(std::move(compiled[j])));
      continue;
    }
    progress("time", j + 1, which.size());
    auto t = timing_->time(c.spec, r.problem);
    ++out.timed;
    if (!t) {
      c.error = "launch: " + clipped(llvm::toString(t.takeError()));
      continue;
    }
    recordTime(c, *t);
  }
  for (size_t j = which.size(); j < compiled.size(); ++j)
    llvm::consumeError(std::move(compiled[j]));
  auto chosen = selectWinner(rec.candidates, options.min_tie_band, b.min_cosine);
  if (!chosen)
    return fail("tuning " + key.str() + ": " + llvm::toString(chosen.takeError()));
  if (llvm::Error e = storeRecord(db_, *chosen, timing_->describe(), r.problem.str(), out))
    return e;
  return out;
}

} // namespace fa4jit::runtime
