// The autotuner's logic with a deterministic timing source, a fake compiler and fake accuracy:
// tie band, failing candidates, persistence (a second tuner compiles and times nothing), replay
// misses, the accuracy floor; and the CPU-model accuracy probe on a small problem.
#include "expected_checks.h"
#include "tuner_fakes.h"

#include "fa4jit/codegen/heuristics.h"
#include "fa4jit/codegen/spec_io.h"
#include "fa4jit/runtime/tune_timing.h"
#include "fa4jit/runtime/tuner.h"

#include "llvm/Support/FileSystem.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <map>

using namespace fa4jit;
using namespace fa4jit::runtime;

namespace {

using fa4jit::testing::FakeCompiler;
using Scratch = fa4jit::testing::TunerScratch;
cache::TuningIdentity identity() { return fa4jit::testing::tunerTestIdentity(); }

// Deterministic: the time is a function of the spec (an error when it returns NaN).
class FakeTiming : public TimingSource {
public:
  std::function<double(const KernelSpec &)> ms;
  double noise = 0.005;
  int calls = 0;
  std::string describe() const override { return "fake"; }
  llvm::Expected<TimingStats> time(const KernelSpec &spec, const TuneProblem &) override {
    ++calls;
    const double t = ms(spec);
    if (std::isnan(t))
      return llvm::createStringError(llvm::inconvertibleErrorCode(), "CUDA_ERROR_LAUNCH_FAILED (unspecified)");
    return TimingStats{t, t * 0.99, t * 1.02, 20, noise};
  }
};

class FakeAccuracy : public AccuracyProbe {
public:
  std::function<double(const KernelSpec &)> cos;
  int calls = 0;
  std::string describe() const override { return "fake accuracy"; }
  llvm::Expected<double> cosine(const KernelSpec &spec) override {
    ++calls;
    return cos(spec);
  }
};

TuneRequest request(Route route = Route::DirectP, int seqlen = 4096) {
  TuneRequest r;
  r.target = Target::Sm90a;
  r.route = route;
  r.head_dim = 128;
  r.causal = false;
  r.problem.batch = 8;
  r.problem.heads_q = r.problem.heads_kv = 16;
  r.problem.seqlen_q = r.problem.seqlen_k = seqlen;
  return r;
}

bool isMmaN128W8(const KernelSpec &s) {
  return s.attention.tile.schedule.kernel == AttentionSchedule::MmaSync && s.attention.tile.shape.block_n == 128 &&
         s.attention.tile.shape.warps == 8 && s.attention.classifier.kind == ClassifierKind::Threshold &&
         s.attention.operands.qk_widening == Widening::E4m3 && s.attention.guard.kind == GuardKind::SampledAnchor;
}

cache::CandidateResult timed(const std::string &label, double ms, double noise = 0.0) {
  cache::CandidateResult c;
  c.label = label;
  c.ok = true;
  c.median_ms = c.min_ms = c.max_ms = ms;
  c.reps = 10;
  c.noise = noise;
  return c;
}

} // namespace

TEST_CASE("tie band: differences under the noise keep the earlier candidate", "[tuner]") {
  std::vector<cache::CandidateResult> r = {timed("heuristic", 1.00), timed("b", 0.99), timed("c", 1.10)};
  auto s = selectWinner(r, 0.02);
  REQUIRE_OK(s);
  CHECK(s->winner == 0); // 1% faster is inside the 2% band: the heuristic keeps it
  CHECK(s->tied == std::vector<int>{0, 1});
  r[1].median_ms = 0.95;
  s = selectWinner(r, 0.02);
  REQUIRE_OK(s);
  CHECK(s->winner == 1);
  // Noisy measurements widen the band: 7% is not a difference at 10% spread.
  r[1].median_ms = 0.93;
  r[1].noise = 0.10;
  s = selectWinner(r, 0.02);
  REQUIRE_OK(s);
  CHECK(s->winner == 0);
  CHECK(s->band == Approx(0.10));
  // Among later tied candidates the enumeration order decides, not the smaller time.
  std::vector<cache::CandidateResult> t = {timed("h", 2.0), timed("x", 1.005), timed("y", 1.0)};
  s = selectWinner(t, 0.02);
  REQUIRE_OK(s);
  CHECK(s->winner == 1);
}

