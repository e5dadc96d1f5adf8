// Route "auto" with fakes: the presets in their order, the predicted choice, the timed choice within
// the budget (stored, then reused), pruned presets, the error when nothing meets the budget, and the
// records' keys; with the real CPU models, the choices at three logit scales.
#include "expected_checks.h"
#include "tuner_fakes.h"

#include "fa4jit/codegen/heuristics.h"
#include "fa4jit/codegen/spec_validate.h"
#include "fa4jit/runtime/route_tuner.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <string>

using namespace fa4jit;
using namespace fa4jit::runtime;

namespace {

using fa4jit::testing::FakeCompiler;
using Scratch = fa4jit::testing::TunerScratch;

// A cosine per preset name.
class FakeAccuracy : public AccuracyProbe {
public:
  std::map<std::string, double> cosines;
  int calls = 0;
  std::string describe() const override { return "fake accuracy"; }
  llvm::Expected<double> cosine(const KernelSpec &spec) override {
    ++calls;
    return cosines.at(toString(presetOf(spec)));
  }
};

// A time per preset name.
class FakeTiming : public TimingSource {
public:
  std::map<std::string, double> ms;
  std::vector<std::string> timed;
  std::string describe() const override { return "fake timing"; }
  llvm::Expected<TimingStats> time(const KernelSpec &spec, const TuneProblem &) override {
    timed.push_back(toString(presetOf(spec)));
    TimingStats t;
    t.median_ms = t.min_ms = t.max_ms = ms.at(timed.back());
    t.reps = 5;
    return t;
  }
};

RouteTuneRequest request(double min_cosine, double logit_std) {
  RouteTuneRequest r;
  r.head_dim = 128;
  r.problem.batch = 8, r.problem.heads_q = r.problem.heads_kv = 16;
  r.problem.seqlen_q = r.problem.seqlen_k = 4096;
  r.budget = {min_cosine, logit_std};
  return r;
}

llvm::Expected<KernelSpec> defaultSpec(const RoutePreset &p) {
  return withQkFormat(defaultAttentionSpecForKeys(p.route, 128, false, Target::Sm90a, 4096), p.qk_format);
}

} // namespace

TEST_CASE("route auto: the presets fastest first, E4M3 Q/K on sm_90a only", "[tuner][auto]") {
  std::vector<std::string> names;
  for (const RoutePreset &p : routePreferenceOrder(Target::Sm90a))
    names.push_back(toString(p));
  CHECK(names == std::vector<std::string>{"directp", "fp8-directp", "nvfp8", "fp8", "bf16"});
  names.clear();
  for (const RoutePreset &p : routePreferenceOrder(Target::Sm100a))
    names.push_back(toString(p));
  CHECK(names == std::vector<std::string>{"directp", "nvfp8", "bf16"});
  CHECK(routePreferenceOrder(Target::Sm80).size() == 1);
  CHECK(entrySigmaForLogitStd(16.0) == 4.0);
}

TEST_CASE("route auto: untimed, the first preset that meets the budget; nothing stored", "[tuner][auto]") {
  cache::TuningDb db({}, fa4jit::testing::tunerTestIdentity());
  FakeAccuracy acc;
  acc.cosines = {{"directp", 0.97}, {"fp8-directp", 0.982}, {"nvfp8", 0.989}, {"fp8", 0.998}, {"bf16", 1.0}};
  RouteTuner tuner(db, acc);
  auto out = tuner.choose(request(0.98, 1.0), defaultSpec);
  REQUIRE_OK(out);
  CHECK(out->record.winnerResult().label == "fp8-directp");
  CHECK(presetOf(out->record.winnerResult().spec) == RoutePreset{Route::DirectP, QkFormat::E4m3});
  CHECK(*out->record.winnerResult().cosine == 0.982);
  CHECK(out->timed == 0);
  CHECK_THAT(out->record.candidates[0].error, Catch::Contains("below min_cosine"));
  CHECK_FALSE(db.lookup(out->record.key).has_value());
  auto strict = tuner.choose(request(0.999, 1.0), defaultSpec);
  REQUIRE_OK(strict);
  CHECK(strict->record.winnerResult().label == "bf16");
  // Nothing meets it: the error names the most accurate.
  acc.cosines["bf16"] = 0.995;
  auto none = tuner.choose(request(0.999, 1.0), defaultSpec);
  REQUIRE_FALSE(static_cast<bool>(none));
  CHECK_THAT(llvm::toString(none.takeError()), Catch::Contains("the most accurate, fp8, is predicted at 0.9980"));
  // Bad budgets.
  for (auto [cos, lstd] : {std::pair{1.5, 1.0}, {0.98, 0.0}, {0.98, NAN}}) {
    auto bad = tuner.choose(request(cos, lstd), defaultSpec);
    REQUIRE_FALSE(static_cast<bool>(bad));
    CHECK_THAT(llvm::toString(bad.takeError()), Catch::Contains("route auto"));
  }
}

