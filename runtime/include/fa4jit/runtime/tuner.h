#pragma once
// The autotuner (docs/ARCHITECTURE.md §8): for one attention shape, enumerate candidates (codegen/
// candidates.h, pruned by the resource model), optionally drop those below an accuracy floor,
// compile the rest in parallel, time them, pick the winner reproducibly and store every result
// in the tuning database, where Engine::attentionSpecFor and the next process find it.
//
// Its three dependencies are interfaces so that CI exercises all of the logic without a GPU:
//   CandidateCompiler  JitCandidateCompiler (KernelJit::getMany) | a fake
//   TimingSource       EngineTimingSource (tune_timing.h)         | a deterministic fake
//   AccuracyProbe      CpuModelAccuracy, CalibrationAccuracy      | a fake
//
//   runtime::JitCandidateCompiler compiler(engine.jit());
//   runtime::EngineTimingSource timing(engine);
//   runtime::Tuner tuner(engine.tuningDb(), compiler, timing);
//   auto outcome = tuner.tune(request);   // from the database when already tuned
#include "fa4jit/cache/tuning_db.h"
#include "fa4jit/codegen/candidates.h"
#include "fa4jit/codegen/spec.h"
#include "fa4jit/runtime/config.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace fa4jit::runtime {

class KernelJit;

// The shape a candidate is timed on (batch and heads fill the GPU; the bucket comes from seqlen_k).
struct TuneProblem {
  int batch = 1, heads_q = 1, heads_kv = 1;
  int seqlen_q = 1, seqlen_k = 1;
  std::string str() const; // "b8 hq16 hkv16 sq4096 sk4096"
};

struct TimingStats {
  double median_ms = 0, min_ms = 0, max_ms = 0;
  int reps = 0;
  double noise = 0; // relative spread of the repeats, (p75 - p25) / median for the real source
};

class TimingSource {
public:
  virtual ~TimingSource();
  virtual std::string describe() const = 0; // stored with the record
  // Times the (already compiled) spec on the problem. An error (launch failure, bad result) makes
  // the candidate infinitely slow, its message kept.
  virtual llvm::Expected<TimingStats> time(const KernelSpec &spec, const TuneProblem &problem) = 0;
};

class CandidateCompiler {
public:
  virtual ~CandidateCompiler();
  // One result per spec, in order (success: compiled or found in the kernel cache).
  virtual std::vector<llvm::Error> compileAll(llvm::ArrayRef<KernelSpec> specs,
                                              const std::function<void(size_t, size_t)> &progress) = 0;
};

// Through the JIT pipeline: parallel NVRTC compiles (or cache hits) via KernelJit::getMany.
class JitCandidateCompiler : public CandidateCompiler {
public:
  explicit JitCandidateCompiler(KernelJit &jit, unsigned threads = 0) : jit_(jit), threads_(threads) {}
  std::vector<llvm::Error> compileAll(llvm::ArrayRef<KernelSpec> specs,
                                      const std::function<void(size_t, size_t)> &progress) override;

private:
  KernelJit &jit_;
  unsigned threads_;
};

class AccuracyProbe {
public:
  virtual ~AccuracyProbe();
  virtual std::string describe() const = 0;
  // Cosine similarity of the spec's output against FP64 (or the source's equivalent), in [-1, 1].
  virtual llvm::Expected<double> cosine(const KernelSpec &spec) = 0;
};

// The route's CPU model (bit-exact with the kernel, docs/NUMERICS.md) against the FP64 reference
// on Gaussian inputs of the shape. Warps and block_m do not change the numerics, so results are
// memoized per numerics (one model run per tile width and numeric option).
struct CpuAccuracyOptions {
  int seqlen = 1024;      // keys (and queries) of the sample problem
  int rows = 32;          // query rows evaluated (spread evenly; the last row always included)
  int heads = 2;
  double sigma = 1.0;     // of the Q, K, V entries
  uint64_t seed = 0x7e57;
};
class CpuModelAccuracy : public AccuracyProbe {
public:
  explicit CpuModelAccuracy(CpuAccuracyOptions options = {});
  ~CpuModelAccuracy() override;
  std::string describe() const override;
  llvm::Expected<double> cosine(const KernelSpec &spec) override;

private:
  struct State;
  CpuAccuracyOptions options_;
  std::unique_ptr<State> state_;
};

