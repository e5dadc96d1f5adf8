// Engine::autoRoute: route "auto", the preset a budget runs (runtime/route_tuner.h).
#include "fa4jit/runtime/engine.h"

#include "engine/auto_routes.h"
#include "fa4jit/codegen/spec_validate.h"

namespace fa4jit {

llvm::Expected<Engine::AutoRouteChoice> Engine::autoRoute(int head_dim, bool causal, int seqlen_k,
                                                          const runtime::AccuracyBudget &budget,
                                                          DType inputs) const {
  if (head_dim != 64 && head_dim != 128 && head_dim != 256)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "route auto: head dim %d is not one of 64, 128, 256", head_dim);
  if (seqlen_k < 1)
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "route auto: seqlen_k %d must be positive",
                                   seqlen_k);
  const bool bf16_inputs = inputs == DType::BF16;
  const cache::TuningKey key = runtime::routeTuningKey(target_, head_dim, causal, seqlen_k, budget);
  const std::string name = key.str() + (bf16_inputs ? "" : " " + std::string(toString(inputs)));
  std::lock_guard<std::mutex> lock(auto_routes_->mutex);
  auto remember = [&](AutoRouteChoice c, std::string error) -> llvm::Expected<AutoRouteChoice> {
    auto_routes_->choices[name] = {c, error};
    if (!error.empty())
      return llvm::createStringError(llvm::inconvertibleErrorCode(), error);
    return c;
  };
  if (auto it = auto_routes_->choices.find(name); it != auto_routes_->choices.end()) {
    if (!it->second.error.empty())
      return llvm::createStringError(llvm::inconvertibleErrorCode(), it->second.error);
    return it->second.choice;
  }
  const auto allowed = [&](const RoutePreset &p) { return bf16_inputs || p.route != Route::Bf16; };
  if (auto record = tuning_->lookup(key); record && allowed(runtime::presetOf(record->winnerResult().spec))) {
    AutoRouteChoice c;
    c.preset = runtime::presetOf(record->winnerResult().spec);
    c.predicted_cosine = record->winnerResult().cosine.value_or(0.0);
    c.tuned = true;
    return remember(c, "");
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
    if (!allowed(p))
      return llvm::createStringError(llvm::inconvertibleErrorCode(), "route bf16 reads BF16 inputs; these are %s",
                                     toString(inputs));
    auto spec = attentionSpecFor(p.route, head_dim, causal, seqlen_k, std::nullopt, p.qk_format);
    if (!spec)
      return spec.takeError();
    if (auto err = validateSpec(*spec))
      return err;
    return spec;
  });
  if (!chosen)
    return remember({}, llvm::toString(chosen.takeError()));
  AutoRouteChoice c;
  c.preset = runtime::presetOf(chosen->record.winnerResult().spec);
  c.predicted_cosine = chosen->record.winnerResult().cosine.value_or(0.0);
  return remember(c, "");
}

} // namespace fa4jit