TEST_CASE("tie band: failures and candidates below the floor never win", "[tuner]") {
  std::vector<cache::CandidateResult> r = {timed("h", 1.0), timed("fast", 0.5), cache::CandidateResult{}};
  r[1].cosine = 0.95;
  r[0].cosine = 0.98;
  r[2].label = "failed";
  r[2].error = "compile: boom";
  auto s = selectWinner(r, 0.02, 0.97);
  REQUIRE_OK(s);
  CHECK(s->winner == 0);
  std::vector<cache::CandidateResult> none = {r[2]};
  auto n = selectWinner(none, 0.02);
  REQUIRE_ERR(n);
  CHECK(llvm::toString(n.takeError()).find("failed: compile: boom") != std::string::npos);
}

TEST_CASE("the tuner times every kept candidate, keeps errors and stores the fastest", "[tuner]") {
  Scratch dir;
  cache::TuningDb db({dir.sub("tuning"), "", true}, identity());
  FakeCompiler compiler;
  FakeTiming timing;
  // mma.sync n128 w8 with the threshold classifier is 30% faster; wgmma n96 fails to compile; the
  // mixed classifiers fail to launch (and would otherwise be fastest).
  compiler.fails = [](const KernelSpec &s) {
    return s.attention.tile.schedule.kernel == AttentionSchedule::WgmmaWarpSpecialized && s.attention.tile.shape.block_n == 96;
  };
  timing.ms = [](const KernelSpec &s) {
    if (s.attention.classifier.kind == ClassifierKind::Mixed)
      return std::nan("");
    return isMmaN128W8(s) ? 0.7 : 1.0;
  };
  Tuner tuner(db, compiler, timing);
  std::vector<std::string> phases;
  TunerOptions options;
  options.progress = [&](const char *phase, size_t, size_t) {
    if (phases.empty() || phases.back() != phase)
      phases.push_back(phase);
  };
  auto out = tuner.tune(request(), options);
  REQUIRE_OK(out);
  const cache::TuningRecord &r = out->record;
  CHECK_FALSE(out->from_database);
  CHECK(out->compiled == int(r.candidates.size()));
  CHECK(out->timed == timing.calls);
  CHECK(phases == std::vector<std::string>{"compile", "time"});
  CHECK(isMmaN128W8(r.winnerResult().spec));
  CHECK(r.heuristic == 0);
  CHECK(specsEqual(r.candidates[0].spec, canonicalize(defaultAttentionSpec(Route::DirectP, 128, false, Target::Sm90a))));
  int compile_failures = 0, launch_failures = 0;
  for (const auto &c : r.candidates) {
    if (c.error.rfind("compile: ptxas", 0) == 0)
      ++compile_failures;
    if (c.error.find("CUDA_ERROR_LAUNCH_FAILED") != std::string::npos)
      ++launch_failures;
    if (!c.ok)
      CHECK(std::isinf(c.median_ms));
  }
  CHECK(compile_failures > 0);
  CHECK(launch_failures > 0);
  CHECK(out->timed == out->compiled - compile_failures);
  CHECK(r.key.seqlen_bucket == 4096);
  CHECK(r.problem == "b8 hq16 hkv16 sq4096 sk4096");
  CHECK(r.identity.nvrtc == identity().nvrtc);
}

TEST_CASE("a second tuner (another process) finds the record and compiles and times nothing", "[tuner]") {
  Scratch dir;
  std::string winner;
  {
    cache::TuningDb db({dir.sub("tuning"), "", true}, identity());
    FakeCompiler compiler;
    FakeTiming timing;
    timing.ms = [](const KernelSpec &s) { return isMmaN128W8(s) ? 0.5 : 1.0; };
    auto out = Tuner(db, compiler, timing).tune(request());
    REQUIRE_OK(out);
    winner = out->record.winnerResult().label;
    CHECK(compiler.specs_seen > 10);
  }
  cache::TuningDb db({dir.sub("tuning"), "", true}, identity());
  FakeCompiler compiler;
  FakeTiming timing;
  timing.ms = [](const KernelSpec &) { return 1.0; };
  Tuner tuner(db, compiler, timing);
  for (int seqlen : {4096, 3000, 2049}) { // one bucket
    auto out = tuner.tune(request(Route::DirectP, seqlen));
    REQUIRE_OK(out);
    CHECK(out->from_database);
    CHECK(out->layer == cache::TuningLayer::User);
    CHECK(out->record.winnerResult().label == winner);
  }
  CHECK(compiler.specs_seen == 0);
  CHECK(timing.calls == 0);
  // --force tunes again (and the fakes now see work).
  TunerOptions force;
  force.force = true;
  auto again = tuner.tune(request(), force);
  REQUIRE_OK(again);
  CHECK_FALSE(again->from_database);
  CHECK(timing.calls > 0);
  CHECK(again->record.winner == 0); // all equal now: the heuristic
}

