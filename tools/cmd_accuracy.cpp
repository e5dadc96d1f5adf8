// `fa4jit accuracy`: accuracy tables of the route models (CPU), and classifier calibration from
// captured scores.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#include "accuracy_backward.h"
#include "accuracy_formats.h"
#include "accuracy_grid.h"
#include "cli_flags.h"
#include "cli_values.h"
#include "line_plot_svg.h"
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
    "options (lists are comma-separated; --routes, --head-dims and --seqlens are accepted too):\n"
    "  --sigma LIST        std of Q, K, V entries           (default 0.5,1,2)\n"
    "  --seqlen LIST       sequence lengths (q = k)         (default 1024,4096)\n"
    "  --head-dim LIST     64, 128 and/or 256               (default 128)\n"
    "  --causal [LIST]     0/1 or false/true; alone: 1      (default 0,1)\n"
    "  --route LIST        bf16, nvfp8, directp, fp8, fp8-directp (default the first three)\n"
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
    "  --backward          the training route's backward instead: cosine and rel. L2 of dQ, dK, dV\n"
    "                      against FP64 for E4M3 P/V (dS against BF16 or the saved NVFP4 Q/K) and\n"
    "                      MXFP4 P/V, over the whole head (head dims 64, 128; dO ~ N(0, 1))\n"
    "  --formats           every operand format pair instead (Q/K nvfp4, mxfp4, e4m3-head, e4m3-row, mxfp8 x\n"
    "                      P/V mxfp4, e4m3; docs/NUMERICS.md, Format study) beside the FP8-fed presets'\n"
    "                      kernel models: cosine vs FP64 per sigma (defaults: sigma\n"
    "                      0.5,1,2,4,8,16,30,100,300, seqlen 1024, causal 0)\n"
    "  --plot FILE.svg     with --formats: cosine against sigma, one line per format pair\n"
    "  --help              this text\n";

int fail(const std::string &msg) {
  std::fprintf(stderr, "fa4jit accuracy: %s\n", msg.c_str());
  return 2;
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
      fmt::print("{}{}\n  {:<11} {:<10} {:>11} {:>11} {:>14} {:>14}  {}\n", last_group.empty() ? "" : "\n",
                 group, "route", "classifier", "cos(fp64)", "cos(bf16)", "rel_l2(fp64)",
                 "rel_l2(bf16)", "coefficients");
      last_group = group;
    }
    fmt::print("  {:<11} {:<10} {:>11.5f} {:>11.5f} {:>14.5f} {:>14.5f}  {}\n", r.route,
               r.classifier == "none" ? "-" : r.classifier, r.cos_vs_fp64, r.cos_vs_bf16,
               r.rel_l2_vs_fp64, r.rel_l2_vs_bf16, coefficientText(r));
  }
  std::fflush(stdout);
}

// One table per (seqlen, head dim, causal): a row per sigma, a column per format pair and kernel.
void printFormats(const std::vector<FormatAccuracyRow> &rows, bool json) {
  if (json) {
    llvm::json::Array arr;
    for (const FormatAccuracyRow &r : rows)
      arr.push_back(llvm::json::Object{{"formats", r.label},       {"kernel_model", r.kernel},
                                       {"sigma", r.sigma},         {"seqlen", r.seqlen},
                                       {"head_dim", r.head_dim},   {"causal", r.causal},
                                       {"cos_vs_fp64", r.cos_vs_fp64}, {"rel_l2_vs_fp64", r.rel_l2_vs_fp64}});
    llvm::outs() << llvm::formatv("{0:2}", llvm::json::Value(std::move(arr))) << "\n";
    return;
  }
  std::vector<std::string> labels;
  for (const FormatAccuracyRow &r : rows)
    if (std::find(labels.begin(), labels.end(), r.label) == labels.end())
      labels.push_back(r.label);
  std::string last_group;
  double last_sigma = NAN;
  for (const FormatAccuracyRow &r : rows) {
    const std::string group =
        fmt::format("seqlen={} head_dim={} causal={}", r.seqlen, r.head_dim, r.causal ? "yes" : "no");
    if (group != last_group) {
      fmt::print("{}cosine vs FP64, {} (Q/K format / P/V format; kernel: the route's exact model)\n{:>7}",
                 last_group.empty() ? "" : "\n\n", group, "sigma");
      for (const std::string &l : labels)
        fmt::print(" {:>15}", l);
      last_group = group;
      last_sigma = NAN;
    }
    if (r.sigma != last_sigma) {
      fmt::print("\n{:>7g}", r.sigma);
      last_sigma = r.sigma;
    }
    fmt::print(" {:>15.5f}", r.cos_vs_fp64);
  }
  fmt::print("\n");
  std::fflush(stdout);
}

