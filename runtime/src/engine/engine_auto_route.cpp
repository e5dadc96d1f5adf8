// Engine::autoRoute: route "auto", the preset a budget runs (runtime/route_tuner.h).
#include "fa4jit/runtime/engine.h"

#include "engine/auto_routes.h"
#include "fa4jit/codegen/spec_validate.h"

namespace fa4jit {

llvm::Expected<Engine::AutoRouteChoice> Engine::autoRoute(int head_dim, bool causal, int seqlen_k,
                                                          const runtime::AccuracyBudget &budget) const {
  if (head_dim != 64 && head_dim != 128 && head_dim != 256)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "route auto: head dim %d is not one of 64, 128, 256", head_dim);
  if (seqlen_k < 1)
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "route auto: seqlen_k %d must be positive",
                                   seqlen_k);
  const cache::TuningKey key = runtime::routeTuningKey(target_, head_dim, causal, seqlen_k, budget);
  const std::string name = key.str();
  std::lock_guard<std::mutex> lock(auto_routes_->mutex);
  if (auto it = auto_routes_->choices.find(name); it != auto_routes_->choices.end())
    return it->second;
  if (auto record = tuning_->lookup(key)) {
    AutoRouteChoice c;
    c.preset = runtime::presetOf(record->winnerResult().spec);
    c.predicted_cosine = record->winnerResult().cosine.value_or(0.0);
    c.tuned = true;
    auto_routes_->choices[name] = c;
    return c;
  }
  if (config_.tune == runtime::TuneMode::Replay)
    return runtime::replayMiss(*tuning_, key);
  auto &probe = auto_routes_->probes[budget.logit_std];
  if (!probe) {
    runtime::CpuAccuracyOptions options;
    options.sigma = runtime::entrySigmaForLogitStd(budget.logit_std);
    probe = std::make_unique<runtime::CpuModelAccuracy>(options);
  }
  runtime::RouteTuneRequest request;
  request.target = target_;
  request.head_dim = head_dim;
  request.causal = causal;
  request.problem.seqlen_q = request.problem.seqlen_k = seqlen_k;
  request.budget = budget;
  runtime::RouteTuner tuner(*tuning_, *probe);
  auto chosen = tuner.choose(request, [&](const RoutePreset &p) -> llvm::Expected<KernelSpec> {
    auto spec = attentionSpecFor(p.route, head_dim, causal, seqlen_k, std::nullopt, p.qk_format);
    if (!spec)
      return spec.takeError();
    if (auto err = validateSpec(*spec))
      return std::move(err);
    return spec;
  });
  if (!chosen)
    return chosen.takeError();
  AutoRouteChoice c;
  c.preset = runtime::presetOf(chosen->record.winnerResult().spec);
  c.predicted_cosine = chosen->record.winnerResult().cosine.value_or(0.0);
  auto_routes_->choices[name] = c;
  return c;
}

} // namespace fa4jit