TEST_CASE("the same timings within noise pick the same kernel twice", "[tuner]") {
  Scratch dir;
  std::vector<std::string> winners;
  for (int run = 0; run < 2; ++run) {
    cache::TuningDb db({dir.sub("tuning" + std::to_string(run)), "", true}, identity());
    FakeCompiler compiler;
    FakeTiming timing;
    // Several candidates within 1% of each other, jittered differently per run.
    timing.ms = [run](const KernelSpec &s) {
      const double jitter = 0.004 * ((s.attention.tile.shape.block_n / 32 + run) % 3);
      return (s.attention.tile.shape.warps == 2 ? 0.8 : 1.0) + jitter;
    };
    auto out = Tuner(db, compiler, timing).tune(request(Route::Nvfp8));
    REQUIRE_OK(out);
    winners.push_back(out->record.winnerResult().label);
  }
  CHECK(winners[0] == winners[1]);
}

TEST_CASE("replay-only: a miss is an error naming the shape, a hit is served", "[tuner]") {
  Scratch dir;
  cache::TuningDb db({dir.sub("tuning"), "", true}, identity());
  FakeCompiler compiler;
  FakeTiming timing;
  timing.ms = [](const KernelSpec &) { return 1.0; };
  Tuner tuner(db, compiler, timing);
  TunerOptions replay;
  replay.replay_only = true;
  auto miss = tuner.tune(request(), replay);
  REQUIRE_ERR(miss);
  const std::string msg = llvm::toString(miss.takeError());
  CHECK(msg.find("FA4JIT_TUNE=replay") != std::string::npos);
  CHECK(msg.find("attention/sm_90a/directp/d128/c0/s4096") != std::string::npos);
  CHECK(msg.find("NVIDIA H200") != std::string::npos);
  CHECK(msg.find(db.userFile()) != std::string::npos);
  CHECK(msg.find("fa4jit tune") != std::string::npos);
  CHECK(compiler.specs_seen == 0);
  CHECK(timing.calls == 0);
  REQUIRE_OK(tuner.tune(request()));
  auto hit = tuner.tune(request(), replay);
  REQUIRE_OK(hit);
  CHECK(hit->from_database);
}

TEST_CASE("accuracy floor: the fastest candidate below it loses to a slower accurate one", "[tuner]") {
  Scratch dir;
  cache::TuningDb db({dir.sub("tuning"), "", true}, identity());
  FakeCompiler compiler;
  FakeTiming timing;
  FakeAccuracy accuracy;
  timing.ms = [](const KernelSpec &s) {
    return s.attention.classifier.kind == ClassifierKind::Affine ? 0.5 : isMmaN128W8(s) ? 0.8 : 1.0;
  };
  accuracy.cos = [](const KernelSpec &s) { return s.attention.classifier.kind == ClassifierKind::Affine ? 0.95 : 0.973; };
  Tuner tuner(db, compiler, timing, &accuracy);
  TunerOptions options;
  options.min_cosine = 0.97;
  auto out = tuner.tune(request(), options);
  REQUIRE_OK(out);
  const cache::TuningRecord &r = out->record;
  CHECK(isMmaN128W8(r.winnerResult().spec));
  CHECK(r.winnerResult().cosine.value_or(0) == 0.973);
  CHECK(r.min_cosine == 0.97);
  CHECK(r.accuracy_source == "fake accuracy");
  int below = 0;
  for (const auto &c : r.candidates)
    if (c.spec.attention.classifier.kind == ClassifierKind::Affine) {
      CHECK_FALSE(c.ok);
      CHECK(c.error.find("below the accuracy floor: cosine 0.95000 < 0.97000") != std::string::npos);
      ++below;
    }
  CHECK(below > 0);
  CHECK(accuracy.calls == int(r.candidates.size()));
  CHECK(compiler.specs_seen == int(r.candidates.size()) - below); // never compiled

  // Without the floor the fast, inaccurate one wins.
  auto speed = Tuner(db, compiler, timing, &accuracy).tune(request(Route::DirectP, 8192));
  REQUIRE_OK(speed);
  CHECK(speed->record.winnerResult().spec.attention.classifier.kind == ClassifierKind::Affine);

  // A floor nobody meets is an error, and nothing is stored.
  TunerOptions impossible;
  impossible.min_cosine = 0.999;
  auto none = tuner.tune(request(Route::DirectP, 1024), impossible);
  REQUIRE_ERR(none);
  const std::string none_msg = llvm::toString(none.takeError());
  INFO(none_msg);
  CHECK(none_msg.find("cosine >= 0.99900") != std::string::npos);
  CHECK_FALSE(db.lookup(Tuner::keyFor(request(Route::DirectP, 1024))));
}