// The SVG of cosine against sigma, one line per label, for the first (seqlen, head dim, causal).
std::string formatsPlot(const std::vector<FormatAccuracyRow> &rows) {
  LinePlot plot;
  plot.x_label = "sigma of Q, K, V entries";
  plot.y_label = "cosine of O vs FP64";
  double lowest = 1.0;
  for (const FormatAccuracyRow &r : rows) {
    if (r.seqlen != rows.front().seqlen || r.head_dim != rows.front().head_dim || r.causal != rows.front().causal)
      continue;
    auto it = std::find_if(plot.series.begin(), plot.series.end(), [&](const PlotSeries &s) { return s.name == r.label; });
    if (it == plot.series.end()) {
      plot.series.push_back({r.label, {}, r.kernel});
      it = plot.series.end() - 1;
    }
    it->points.push_back({r.sigma, r.cos_vs_fp64});
    lowest = std::min(lowest, r.cos_vs_fp64);
  }
  plot.title = fmt::format("Attention output accuracy per operand format (seqlen {}, head dim {}{})",
                           rows.front().seqlen, rows.front().head_dim, rows.front().causal ? ", causal" : "");
  plot.y_min = std::max(0.0, std::floor(lowest * 20.0) / 20.0);
  plot.y_max = 1.0;
  return renderLinePlotSvg(plot);
}

void printBackward(const std::vector<BackwardAccuracyRow> &rows, bool json) {
  if (json) {
    llvm::json::Array arr;
    for (const BackwardAccuracyRow &r : rows) {
      llvm::json::Object o{{"variant", r.variant}, {"sigma", r.sigma}, {"seqlen", r.seqlen},
                           {"head_dim", r.head_dim}, {"causal", r.causal}};
      for (const auto &[name, a] : {std::pair{"dq", &r.vs_fp64.dq}, {"dk", &r.vs_fp64.dk}, {"dv", &r.vs_fp64.dv}}) {
        o[std::string("cos_") + name] = a->cosine;
        o[std::string("rel_l2_") + name] = a->rel_l2;
      }
      arr.push_back(std::move(o));
    }
    llvm::outs() << llvm::formatv("{0:2}", llvm::json::Value(std::move(arr))) << "\n";
    return;
  }
  std::string last_group;
  for (const BackwardAccuracyRow &r : rows) {
    const std::string group = fmt::format("sigma={:g} seqlen={} head_dim={} causal={}", r.sigma, r.seqlen,
                                          r.head_dim, r.causal ? "yes" : "no");
    if (group != last_group) {
      fmt::print("{}{}\n  {:<18} {:>9} {:>9} {:>9} {:>11} {:>11} {:>11}\n", last_group.empty() ? "" : "\n", group,
                 "P/V, dS against", "cos dQ", "cos dK", "cos dV", "rel_l2 dQ", "rel_l2 dK", "rel_l2 dV");
      last_group = group;
    }
    const cpu::GradientAgreement &a = r.vs_fp64;
    fmt::print("  {:<18} {:>9.5f} {:>9.5f} {:>9.5f} {:>11.5f} {:>11.5f} {:>11.5f}\n",
               r.variant == "e4m3" ? "e4m3, bf16 Q/K" : r.variant == "mxfp4" ? "mxfp4, bf16 Q/K" : "e4m3, saved Q/K",
               a.dq.cosine, a.dk.cosine, a.dv.cosine, a.dq.rel_l2, a.dk.rel_l2, a.dv.rel_l2);
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

// `out` = parse() when the flag `name` was given; otherwise `out` keeps its default.
template <class T, class Parse> llvm::Error readIfGiven(const CliFlags &flags, llvm::StringRef name, Parse parse, T &out) {
  if (!flags.has(name))
    return llvm::Error::success();
  auto v = parse();
  if (!v)
    return v.takeError();
  out = std::move(*v);
  return llvm::Error::success();
}

// The grid from the flags (defaults: AccuracyGrid's).
llvm::Error readGrid(const CliFlags &flags, AccuracyGrid &grid) {
  llvm::Error lists[] = {
      readIfGiven(flags, "sigma", [&] { return flags.numbers("sigma", ""); }, grid.sigmas),
      readIfGiven(flags, "seqlen", [&] { return seqlensFlag(flags, ""); }, grid.seqlens),
      readIfGiven(flags, "head-dim", [&] { return headDimsFlag(flags, ""); }, grid.head_dims),
      readIfGiven(flags, "causal", [&] { return causalFlag(flags, ""); }, grid.causal),
      readIfGiven(flags, "route", [&] { return routePresetsFlag(flags, ""); }, grid.routes),
      readIfGiven(flags, "classifiers", [&] { return flags.list("classifiers", ""); }, grid.classifiers)};
  llvm::Error bad_list = llvm::Error::success();
  for (llvm::Error &e : lists)
    bad_list = llvm::joinErrors(std::move(bad_list), std::move(e));
  if (bad_list)
    return bad_list;
  const std::string scores = flags.str("scores", "fp32");
  if (scores != "fp32" && scores != "fp16")
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "--scores " + scores + ": give fp32 or fp16");
  grid.scores_fp16 = scores == "fp16";
  const std::string widening = flags.str("qk-widening", "e4m3");
  if (widening != "e4m3" && widening != "bf16")
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "--qk-widening " + widening + ": give e4m3 or bf16");
  grid.qk_widening = widening == "bf16" ? Widening::Bf16 : Widening::E4m3;
  if (flags.has("slack")) {
    auto slack = flags.number("slack", 0.0);
    if (!slack)
      return slack.takeError();
    if (*slack < 0.0 || *slack > 8.0)
      return llvm::createStringError(llvm::inconvertibleErrorCode(), "--slack: give 0 to 8 (log2 units)");
    grid.guard_slack_log2 = static_cast<float>(*slack);
  }
  auto rows = flags.integer("rows", grid.rows, 1, 1 << 20);
  if (!rows)
    return rows.takeError();
  grid.rows = static_cast<int>(*rows);
  auto threads = threadsFlag(flags);
  if (!threads)
    return threads.takeError();
  grid.threads = static_cast<int>(*threads);
  auto seed = flags.integer("seed", static_cast<long>(grid.seed), 0, (1L << 31) - 1);
  if (!seed)
    return seed.takeError();
  grid.seed = static_cast<uint64_t>(*seed);
  return llvm::Error::success();
}

} // namespace

