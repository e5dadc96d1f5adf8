// `fa4jit accuracy`: accuracy tables of the route models (CPU), and classifier calibration from
// captured scores.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#include "accuracy_grid.h"
#include "progress.h"
#include "fa4jit/codegen/classifier_fit.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"
#include <fmt/format.h>

#include "subcommands.h"

namespace fa4jit::tools {

namespace {

const char kUsage[] =
    "usage: fa4jit accuracy [options]\n"
    "       fa4jit accuracy --calibrate FILE [--json]\n"
    "\n"
    "Accuracy of every route (bf16, nvfp8, directp with each classifier) on CPU models of the\n"
    "kernels: Gaussian Q, K, V ~ N(0, sigma^2), one head, a sample of query rows against all\n"
    "keys; cosine similarity and relative L2 of O against an FP64 reference and the BF16 route.\n"
    "Direct-P classifiers: piecewise (the default: two FP16 affine pieces, every code boundary within 1% of P of exp2 +\n"
    "round to nearest), threshold (exp2 + round to nearest up to 0.5% at the midpoints), affine (alpha, beta fitted to the\n"
    "shape), affine-a2 (alpha = 2, beta fitted), mixed (affine + native exp2 above y_split).\n"
    "\n"
    "options (lists are comma-separated):\n"
    "  --sigma LIST        std of Q, K, V entries           (default 0.5,1,2)\n"
    "  --seqlen LIST       sequence lengths (q = k)         (default 1024,4096)\n"
    "  --head-dim LIST     64, 128 and/or 256               (default 128)\n"
    "  --causal LIST       0/1 or false/true                (default 0,1)\n"
    "  --routes LIST       bf16, nvfp8, directp             (default all)\n"
    "  --classifiers LIST  piecewise, threshold, affine, affine-a2, mixed (default all)\n"
    "  --slack X           range-guard slack in log2 units (default: each route's own; nvfp8 3)\n"
    "  --rows N            query rows sampled per grid point (default 256)\n"
    "  --qk-widening W     e4m3 or bf16: how NVFP4 Q/K reach the tensor core (default e4m3)\n"
    "  --scores S          fp32 or fp16: the FP8-fed routes' S accumulators (fp16: the sm_90a\n"
    "                      kernels' scores_fp16, Q/K widened by 2^-7, 2^-8 at D256; default fp32)\n"
    "  --seed N            seed of the inputs and of the fits (default 1)\n"
    "  --threads N         worker threads, 0 = all cores     (default 0)\n"
    "  --json              print one JSON array of rows instead of a table\n"
    "  --calibrate FILE    fit classifier coefficients to captured scores (docs/CALIBRATION.md)\n"
    "  --help              this text\n";

int fail(const std::string &msg) {
  std::fprintf(stderr, "fa4jit accuracy: %s\n", msg.c_str());
  return 2;
}

template <typename T, typename ParseOne>
bool parseList(llvm::StringRef text, std::vector<T> &out, ParseOne parse) {
  llvm::SmallVector<llvm::StringRef, 8> parts;
  text.split(parts, ',');
  out.clear();
  for (llvm::StringRef p : parts) {
    T v{};
    if (!parse(p.trim(), v))
      return false;
    out.push_back(v);
  }
  return !out.empty();
}

bool parseInt(llvm::StringRef s, int &v) { return !s.getAsInteger(10, v); }
bool parseDouble(llvm::StringRef s, double &v) {
  std::string str = s.str();
  char *end = nullptr;
  v = std::strtod(str.c_str(), &end);
  return !str.empty() && end == str.c_str() + str.size();
}
bool parseBool(llvm::StringRef s, bool &v) {
  if (s == "1" || s == "true" || s == "yes") {
    v = true;
    return true;
  }
  if (s == "0" || s == "false" || s == "no") {
    v = false;
    return true;
  }
  return false;
}
bool parseRoute(llvm::StringRef s, Route &r) {
  for (Route c : {Route::Bf16, Route::Nvfp8, Route::DirectP})
    if (s == toString(c)) {
      r = c;
      return true;
    }
  return false;
}

std::string coefficientText(const AccuracyRow &r) {
  const ClassifierSpec &c = r.coefficients;
  if (r.classifier == "none" || c.kind == ClassifierKind::Threshold)
    return "";
  if (c.kind == ClassifierKind::Piecewise)
    return fmt::format("lo {:.5g}y+{:.5g} hi {:.5g}y+{:.5g}", c.pieces[0], c.pieces[1], c.pieces[2], c.pieces[3]);
  std::string s = fmt::format("a={:.4g} b={:.4g}", c.alpha, c.beta);
  if (c.kind == ClassifierKind::Mixed)
    s += fmt::format(" split={:.3g}", c.y_split);
  return s;
}

llvm::json::Object classifierJson(const ClassifierSpec &c) {
  llvm::json::Object o{{"kind", toString(c.kind)}};
  if (c.kind == ClassifierKind::Piecewise) {
    llvm::json::Array pieces;
    for (float v : c.pieces)
      pieces.push_back(v);
    o["pieces"] = std::move(pieces);
    return o;
  }
  if (c.kind != ClassifierKind::Threshold) {
    o["alpha"] = c.alpha;
    o["beta"] = c.beta;
  }
  if (c.kind == ClassifierKind::Mixed)
    o["y_split"] = c.y_split;
  return o;
}

void printJson(const std::vector<AccuracyRow> &rows) {
  llvm::json::Array arr;
  for (const AccuracyRow &r : rows) {
    llvm::json::Object o{{"route", r.route},
                         {"classifier", r.classifier},
                         {"sigma", r.sigma},
                         {"seqlen", r.seqlen},
                         {"head_dim", r.head_dim},
                         {"causal", r.causal},
                         {"cos_vs_fp64", r.cos_vs_fp64},
                         {"cos_vs_bf16", r.cos_vs_bf16},
                         {"rel_l2_vs_fp64", r.rel_l2_vs_fp64},
                         {"rel_l2_vs_bf16", r.rel_l2_vs_bf16}};
    if (r.classifier != "none")
      o["coefficients"] = classifierJson(r.coefficients);
    arr.push_back(std::move(o));
  }
  llvm::outs() << llvm::formatv("{0:2}", llvm::json::Value(std::move(arr))) << "\n";
}

void printTable(const std::vector<AccuracyRow> &rows) {
  std::string last_group;
  for (const AccuracyRow &r : rows) {
    const std::string group = fmt::format("sigma={:g} seqlen={} head_dim={} causal={}", r.sigma,
                                          r.seqlen, r.head_dim, r.causal ? "yes" : "no");
    if (group != last_group) {
      fmt::print("{}{}\n  {:<8} {:<10} {:>11} {:>11} {:>14} {:>14}  {}\n", last_group.empty() ? "" : "\n",
                 group, "route", "classifier", "cos(fp64)", "cos(bf16)", "rel_l2(fp64)",
                 "rel_l2(bf16)", "coefficients");
      last_group = group;
    }
    fmt::print("  {:<8} {:<10} {:>11.5f} {:>11.5f} {:>14.5f} {:>14.5f}  {}\n", r.route,
               r.classifier == "none" ? "-" : r.classifier, r.cos_vs_fp64, r.cos_vs_bf16,
               r.rel_l2_vs_fp64, r.rel_l2_vs_bf16, coefficientText(r));
  }
  std::fflush(stdout);
}

int runCalibrate(const std::string &path, bool json) {
  auto cal = fit::readCalibrationFile(path);
  if (!cal)
    return fail(llvm::toString(cal.takeError()));
  const fit::ScoreRows rows = fit::scoresFromCalibration(*cal);
  struct Variant {
    const char *name;
    ClassifierKind kind;
    bool fit_alpha;
  };
  const Variant variants[] = {{"affine", ClassifierKind::Affine, true},
                              {"affine-a2", ClassifierKind::Affine, false},
                              {"mixed", ClassifierKind::Mixed, true}};
  llvm::json::Array arr;
  if (!json)
    fmt::print("{}: head_dim {}, seqlen {}, {} rows\n  {:<10} {:>9} {:>9} {:>8} {:>12} {:>14}\n", path,
               cal->head_dim, cal->seqlen, cal->rows(), "classifier", "alpha", "beta", "y_split",
               "objective", "vs threshold");
  for (const Variant &v : variants) {
    fit::FitOptions o;
    o.kind = v.kind;
    o.fit_alpha = v.fit_alpha;
    auto r = fit::fitClassifier(rows, o);
    if (!r)
      return fail(llvm::toString(r.takeError()));
    const ClassifierSpec &c = r->classifier;
    if (json) {
      llvm::json::Object obj = classifierJson(c);
      obj["classifier"] = v.name;
      obj["objective"] = r->objective;
      obj["threshold_objective"] = r->threshold_objective;
      arr.push_back(std::move(obj));
    } else {
      fmt::print("  {:<10} {:>9.5f} {:>9.5f} {:>8} {:>12.4e} {:>14.4e}\n", v.name, c.alpha, c.beta,
                 v.kind == ClassifierKind::Mixed ? fmt::format("{:.3g}", c.y_split) : "-",
                 r->objective, r->threshold_objective);
    }
  }
  if (json)
    llvm::outs() << llvm::formatv("{0:2}", llvm::json::Value(std::move(arr))) << "\n";
  return 0;
}

} // namespace

int runAccuracy(int argc, char **argv) {
  AccuracyGrid grid;
  bool json = false;
  std::string calibrate;
  for (int i = 1; i < argc; ++i) {
    const llvm::StringRef a = argv[i];
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (a == "--json") {
      json = true;
      continue;
    }
    if (i + 1 >= argc)
      return fail("option '" + a.str() + "' needs a value (or is unknown; see --help)");
    const llvm::StringRef val = argv[++i];
    bool ok = true;
    int n = 0;
    if (a == "--sigma")
      ok = parseList(val, grid.sigmas, parseDouble);
    else if (a == "--seqlen")
      ok = parseList(val, grid.seqlens, parseInt);
    else if (a == "--head-dim")
      ok = parseList(val, grid.head_dims, parseInt);
    else if (a == "--causal")
      ok = parseList(val, grid.causal, parseBool);
    else if (a == "--routes")
      ok = parseList(val, grid.routes, parseRoute);
    else if (a == "--classifiers")
      ok = parseList(val, grid.classifiers, [](llvm::StringRef s, std::string &v) {
        v = s.str();
        return !v.empty();
      });
    else if (a == "--scores") {
      ok = val == "fp32" || val == "fp16";
      grid.scores_fp16 = val == "fp16";
    } else if (a == "--qk-widening") {
      ok = val == "e4m3" || val == "bf16";
      grid.qk_widening = val == "bf16" ? Widening::Bf16 : Widening::E4m3;
    } else if (a == "--slack") {
      double slack = 0;
      ok = parseDouble(val, slack) && slack >= 0.0 && slack <= 8.0;
      grid.guard_slack_log2 = static_cast<float>(slack);
    } else if (a == "--rows")
      ok = parseInt(val, grid.rows);
    else if (a == "--threads")
      ok = parseInt(val, grid.threads) && grid.threads >= 0;
    else if (a == "--seed") {
      ok = parseInt(val, n) && n >= 0;
      grid.seed = static_cast<uint64_t>(n);
    } else if (a == "--calibrate")
      calibrate = val.str();
    else
      return fail("unknown option '" + a.str() + "' (see --help)");
    if (!ok)
      return fail("bad value '" + val.str() + "' for " + a.str() +
                  (a == "--routes" ? " (routes: bf16, nvfp8, directp)" : ""));
  }
  if (!calibrate.empty())
    return runCalibrate(calibrate, json);
  if (auto e = validateGrid(grid))
    return fail(llvm::toString(std::move(e)));
  ProgressLine progress(!json);
  auto rows = runAccuracyGrid(grid, [&](int done, int total) { progress.update("grid points", done, total); });
  progress.clear();
  if (!rows)
    return fail(llvm::toString(rows.takeError()));
  if (json)
    printJson(*rows);
  else
    printTable(*rows);
  return 0;
}

} // namespace fa4jit::tools