TEST_CASE("an accuracy floor without a probe is refused", "[tuner]") {
  cache::TuningDb db({"", "", true}, identity());
  FakeCompiler compiler;
  FakeTiming timing;
  timing.ms = [](const KernelSpec &) { return 1.0; };
  TunerOptions options;
  options.min_cosine = 0.9;
  auto out = Tuner(db, compiler, timing).tune(request(), options);
  REQUIRE_ERR(out);
  CHECK(llvm::toString(out.takeError()).find("accuracy probe") != std::string::npos);
}

TEST_CASE("CPU-model accuracy: threshold near 0.97, a poor affine classifier lower, warps irrelevant",
          "[tuner][accuracy]") {
  CpuAccuracyOptions o;
  o.seqlen = 256;
  o.rows = 8;
  o.heads = 1;
  CpuModelAccuracy probe(o);
  KernelSpec s = withAttentionSchedule(defaultAttentionSpec(Route::DirectP, 64, false, Target::Sm90a),
                                       AttentionSchedule::MmaSync);
  auto threshold = probe.cosine(s);
  REQUIRE_OK(threshold);
  CHECK(*threshold > 0.95);
  CHECK(*threshold < 1.0);
  KernelSpec wide = s;
  wide.attention.tile.shape.warps = 8;
  wide.attention.tile.shape.block_m = 128;
  auto same = probe.cosine(wide);
  REQUIRE_OK(same);
  CHECK(*same == *threshold);
  KernelSpec poor = s;
  poor.attention.classifier.kind = ClassifierKind::Affine;
  poor.attention.classifier.alpha = 1.25f;
  poor.attention.classifier.beta = 2.0f;
  auto p = probe.cosine(poor);
  REQUIRE_OK(p);
  CHECK(*p < *threshold - 0.01);
  KernelSpec bf16 = withAttentionSchedule(defaultAttentionSpec(Route::Bf16, 64, false, Target::Sm90a),
                                          AttentionSchedule::MmaSync);
  auto b = probe.cosine(bf16);
  REQUIRE_OK(b);
  CHECK(*b > 0.999);
}

TEST_CASE("calibration accuracy judges Direct-P classifiers only", "[tuner][accuracy]") {
  fit::GaussianScoreModel m;
  m.seqlen = 512;
  m.rows = 16;
  auto rows = fit::sampleGaussianScores(m);
  REQUIRE_OK(rows);
  CalibrationAccuracy probe(*rows, "gaussian.json");
  KernelSpec s = defaultAttentionSpec(Route::DirectP, 128, false, Target::Sm90a);
  auto c = probe.cosine(s);
  REQUIRE_OK(c);
  CHECK(*c > 0.9);
  CHECK(*c <= 1.0);
  auto other = probe.cosine(defaultAttentionSpec(Route::Nvfp8, 128, false, Target::Sm90a));
  REQUIRE_ERR(other);
  llvm::consumeError(other.takeError());
}

TEST_CASE("repeat statistics: median, spread and the interquartile noise", "[tuner]") {
  TimingStats t = summarizeRepeats({1.0, 1.1, 0.9, 1.0, 5.0});
  CHECK(t.median_ms == 1.0);
  CHECK(t.min_ms == 0.9);
  CHECK(t.max_ms == 5.0);
  CHECK(t.reps == 5);
  CHECK(t.noise == Approx(0.1)); // one outlier does not widen the band
  TimingStats even = summarizeRepeats({1.0, 2.0});
  CHECK(even.median_ms == 1.5);
}
