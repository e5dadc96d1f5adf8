// `fa4jit tune`: autotune attention shapes into the tuning database (docs/TUNING.md), or show it.
#include "cli_flags.h"
#include "cli_values.h"
#include "decode_flags.h"
#include "progress.h"
#include "subcommands.h"
#include "tune_auto.h"
#include "tune_decode.h"
#include "tune_show.h"

#include "fa4jit/codegen/spec_io.h"
#include "fa4jit/runtime/engine.h"
#include "fa4jit/runtime/tune_timing.h"
#include "fa4jit/runtime/tuner.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <sstream>

namespace fa4jit::tools {

namespace {
const char kUsage[] =
    "usage: fa4jit tune [options]        tune shapes into the tuning database (GPU)\n"
    "       fa4jit tune --show [--json]  print the database (no GPU needed)\n"
    "\n"
    "For each shape: enumerate candidate kernels (tiles, kernels, classifier kinds with fitted\n"
    "coefficients, widenings, guards), prune what cannot fit (registers, shared memory, TMEM),\n"
    "compile the rest in parallel, time each (CUDA events, warm-up, median, cold L2, rotated\n"
    "inputs), pick the fastest within the noise band (ties go to the heuristic, then enumeration\n"
    "order) and store every result. Shapes already in the database are not tuned again.\n"
    "\n"
    "shapes (lists are comma-separated; --routes, --head-dims and --seqlens are accepted too):\n"
    "  --route LIST        (default directp)\n"
    "  --head-dim LIST     (default 128)\n"
    "  --seqlen LIST       seqlen_q = seqlen_k (default 4096); bucketed to powers of two\n"
    "  --causal [LIST]     0, 1 or 0,1; alone it means 1 (default 0)\n"
    "  --shapes FILE       one shape per line: ROUTE HEAD_DIM SEQLEN CAUSAL [BATCH HEADS]; '#' comments\n"
    "  --tokens N          batch*heads*seqlen of the timed problem (default 524288)\n"
    "timing:\n"
    "  --warmup N          (default 5)   --reps N (default 20)\n"
    "  --tie-band X        smallest relative band (default 0.02)\n"
    "  --threads N         compile threads (default: all cores)\n"
    "accuracy:\n"
    "  --min-cosine X      only candidates whose cosine vs FP64 (CPU models, Gaussian inputs) >= X\n"
    "  --accuracy-seqlen N sample problem length for --min-cosine (default 1024)\n"
    "  --calibration FILE  fit classifiers to and judge them on captured scores (docs/CALIBRATION.md)\n"
    "search:\n"
    "  --exhaustive        every combination of tiles and numeric options\n"
    "  --heuristic-kernel-only  do not search the kernels the heuristic did not pick\n"
    "  --force             re-tune shapes already in the database\n"
    "  --replay            tune nothing: fail on a shape missing from the database\n"
    "output:\n"
    "  --json              one JSON object per shape (with --show: the database as JSON)\n"
    "  --candidates        with --show: every candidate's timing and error\n"
    "  --no-progress       no progress bar on stderr\n"
    "decode plans (--decode: warps and key splits per decode shape over the paged cache,\n"
    "which Engine::decode then uses; each shape is a grid of the lists below):\n"
    "  --decode            tune decode plans instead of attention kernels\n"
    "  --batch LIST        sequences (default 1,16,64)\n"
    "  --context LIST      tokens per sequence (default 4096,32768,131072)\n"
    "  --page-size LIST    (default 16)    --value-format LIST  fp8, mxfp4 (default fp8)\n"
    "  --q-heads N (32)    --kv-heads N (8)    --queries N (1)    --head-dim N (128)\n"
    "  (--warmup, --reps, --tie-band, --force, --replay and --json apply)\n"
    "route auto (--auto: per shape and budget, the fastest route preset whose CPU model predicts\n"
    "a cosine vs FP64 of at least --min-cosine at the logit scale; each preset that meets it is\n"
    "timed from BF16 tensors and the winner stored, which forward(auto_route) then runs):\n"
    "  --auto              choose routes instead of tuning kernels (--head-dim, --seqlen, --causal)\n"
    "  --min-cosine X      the budget (default 0.98)\n"
    "  --logit-std LIST    standard deviation of q.k.softmax_scale the calls see (default 1)\n"
    "  --calibration FILE  measure that from captured scores instead (docs/CALIBRATION.md)\n"
    "  --predict           no GPU: the predicted cosines and the engine's untimed choice\n"
    "  --target T          with --predict (default sm_90a)\n"
    "  --help\n";

int fail(const std::string &m) {
  std::fprintf(stderr, "fa4jit tune: %s\n", m.c_str());
  return 1;
}
// A flag or value tune cannot take (exit 2, as every subcommand).
int usage(const std::string &m) {
  std::fprintf(stderr, "fa4jit tune: %s\n", m.c_str());
  return 2;
}

struct ShapeRequest {
  Route route = Route::DirectP;
  int head_dim = 128, seqlen = 4096;
  bool causal = false;
  int batch = 0, heads = 0; // 0: fill the GPU from --tokens
};

llvm::Error bad(const std::string &m) { return llvm::createStringError(llvm::inconvertibleErrorCode(), m); }

llvm::Expected<std::vector<ShapeRequest>> readShapesFile(const std::string &path) {
  std::ifstream in(path);
  if (!in)
    return bad("cannot read shapes file '" + path + "'");
  std::vector<ShapeRequest> out;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    line = line.substr(0, line.find('#'));
    std::istringstream is(line);
    std::string route;
    if (!(is >> route))
      continue;
    ShapeRequest s;
    int causal = 0;
    if (!(is >> s.head_dim >> s.seqlen >> causal))
      return bad(fmt::format("{0}:{1}: expected ROUTE HEAD_DIM SEQLEN CAUSAL [BATCH HEADS]", path, n));
    is >> s.batch >> s.heads;
    auto r = parseRoute(route);
    if (!r)
      return bad(fmt::format("{0}:{1}: {2}", path, n, llvm::toString(r.takeError())));
    s.route = *r;
    s.causal = causal != 0;
    out.push_back(s);
  }
  return out;
}

} // namespace

