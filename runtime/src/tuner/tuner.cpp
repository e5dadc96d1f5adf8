// The autotuner's flow and its tie-band choice (tuner.h).
#include "fa4jit/runtime/tuner.h"

#include "fa4jit/runtime/kernel_jit.h"
#include "tune_common.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <ctime>

namespace fa4jit::runtime {

TimingSource::~TimingSource() = default;
CandidateCompiler::~CandidateCompiler() = default;
AccuracyProbe::~AccuracyProbe() = default;

namespace {

llvm::Error fail(const std::string &msg) { return llvm::createStringError(llvm::inconvertibleErrorCode(), msg); }

} // namespace

std::string TuneProblem::str() const {
  return llvm::formatv("b{0} hq{1} hkv{2} sq{3} sk{4}", batch, heads_q, heads_kv, seqlen_q, seqlen_k).str();
}

std::vector<llvm::Error> JitCandidateCompiler::compileAll(llvm::ArrayRef<KernelSpec> specs,
                                                          const std::function<void(size_t, size_t)> &progress) {
  std::vector<llvm::Error> out;
  for (auto &result : jit_.getMany(specs, threads_, progress))
    out.push_back(result ? llvm::Error::success() : result.takeError());
  return out;
}

llvm::Expected<Selection> selectWinner(llvm::ArrayRef<cache::CandidateResult> results, double min_band,
                                       std::optional<double> min_cosine) {
  auto eligible = [&](const cache::CandidateResult &c) {
    return c.ok && std::isfinite(c.median_ms) && (!min_cosine || (c.cosine && *c.cosine >= *min_cosine));
  };
  int fastest = -1;
  for (size_t i = 0; i < results.size(); ++i)
    if (eligible(results[i]) && (fastest < 0 || results[i].median_ms < results[size_t(fastest)].median_ms))
      fastest = int(i);
  if (fastest < 0) {
    std::string why;
    for (size_t i = 0; i < results.size() && i < 8; ++i)
      why += "\n  " + results[i].label + ": " +
             (results[i].error.empty() ? std::string("below the accuracy floor") : results[i].error);
    return fail("no candidate succeeded" + (min_cosine ? llvm::formatv(" with cosine >= {0:F5}", *min_cosine).str()
                                                         : std::string()) +
                ":" + why);
  }
  const cache::CandidateResult &best = results[size_t(fastest)];
  Selection s;
  s.band = std::max(min_band, best.noise);
  for (size_t i = 0; i < results.size(); ++i) {
    const cache::CandidateResult &c = results[i];
    if (!eligible(c))
      continue;
    const double band = std::max(s.band, c.noise);
    if (c.median_ms <= best.median_ms * (1.0 + band))
      s.tied.push_back(int(i));
  }
  s.winner = s.tied.front(); // results are in the fixed order: the first tied one wins
  return s;
}

cache::TuningDbConfig tuningDbConfigFor(const RuntimeConfig &config) {
  cache::TuningDbConfig c;
  if (!config.cache.disable_disk && !config.cache.user_dir.empty())
    c.user_dir = config.cache.user_dir + "/" + cache::kTuningDirName;
  if (!config.cache.system_dir.empty())
    c.system_dir = config.cache.system_dir + "/" + cache::kTuningDirName;
  return c;
}

cache::TuningKey Tuner::keyFor(const TuneRequest &request) {
  cache::TuningKey k;
  k.family = KernelFamily::AttentionForward;
  k.target = request.target;
  k.route = request.route;
  k.head_dim = request.head_dim;
  k.causal = request.causal;
  k.seqlen_bucket = seqlenBucket(request.problem.seqlen_k);
  return k;
}

llvm::Error replayMiss(const cache::TuningDb &db, const cache::TuningKey &key) {
  std::string files;
  for (const std::string &f : {db.systemFile(), db.userFile()})
    if (!f.empty())
      files += (files.empty() ? "" : ", ") + f;
  if (files.empty())
    files = "no tuning files (no cache directory)";
  const std::string command =
      key.family == KernelFamily::PagedKv
          ? llvm::formatv("fa4jit tune --decode --head-dim {0} --page-size {1} --value-format {2} --context {3} "
                          "--batch B --q-heads HQ --kv-heads HKV (batch x kv heads x 16-row blocks in the grid "
                          "bucket {4})",
                          key.head_dim, key.page_size, toString(key.value_format), key.seqlen_bucket, key.cta_bucket)
                .str()
      : key.route_auto
          ? llvm::formatv("fa4jit tune --auto --head-dim {0} --causal {1} --seqlen {2} --min-cosine {3} "
                          "--logit-std {4}",
                          key.head_dim, key.causal ? 1 : 0, key.seqlen_bucket, cache::budgetText(key.min_cosine),
                          cache::budgetText(key.logit_std))
                .str()
          : llvm::formatv("fa4jit tune --route {0} --head-dim {1} --causal {2} --seqlen {3}", toString(key.route),
                          key.head_dim, key.causal ? 1 : 0, key.seqlen_bucket)
                .str();
  return fail(llvm::formatv("FA4JIT_TUNE=replay: no tuning record for {0} on {1} ({2} SMs, driver {3}, fa4jit {4}) "
                            "in {5}; run `{6}` on this machine, or ship a system database (docs/TUNING.md)",
                            key.str(), db.identity().device_name, db.identity().sm_count, db.identity().driver,
                            db.identity().fa4jit_version, files, command)
                  .str());
}

llvm::Expected<TuneOutcome> Tuner::tune(const TuneRequest &request, const TunerOptions &options) {
  const cache::TuningKey key = keyFor(request);
  TuneOutcome out;
  auto reused = reuseRecord(db_, key, options, out);
  if (!reused)
    return reused.takeError();
  if (*reused)
    return out;
  if (options.min_cosine && !accuracy_)
    return fail("an accuracy floor (min cosine) needs an accuracy probe");

  auto list = enumerateAttentionCandidates(request.route, request.head_dim, request.causal, request.target,
                                           key.seqlen_bucket, request.space);
  if (!list)
    return list.takeError();
  cache::TuningRecord &rec = out.record;
  rec.key = key;
  rec.heuristic = list->heuristic;
  for (const AttentionCandidate &p : list->pruned)
    rec.pruned.push_back({p.label, p.reason});
  for (const AttentionCandidate &c : list->kept) {
    cache::CandidateResult r;
    r.spec = c.spec;
    r.label = c.label;
    rec.candidates.push_back(std::move(r));
  }
  auto progress = [&](const char *phase, size_t done, size_t total) {
    if (options.progress)
      options.progress(phase, done, total);
  };

  // Accuracy first: a candidate below the floor is not worth a compile.
  std::vector<size_t> todo;
  for (size_t i = 0; i < rec.candidates.size(); ++i) {
    cache::CandidateResult &c = rec.candidates[i];
    if (accuracy_ && options.min_cosine) {
      auto cos = accuracy_->cosine(c.spec);
      ++out.accuracy_evaluations;
      progress("accuracy", i + 1, rec.candidates.size());
      if (!cos) {
        c.error = "accuracy: " + clipped(llvm::toString(cos.takeError()));
        continue;
      }
      c.cosine = *cos;
      if (*cos < *options.min_cosine) {
        c.error = llvm::formatv("below the accuracy floor: cosine {0:F5} < {1:F5}", *cos, *options.min_cosine).str();
        continue;
      }
    }
    todo.push_back(i);
  }

  std::vector<KernelSpec> specs;
  for (size_t i : todo)
    specs.push_back(rec.candidates[i].spec);
  out.compiled = int(specs.size());
  std::vector<llvm::Error> compiled =
      compiler_.compileAll(specs, [&](size_t done, size_t total) { progress("compile", done, total); });
  std::vector<size_t> runnable;
  for (size_t j = 0; j < todo.size(); ++j) {
    llvm::Error e = j < compiled.size() ? std::move(compiled[j]) : fail("the compiler returned no result");
    if (e)
      rec.candidates[todo[j]].error = "compile: " + clipped(llvm::toString(std::move(e)));
    else
      runnable.push_back(todo[j]);
  }
  for (size_t j = compiled.size(); j-- > todo.size();)
    llvm::consumeError(std::move(compiled[j]));

  for (size_t j = 0; j < runnable.size(); ++j) {
    cache::CandidateResult &c = rec.candidates[runnable[j]];
    auto t = timing_.time(c.spec, request.problem);
    ++out.timed;
    progress("time", j + 1, runnable.size());
    if (!t) {
      c.error = "launch: " + clipped(llvm::toString(t.takeError()));
      continue;
    }
    recordTime(c, *t);
  }

  auto chosen = selectWinner(rec.candidates, options.min_tie_band, options.min_cosine);
  if (!chosen)
    return fail("tuning " + key.str() + ": " + llvm::toString(chosen.takeError()));
  rec.min_cosine = options.min_cosine.value_or(0.0);
  rec.accuracy_source = accuracy_ && options.min_cosine ? accuracy_->describe() : std::string();
  if (llvm::Error e = storeRecord(db_, *chosen, timing_.describe(), request.problem.str(), out))
    return e;
  return out;
}

} // namespace fa4jit::runtime
