// `fa4jit tune --decode` (tune_decode.h).
#include "tune_decode.h"

#include "decode_flags.h"
#include "progress.h"
#include "tune_show.h"

#include "fa4jit/runtime/decode_tuner.h"
#include "fa4jit/runtime/engine.h"
#include "fa4jit/runtime/kernel_jit.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <cstdio>

namespace fa4jit::tools {

namespace {
int fail(const std::string &m) {
  std::fprintf(stderr, "fa4jit tune --decode: %s\n", m.c_str());
  return 1;
}
int usage(const std::string &m) {
  std::fprintf(stderr, "fa4jit tune --decode: %s\n", m.c_str());
  return 2;
}
} // namespace

int runTuneDecode(const CliFlags &flags, const runtime::RuntimeConfig &config) {
  for (const char *name : {"route", "seqlen", "causal", "shapes", "tokens", "min-cosine", "calibration", "exhaustive",
                           "heuristic-kernel-only"})
    if (flags.has(name))
      return usage(std::string("--") + name + " is an attention option; decode shapes take --batch, --context, "
                                              "--page-size, --value-format, --q-heads, --kv-heads, --queries");
  auto grid = readDecodeGridFlags(flags, {"1,16,64", "4096,32768,131072", "16", "fp8"});
  if (!grid)
    return usage(llvm::toString(grid.takeError()));
  auto warmup = flags.integer("warmup", 2, 0, 100000);
  auto reps = flags.integer("reps", 10, 1, 100000);
  auto band = flags.number("tie-band", 0.02);
  if (!warmup || !reps || !band) {
    llvm::Error e = llvm::joinErrors(warmup.takeError(), llvm::joinErrors(reps.takeError(), band.takeError()));
    return usage(llvm::toString(std::move(e)));
  }

  EngineOptions options;
  options.config = config;
  auto engine = Engine::create(options);
  if (!engine)
    return fail("needs a GPU: " + llvm::toString(engine.takeError()));
  Engine &eng = **engine;
  runtime::JitCandidateCompiler compiler(eng.jit());
  runtime::DecodeTimingOptions topt;
  topt.warmup = int(*warmup), topt.reps = int(*reps);
  runtime::EngineDecodeTimingSource timing(eng, topt);
  runtime::DecodeTuner tuner(eng.tuningDb(), compiler, timing);

  const bool json = flags.has("json");
  ProgressLine bar(!flags.has("no-progress") && !json);
  if (!json)
    std::printf("device %s (%d SMs), target %s\nuser database %s\n\n  %-40s %-22s %-8s %9s %9s %7s %s\n",
                eng.device().name.c_str(), eng.device().sm_count, toString(eng.target()),
                eng.tuningDb().userFile().empty() ? "(memory only)" : eng.tuningDb().userFile().c_str(), "key",
                "problem", "winner", "ms", "heur ms", "speedup", "source");
  int failures = 0, shapes = 0;
  for (KvValueFormat value : grid->value_formats)
    for (int page_size : grid->page_sizes)
      for (int batch : grid->batches)
        for (int context : grid->contexts) {
          ++shapes;
          runtime::DecodeTuneRequest req;
          req.target = eng.target();
          req.head_dim = grid->head_dim;
          req.page_size = page_size;
          req.value_format = value;
          req.sm_count = eng.device().sm_count;
          req.problem = {batch, grid->q_heads, grid->kv_heads, grid->queries, context};
          runtime::TunerOptions opt;
          opt.min_tie_band = *band;
          opt.force = flags.has("force");
          opt.replay_only = flags.has("replay");
          const std::string key = runtime::DecodeTuner::keyFor(req).str();
          opt.progress = [&](const char *phase, size_t done, size_t n) { bar.update(phase, done, n, key); };
          auto outcome = tuner.tune(req, opt);
          bar.clear();
          if (!outcome) {
            ++failures;
            printTuneFailure(key, llvm::toString(outcome.takeError()), json);
            continue;
          }
          const cache::TuningRecord &r = outcome->record;
          if (json) {
            llvm::json::Value v = recordJson(r, true);
            v.getAsObject()->insert({"from_database", outcome->from_database});
            std::printf("%s\n", llvm::formatv("{0}", v).str().c_str());
          } else {
            const auto &w = r.winnerResult();
            const double heur = r.heuristic >= 0 ? r.candidates[size_t(r.heuristic)].median_ms : NAN;
            std::printf("  %-40s %-22s %-8s %9.4f %9.4f %6.2fx %s\n", key.c_str(), r.problem.c_str(),
                        w.label.c_str(), w.median_ms, heur, tunedSpeedup(r),
                        outcome->from_database ? (std::string("db:") + cache::toString(outcome->layer)).c_str()
                                               : "tuned");
          }
          std::fflush(stdout);
        }
  if (!json)
    std::printf("\n%d shapes, %d failed\n", shapes, failures);
  return failures ? 1 : 0;
}

} // namespace fa4jit::tools