// Direct-P only: 1 - the classifier's cosine objective (classifier_fit.h) on captured scores,
// i.e. the expected output cosine of the Direct-P weights against exact softmax weights for
// values independent of the scores. Other routes are an error (no classifier to judge).
class CalibrationAccuracy : public AccuracyProbe {
public:
  CalibrationAccuracy(fit::ScoreRows rows, std::string source) : rows_(std::move(rows)), source_(std::move(source)) {}
  std::string describe() const override { return "calibration " + source_; }
  llvm::Expected<double> cosine(const KernelSpec &spec) override;

private:
  fit::ScoreRows rows_;
  std::string source_;
};

struct TuneRequest {
  Target target = Target::Sm90a;
  Route route = Route::DirectP;
  int head_dim = 128;
  bool causal = false;
  TuneProblem problem; // timed shape; key bucket = seqlenBucket(problem.seqlen_k)
  CandidateSpace space;
};

struct TunerOptions {
  double min_tie_band = 0.02;        // relative; the band is max(this, the contenders' noise)
  std::optional<double> min_cosine;  // accuracy floor; needs an AccuracyProbe
  bool force = false;                // re-tune even when the database has the shape
  bool replay_only = false;          // never tune: a miss is an error (FA4JIT_TUNE=replay)
  // Called as work advances: phase ("accuracy", "compile", "time"), done, total.
  std::function<void(const char *, size_t, size_t)> progress;
};

struct TuneOutcome {
  cache::TuningRecord record;
  bool from_database = false;
  cache::TuningLayer layer = cache::TuningLayer::User; // where it came from / was stored
  int compiled = 0; // candidates handed to the compiler
  int timed = 0;    // candidates handed to the timing source
  int accuracy_evaluations = 0;
};

// The tie-band choice over results in the fixed order (the heuristic's first, then enumeration
// order): among candidates that succeeded (and, with a floor, meet it), those whose median is
// within max(min_band, noise of the fastest, own noise) of the fastest median are tied, and the
// first of them in order wins. So noise-level differences never flip the choice between runs.
struct Selection {
  int winner = -1;
  double band = 0; // the fastest's band (max(min_band, its noise))
  std::vector<int> tied;
};
llvm::Expected<Selection> selectWinner(llvm::ArrayRef<cache::CandidateResult> results, double min_band,
                                       std::optional<double> min_cosine = std::nullopt);

class Tuner {
public:
  Tuner(cache::TuningDb &db, CandidateCompiler &compiler, TimingSource &timing, AccuracyProbe *accuracy = nullptr)
      : db_(db), compiler_(compiler), timing_(timing), accuracy_(accuracy) {}

  llvm::Expected<TuneOutcome> tune(const TuneRequest &request, const TunerOptions &options = {});

  static cache::TuningKey keyFor(const TuneRequest &request);

private:
  cache::TuningDb &db_;
  CandidateCompiler &compiler_;
  TimingSource &timing_;
  AccuracyProbe *accuracy_;
};

// Where a configuration's tuning files live: <user cache dir>/tuning (none when the disk cache is
// disabled) and <system cache dir>/tuning.
cache::TuningDbConfig tuningDbConfigFor(const RuntimeConfig &config);

// The error of a replay-only miss, shared by the tuner and Engine::attentionSpecFor: names the
// key, the device and the files searched, and how to fill them.
llvm::Error replayMiss(const cache::TuningDb &db, const cache::TuningKey &key);

} // namespace fa4jit::runtime