int runAccuracy(int argc, char **argv) {
  CliFlags flags({{"sigma"}, shared_flags::seqlen(), shared_flags::headDim(), shared_flags::causal(),
                  shared_flags::route(), {"classifiers"}, {"scores"}, {"qk-widening"}, {"slack"}, {"rows"},
                  shared_flags::threads(), {"seed"}, {"calibrate"}, shared_flags::json(),
                  {"backward", FlagValue::None}, {"formats", FlagValue::None}, {"plot"}});
  if (auto e = flags.parse(argc, argv))
    return std::fprintf(stderr, "fa4jit accuracy: %s\n%s", llvm::toString(std::move(e)).c_str(), kUsage), 2;
  if (flags.help())
    return std::fputs(kUsage, stdout), 0;
  const bool json = flags.has("json");
  const std::string calibrate = flags.str("calibrate", "");
  AccuracyGrid grid;
  if (auto e = readGrid(flags, grid))
    return fail(llvm::toString(std::move(e)));
  if (!calibrate.empty())
    return runCalibrate(calibrate, json);
  if (auto e = validateGrid(grid))
    return fail(llvm::toString(std::move(e)));
  ProgressLine progress(!json);
  if (flags.has("plot") && !flags.has("formats"))
    return std::fprintf(stderr, "fa4jit accuracy: --plot draws the --formats study: add --formats\n"), 2;
  if (flags.has("formats")) {
    if (!flags.has("sigma"))
      grid.sigmas = {0.5, 1, 2, 4, 8, 16, 30, 100, 300};
    if (!flags.has("seqlen"))
      grid.seqlens = {1024};
    if (!flags.has("causal"))
      grid.causal = {false};
    auto rows = runFormatAccuracy(grid, [&](int done, int total) { progress.update("grid points", done, total); });
    progress.clear();
    if (!rows)
      return fail(llvm::toString(rows.takeError()));
    printFormats(*rows, json);
    const std::string plot = flags.str("plot", "");
    if (!plot.empty() && !rows->empty()) {
      std::error_code ec;
      llvm::raw_fd_ostream os(plot, ec);
      if (ec)
        return fail("cannot write " + plot + ": " + ec.message());
      os << formatsPlot(*rows);
      if (!json)
        fmt::print("plot: {}\n", plot);
    }
    return 0;
  }
  if (flags.has("backward")) {
    auto rows = runBackwardAccuracy(grid, [&](int done, int total) { progress.update("grid points", done, total); });
    progress.clear();
    if (!rows)
      return fail(llvm::toString(rows.takeError()));
    printBackward(*rows, json);
    return 0;
  }
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
