#pragma once
// Route "auto" (docs/TUNING.md, "Route auto"): for one attention shape and an accuracy budget, the
// fastest route preset (codegen/route_presets.h) whose predicted accuracy meets the budget.
//
// Accuracy is predicted, never measured on the caller's data: the presets' CPU models (bit-exact
// with their kernels) against FP64 on Gaussian Q, K, V whose logits q·k·softmax_scale have the
// budget's standard deviation (entries of standard deviation sqrt(logit_std)). Speed is measured
// when a timing source is given (`fa4jit tune --auto`: each preset that meets the budget, called
// from BF16 tensors, the winner stored in the tuning database under the budget's key); otherwise
// the presets are taken in routePreferenceOrder, fastest first by the measured forward.
//
// As with the other tuners, the compiler, timing source and accuracy probe are interfaces, so CI
// exercises the choice with fakes.
#include "fa4jit/cache/tuning_db.h"
#include "fa4jit/codegen/route_presets.h"
#include "fa4jit/runtime/tuner.h"

#include <functional>

namespace fa4jit::runtime {

struct AccuracyBudget {
  double min_cosine = 0.98; // of O against FP64, as the CPU models predict it
  // Standard deviation of the logits q·k·softmax_scale the calls will see (1 for unit-variance
  // Q and K with the default scale; a calibration's measured scores give it for a real model).
  double logit_std = 1.0;
};

// A budget's values in range: min_cosine in (-1, 1], logit_std positive and finite.
llvm::Error checkAccuracyBudget(const AccuracyBudget &budget);

// The Gaussian model's entry standard deviation at a logit standard deviation: q·k / sqrt(D) of
// N(0, s^2) entries has standard deviation s^2.
double entrySigmaForLogitStd(double logit_std);

struct RouteTuneRequest {
  Target target = Target::Sm90a;
  int head_dim = 128;
  bool causal = false;
  TuneProblem problem; // timed shape; key bucket = seqlenBucket(problem.seqlen_k)
  AccuracyBudget budget;
};

// The record's key: "attention/<target>/auto/d<D>/c<causal>/s<bucket>/cos<min>/lstd<std>".
cache::TuningKey routeTuningKey(Target target, int head_dim, bool causal, int seqlen_k, const AccuracyBudget &budget);

// The preset a record's (or a choice's) spec runs.
RoutePreset presetOf(const KernelSpec &spec);

class RouteTuner {
public:
  // The spec each preset runs at the request's shape (the engine's choice: tuned or heuristic).
  using SpecFor = std::function<llvm::Expected<KernelSpec>(const RoutePreset &)>;

  RouteTuner(cache::TuningDb &db, AccuracyProbe &accuracy, CandidateCompiler *compiler = nullptr,
             TimingSource *timing = nullptr)
      : db_(db), accuracy_(accuracy), compiler_(compiler), timing_(timing) {}

  // The candidates in routePreferenceOrder, each with its predicted cosine (a preset whose spec
  // does not exist on the target is pruned); then, with a timing source (and a compiler), every
  // preset that meets the budget compiled and timed, the winner chosen within the noise band (ties
  // to the preference order) and the record stored; without one, the first that meets the budget
  // wins and nothing is stored. An error when no preset meets the budget, naming the most
  // accurate. TunerOptions' tie band, force, replay_only and progress apply.
  llvm::Expected<TuneOutcome> choose(const RouteTuneRequest &request, const SpecFor &spec_for,
                                     const TunerOptions &options = {});

private:
  cache::TuningDb &db_;
  AccuracyProbe &accuracy_;
  CandidateCompiler *compiler_;
  TimingSource *timing_;
};

} // namespace fa4jit::runtime