int runTune(int argc, char **argv) {
  std::vector<FlagDef> defs = {shared_flags::route(), shared_flags::headDim(), shared_flags::seqlen(),
                               shared_flags::causal(), {"shapes"}, {"tokens"}, {"warmup"}, {"reps"}, {"tie-band"},
                               shared_flags::threads(), {"min-cosine"}, {"accuracy-seqlen"}, {"calibration"},
                               {"show", FlagValue::None}, shared_flags::json(), {"candidates", FlagValue::None},
                               {"exhaustive", FlagValue::None}, {"heuristic-kernel-only", FlagValue::None},
                               {"force", FlagValue::None}, {"replay", FlagValue::None},
                               {"no-progress", FlagValue::None}, {"decode", FlagValue::None},
                               {"auto", FlagValue::None}, {"logit-std"}, {"predict", FlagValue::None},
                               shared_flags::target()};
  for (FlagDef &def : decodeGridFlagDefs())
    defs.push_back(std::move(def));
  CliFlags flags(std::move(defs));
  if (auto e = flags.parse(argc, argv))
    return std::fprintf(stderr, "fa4jit tune: %s\n%s", llvm::toString(std::move(e)).c_str(), kUsage), 2;
  if (flags.help())
    return std::fputs(kUsage, stdout), 0;
  auto config = runtime::loadConfig();
  if (!config)
    return fail(llvm::toString(config.takeError()));
  if (flags.has("show"))
    return showTuningDatabase(runtime::tuningDbConfigFor(*config), flags.has("json"), flags.has("candidates"));
  if (flags.has("decode"))
    return runTuneDecode(flags, *config);
  if (flags.has("auto"))
    return runTuneAuto(flags, *config);
  for (const char *name : {"logit-std", "predict", "target"})
    if (flags.has(name))
      return usage(std::string("--") + name + " belongs to --auto");
  for (const char *name : {"batch", "context", "page-size", "value-format", "q-heads", "kv-heads", "queries"})
    if (flags.has(name))
      return usage(std::string("--") + name + " describes a decode shape: it needs --decode");

  // Shapes.
  std::vector<ShapeRequest> shapes;
  if (flags.has("shapes")) {
    auto read = readShapesFile(flags.str("shapes", ""));
    if (!read)
      return fail(llvm::toString(read.takeError()));
    shapes = std::move(*read);
  } else {
    auto routes = routesFlag(flags, "directp");
    if (!routes)
      return usage(llvm::toString(routes.takeError()));
    auto dims = headDimsFlag(flags, "128");
    if (!dims)
      return usage(llvm::toString(dims.takeError()));
    auto seqlens = seqlensFlag(flags, "4096");
    if (!seqlens)
      return usage(llvm::toString(seqlens.takeError()));
    auto causals = causalFlag(flags, "0");
    if (!causals)
      return usage(llvm::toString(causals.takeError()));
    for (Route r : *routes)
      for (int d : *dims)
        for (int sl : *seqlens)
          for (bool c : *causals)
            shapes.push_back({r, d, sl, c, 0, 0});
  }
  auto tokens = flags.integer("tokens", 524288, 1, 1L << 32);
  auto warmup = flags.integer("warmup", 5, 0, 100000);
  auto reps = flags.integer("reps", 20, 1, 100000);
  auto acc_seqlen = flags.integer("accuracy-seqlen", 1024, 1, kMaxCliSeqlen);
  auto threads = threadsFlag(flags);
  auto band = flags.number("tie-band", 0.02);
  auto floor = flags.number("min-cosine", -2.0);
  llvm::Error bad_value = llvm::Error::success();
  llvm::Error errors[] = {tokens.takeError(),     warmup.takeError(),  reps.takeError(), acc_seqlen.takeError(),
                          threads.takeError(), band.takeError(), floor.takeError()};
  for (llvm::Error &e : errors)
    bad_value = llvm::joinErrors(std::move(bad_value), std::move(e));
  if (bad_value)
    return usage(llvm::toString(std::move(bad_value)));

  std::optional<fit::ScoreRows> calibration;
  std::string calibration_path = flags.str("calibration", "");
  if (!calibration_path.empty()) {
    auto cal = fit::readCalibrationFile(calibration_path);
    if (!cal)
      return fail(llvm::toString(cal.takeError()));
    calibration = fit::scoresFromCalibration(*cal);
  }

  EngineOptions options;
  options.config = *config;
  auto engine = Engine::create(options);
  if (!engine)
    return fail("needs a GPU: " + llvm::toString(engine.takeError()));
  Engine &eng = **engine;
  runtime::JitCandidateCompiler compiler(eng.jit(), unsigned(*threads));
  runtime::EngineTimingOptions topt;
  topt.warmup = int(*warmup), topt.reps = int(*reps);
  runtime::EngineTimingSource timing(eng, topt);
  runtime::CpuAccuracyOptions aopt;
  aopt.seqlen = int(*acc_seqlen);
  runtime::CpuModelAccuracy cpu_accuracy(aopt);
  std::unique_ptr<runtime::CalibrationAccuracy> cal_accuracy;
  runtime::AccuracyProbe *accuracy = &cpu_accuracy;
  if (calibration) {
    cal_accuracy = std::make_unique<runtime::CalibrationAccuracy>(*calibration, calibration_path);
    accuracy = cal_accuracy.get();
  }
  runtime::Tuner tuner(eng.tuningDb(), compiler, timing, accuracy);

  const bool json = flags.has("json");
  ProgressLine bar(!flags.has("no-progress") && !json);
  if (!json)
    std::printf("device %s (%d SMs), driver %s, target %s\nuser database %s\nsystem database %s\n\n"
                "  %-36s %-44s %9s %9s %7s %6s %s\n",
                eng.device().name.c_str(), eng.device().sm_count, eng.driver().driverVersionString().c_str(),
                toString(eng.target()), eng.tuningDb().userFile().empty() ? "(memory only)" : eng.tuningDb().userFile().c_str(),
                eng.tuningDb().systemFile().empty() ? "(none)" : eng.tuningDb().systemFile().c_str(), "shape",
                "winner", "ms", "heur ms", "speedup", "cands", "source");
  int failures = 0, total_compiled = 0, total_timed = 0, from_db = 0;
  for (const ShapeRequest &s : shapes) {
    runtime::TuneRequest req;
    req.target = eng.target();
    req.route = s.route;
    req.head_dim = s.head_dim;
    req.causal = s.causal;
    const int heads = s.heads > 0 ? s.heads : s.head_dim == 64 ? 32 : s.head_dim == 128 ? 16 : 8;
    req.problem.heads_q = req.problem.heads_kv = heads;
    req.problem.seqlen_q = req.problem.seqlen_k = s.seqlen;
    req.problem.batch = s.batch > 0 ? s.batch : std::max(1, int(*tokens / (long(heads) * s.seqlen)));
    req.space.exhaustive = flags.has("exhaustive");
    req.space.all_kernels = !flags.has("heuristic-kernel-only");
    req.space.fit_scores = calibration;
    runtime::TunerOptions opt;
    opt.min_tie_band = *band;
    if (flags.has("min-cosine") || calibration)
      opt.min_cosine = flags.has("min-cosine") ? *floor : 0.0;
    opt.force = flags.has("force");
    opt.replay_only = flags.has("replay");
    const std::string shape = runtime::Tuner::keyFor(req).str();
    opt.progress = [&](const char *phase, size_t done, size_t n) { bar.update(phase, done, n, shape); };
    auto outcome = tuner.tune(req, opt);
    bar.clear();
    if (!outcome) {
      ++failures;
      printTuneFailure(shape, llvm::toString(outcome.takeError()), json);
      continue;
    }
    total_compiled += outcome->compiled;
    total_timed += outcome->timed;
    from_db += outcome->from_database;
    const cache::TuningRecord &r = outcome->record;
    const std::string source = outcome->from_database ? std::string("db:") + cache::toString(outcome->layer)
                                                      : fmt::format("tuned ({0} compiled, {1} timed)",
                                                                    outcome->compiled, outcome->timed);
    if (json) {
      llvm::json::Value v = recordJson(r, false);
      auto *o = v.getAsObject();
      o->insert({"from_database", outcome->from_database});
      o->insert({"layer", cache::toString(outcome->layer)});
      o->insert({"compiled", outcome->compiled});
      o->insert({"timed", outcome->timed});
      std::printf("%s\n", llvm::formatv("{0}", v).str().c_str());
    } else {
      const auto &w = r.winnerResult();
      const double heur = r.heuristic >= 0 ? r.candidates[size_t(r.heuristic)].median_ms : NAN;
      std::printf("  %-36s %-44s %9.4f %9.4f %6.2fx %6zu %s\n", shape.c_str(), w.label.c_str(), w.median_ms, heur,
                  tunedSpeedup(r), r.candidates.size(), source.c_str());
    }
    std::fflush(stdout);
  }
  if (!json)
    std::printf("\n%zu shapes: %d from the database, %d tuned, %d failed; %d candidates compiled, %d timed\n",
                shapes.size(), from_db, int(shapes.size()) - from_db - failures, failures, total_compiled,
                total_timed);
  return failures ? 1 : 0;
}

} // namespace fa4jit::tools
