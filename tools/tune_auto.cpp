// `fa4jit tune --auto` (tune_auto.h).
#include "tune_auto.h"

#include "cli_values.h"
#include "progress.h"
#include "tune_show.h"

#include "fa4jit/codegen/classifier_fit.h"
#include "fa4jit/codegen/heuristics.h"
#include "fa4jit/codegen/spec_validate.h"
#include "fa4jit/runtime/engine.h"
#include "fa4jit/runtime/route_tuner.h"
#include "fa4jit/runtime/tune_timing.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <memory>

namespace fa4jit::tools {

namespace {
int fail(const std::string &m) {
  std::fprintf(stderr, "fa4jit tune --auto: %s\n", m.c_str());
  return 1;
}
int usage(const std::string &m) {
  std::fprintf(stderr, "fa4jit tune --auto: %s\n", m.c_str());
  return 2;
}

// One line per candidate: its predicted cosine, and its time where it was timed.
std::string candidatesText(const cache::TuningRecord &r) {
  std::string out;
  for (size_t i = 0; i < r.candidates.size(); ++i) {
    const cache::CandidateResult &c = r.candidates[i];
    out += fmt::format("{}{:<12} cos {:<8} {}", out.empty() ? "" : ", ", c.label,
                       c.cosine ? fmt::format("{:.4f}", *c.cosine) : "-",
                       c.ok ? fmt::format("{:.4f} ms", c.median_ms) : (c.cosine && c.error.empty() ? "" : "(no)"));
  }
  return out;
}
} // namespace

int runTuneAuto(const CliFlags &flags, const runtime::RuntimeConfig &config) {
  for (const char *name : {"route", "shapes", "exhaustive", "heuristic-kernel-only", "decode"})
    if (flags.has(name))
      return usage(std::string("--") + name + " does not apply: --auto chooses the route per shape and budget");
  auto dims = headDimsFlag(flags, "128");
  auto seqlens = seqlensFlag(flags, "4096");
  auto causals = causalFlag(flags, "0");
  auto logit_stds = flags.numbers("logit-std", "1");
  auto min_cosine = flags.number("min-cosine", 0.98);
  auto tokens = flags.integer("tokens", 524288, 1, 1L << 32);
  auto warmup = flags.integer("warmup", 5, 0, 100000);
  auto reps = flags.integer("reps", 20, 1, 100000);
  auto band = flags.number("tie-band", 0.02);
  auto acc_seqlen = flags.integer("accuracy-seqlen", 1024, 1, kMaxCliSeqlen);
  llvm::Error bad_value = llvm::Error::success();
  llvm::Error errors[] = {dims.takeError(),   seqlens.takeError(), causals.takeError(), logit_stds.takeError(),
                          min_cosine.takeError(), tokens.takeError(), warmup.takeError(), reps.takeError(),
                          band.takeError(), acc_seqlen.takeError()};
  for (llvm::Error &e : errors)
    bad_value = llvm::joinErrors(std::move(bad_value), std::move(e));
  if (bad_value)
    return usage(llvm::toString(std::move(bad_value)));
  // Captured scores give the logit scale (docs/CALIBRATION.md).
  if (flags.has("calibration")) {
    if (flags.has("logit-std"))
      return usage("--calibration measures the logit scale: give it or --logit-std, not both");
    auto cal = fit::readCalibrationFile(flags.str("calibration", ""));
    if (!cal)
      return fail(llvm::toString(cal.takeError()));
    const double measured = fit::calibrationLogitStd(*cal);
    if (!(measured > 0))
      return fail("--calibration: no row with two visible keys to measure the logit scale from");
    logit_stds->assign(1, measured);
    if (!flags.has("json"))
      std::printf("logit std %.4g measured from %s (%d rows)\n", measured, flags.str("calibration", "").c_str(),
                  cal->rows());
  }
  for (double s : *logit_stds)
    if (llvm::Error e = runtime::checkAccuracyBudget({*min_cosine, s}))
      return usage("--min-cosine / --logit-std: " + llvm::toString(std::move(e)));

  const bool predict = flags.has("predict");
  std::unique_ptr<Engine> engine;
  Target target = Target::Sm90a;
  if (predict) {
    auto t = targetFlag(flags, "sm_90a");
    if (!t)
      return usage(llvm::toString(t.takeError()));
    target = *t;
  } else {
    if (flags.has("target"))
      return usage("--target applies with --predict (timing runs on this machine's GPU)");
    EngineOptions options;
    options.config = config;
    auto created = Engine::create(options);
    if (!created)
      return fail("needs a GPU (or --predict): " + llvm::toString(created.takeError()));
    engine = std::move(*created);
    target = engine->target();
  }
  // Without a GPU: an in-memory database (nothing is stored without timing) and the heuristic specs.
  cache::TuningDb memory_db(cache::TuningDbConfig{}, cache::TuningIdentity{});
  cache::TuningDb &db = engine ? engine->tuningDb() : memory_db;
  std::unique_ptr<runtime::JitCandidateCompiler> compiler;
  std::unique_ptr<runtime::EngineTimingSource> timing;
  if (engine) {
    compiler = std::make_unique<runtime::JitCandidateCompiler>(engine->jit());
    runtime::EngineTimingOptions topt;
    topt.warmup = int(*warmup), topt.reps = int(*reps), topt.from_bf16 = true;
    timing = std::make_unique<runtime::EngineTimingSource>(*engine, topt);
  }

  const bool json = flags.has("json");
  ProgressLine bar(!flags.has("no-progress") && !json);
  if (!json)
    std::printf("target %s, %s\n\n", toString(target),
                engine ? fmt::format("device {} ({} SMs), timed from BF16 tensors", engine->device().name,
                                     engine->device().sm_count)
                             .c_str()
                       : "predicted only (no timing: the presets in their order of measured speed)");
  int failures = 0;
  for (double logit_std : *logit_stds) {
    runtime::CpuAccuracyOptions aopt;
    aopt.seqlen = int(*acc_seqlen);
    aopt.sigma = runtime::entrySigmaForLogitStd(logit_std);
    runtime::CpuModelAccuracy accuracy(aopt);
    runtime::RouteTuner tuner(db, accuracy, compiler.get(), timing.get());
    for (int d : *dims)
      for (int sl : *seqlens)
        for (bool c : *causals) {
          runtime::RouteTuneRequest req;
          req.target = target;
          req.head_dim = d;
          req.causal = c;
          req.budget = {*min_cosine, logit_std};
          const int heads = d == 64 ? 32 : d == 128 ? 16 : 8;
          req.problem.heads_q = req.problem.heads_kv = heads;
          req.problem.seqlen_q = req.problem.seqlen_k = sl;
          req.problem.batch = std::max(1, int(*tokens / (long(heads) * sl)));
          runtime::TunerOptions opt;
          opt.min_tie_band = *band;
          opt.force = flags.has("force");
          opt.replay_only = flags.has("replay");
          const std::string shape = runtime::routeTuningKey(target, d, c, sl, req.budget).str();
          opt.progress = [&](const char *phase, size_t done, size_t n) { bar.update(phase, done, n, shape); };
          auto outcome = tuner.choose(
              req,
              [&](const RoutePreset &p) -> llvm::Expected<KernelSpec> {
                llvm::Expected<KernelSpec> spec =
                    engine ? engine->attentionSpecFor(p.route, d, c, sl, std::nullopt, p.qk_format)
                           : llvm::Expected<KernelSpec>(
                                 withQkFormat(defaultAttentionSpecForKeys(p.route, d, c, target, sl), p.qk_format));
                if (!spec)
                  return spec.takeError();
                if (llvm::Error e = validateSpec(*spec))
                  return e;
                return spec;
              },
              opt);
          bar.clear();
          if (!outcome) {
            ++failures;
            printTuneFailure(shape, llvm::toString(outcome.takeError()), json);
            continue;
          }
          const cache::TuningRecord &r = outcome->record;
          if (json) {
            llvm::json::Value v = recordJson(r, true);
            auto *o = v.getAsObject();
            o->insert({"from_database", outcome->from_database});
            o->insert({"timed", outcome->timed});
            std::printf("%s\n", llvm::formatv("{0}", v).str().c_str());
          } else {
            std::printf("  %-52s -> %-12s %s\n      %s\n", shape.c_str(), r.winnerResult().label.c_str(),
                        outcome->from_database ? "(database)" : engine ? "(timed, stored)" : "(predicted)",
                        candidatesText(r).c_str());
          }
          std::fflush(stdout);
        }
  }
  return failures ? 1 : 0;
}

} // namespace fa4jit::tools