TEST_CASE("route auto: timed, the fastest that meets the budget, stored and then reused", "[tuner][auto]") {
  Scratch scratch;
  cache::TuningDb db({scratch.sub("tuning"), ""}, fa4jit::testing::tunerTestIdentity());
  FakeAccuracy acc;
  acc.cosines = {{"directp", 0.86}, {"fp8-directp", 0.984}, {"nvfp8", 0.87}, {"fp8", 0.991}, {"bf16", 1.0}};
  FakeCompiler compiler;
  FakeTiming timing;
  timing.ms = {{"fp8-directp", 1.10}, {"fp8", 1.00}, {"bf16", 1.60}};
  RouteTuner tuner(db, acc, &compiler, &timing);
  auto out = tuner.choose(request(0.98, 16.0), defaultSpec);
  REQUIRE_OK(out);
  // The presets below the budget are never compiled or timed.
  CHECK(timing.timed == std::vector<std::string>{"fp8-directp", "fp8", "bf16"});
  CHECK(compiler.specs_seen == 3);
  CHECK(out->record.winnerResult().label == "fp8"); // 10% faster than fp8-directp: outside the tie band
  CHECK(out->record.key.str() == "attention/sm_90a/auto/d128/c0/s4096/cos0.98/lstd16");
  CHECK(out->record.min_cosine == 0.98);
  auto stored = db.lookup(out->record.key);
  REQUIRE(stored.has_value());
  CHECK(stored->winnerResult().label == "fp8");
  CHECK(*stored->winnerResult().cosine == 0.991);
  // A fresh database on the same files finds the record: nothing timed again.
  cache::TuningDb again({scratch.sub("tuning"), ""}, fa4jit::testing::tunerTestIdentity());
  RouteTuner second(again, acc, &compiler, &timing);
  auto reused = second.choose(request(0.98, 16.0), defaultSpec);
  REQUIRE_OK(reused);
  CHECK(reused->from_database);
  CHECK(timing.timed.size() == 3);
  // Within the tie band the preference order decides: fp8-directp first.
  timing.ms["fp8-directp"] = 1.01;
  TunerOptions force;
  force.force = true;
  auto tied = tuner.choose(request(0.98, 16.0), defaultSpec, force);
  REQUIRE_OK(tied);
  CHECK(tied->record.winnerResult().label == "fp8-directp");
  // Another budget is another key.
  CHECK(routeTuningKey(Target::Sm90a, 128, false, 4096, {0.985, 16.0}).str() !=
        routeTuningKey(Target::Sm90a, 128, false, 4096, {0.98, 16.0}).str());
}

TEST_CASE("route auto: presets whose spec does not exist are pruned", "[tuner][auto]") {
  cache::TuningDb db({}, fa4jit::testing::tunerTestIdentity());
  FakeAccuracy acc;
  acc.cosines = {{"directp", 0.97}, {"nvfp8", 0.99}, {"bf16", 1.0}};
  RouteTuner tuner(db, acc);
  auto out = tuner.choose(request(0.98, 1.0), [](const RoutePreset &p) -> llvm::Expected<KernelSpec> {
    if (p.qk_format == QkFormat::E4m3)
      return llvm::createStringError(llvm::inconvertibleErrorCode(), "not on this target");
    return defaultSpec(p);
  });
  REQUIRE_OK(out);
  CHECK(out->record.pruned.size() == 2);
  CHECK(out->record.winnerResult().label == "nvfp8");
}

TEST_CASE("route auto with the CPU models: each logit scale gets the format that holds there", "[tuner][auto]") {
  cache::TuningDb db({}, fa4jit::testing::tunerTestIdentity());
  const auto choice = [&](double min_cosine, double logit_std) {
    CpuAccuracyOptions options;
    options.sigma = entrySigmaForLogitStd(logit_std);
    CpuModelAccuracy acc(options);
    RouteTuner tuner(db, acc);
    auto out = tuner.choose(request(min_cosine, logit_std), [](const RoutePreset &p) -> llvm::Expected<KernelSpec> {
      auto s = defaultSpec(p);
      if (s)
        if (llvm::Error e = validateSpec(*s))
          return e;
      return s;
    });
    REQUIRE_OK(out);
    return out->record.winnerResult().label;
  };
  CHECK(choice(0.95, 1.0) == "directp");  // everything meets a loose budget: the fastest
  CHECK(choice(0.985, 1.0) == "nvfp8");   // FP8 P/V for the last points (directp predicts 0.973)
  CHECK(choice(0.98, 16.0) == "fp8-directp"); // large logits: E4M3 Q/K (NVFP4 Q/K predict 0.87)
  CHECK(choice(0.98, 900.0) == "bf16");   // E4M3 Q/K predict 0.97 at logit std 900
}
