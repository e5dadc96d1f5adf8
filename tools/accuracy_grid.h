#pragma once
// The experiment behind `fa4jit accuracy`: for each grid point (sigma, seqlen, head dim, causal),
// Gaussian Q, K, V ~ N(0, sigma^2), one head, a subset of query rows against all keys; every
// route model (and every Direct-P classifier variant) compared with the FP64 reference and with
// the BF16 route.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "fa4jit/codegen/route_presets.h"
#include "fa4jit/codegen/spec.h"
#include "fa4jit/cpu/reference.h"
#include "llvm/Support/Error.h"

namespace fa4jit::tools {

// Direct-P classifier variants the table reports.
//  threshold: exp2 + round to nearest (up to the FP16 grid), as comparisons;  affine: alpha and beta fitted;
//  affine-a2: alpha = 2, beta fitted;  mixed: affine below a fitted y_split, exp2 above.
inline const char *const kClassifierVariants[] = {"piecewise", "threshold", "affine", "affine-a2", "mixed"};

struct AccuracyGrid {
  std::vector<double> sigmas = {0.5, 1.0, 2.0};
  std::vector<int> seqlens = {1024, 4096};
  std::vector<int> head_dims = {128};
  std::vector<bool> causal = {false, true};
  // Route presets (route_presets.h); the E4M3 Q/K ones feed Q/K as stored, whatever qk_widening says.
  std::vector<RoutePreset> routes = {{Route::Bf16}, {Route::Nvfp8}, {Route::DirectP}};
  std::vector<std::string> classifiers = {"piecewise", "threshold", "affine", "affine-a2", "mixed"};
  Widening qk_widening = Widening::E4m3; // how the models widen NVFP4 Q/K (NUMERICS.md §2.1)
  // FP8-fed routes: S as the sm_90a kernels' FP16 accumulators (TileSpec::scores_fp16, with Q/K
  // widened by 2^-7, or 2^-8 at D256) instead of FP32 ones.
  bool scores_fp16 = false;
  // The range guard's slack (log2 units); unset: each route's default (applyRouteNumericsDefaults).
  // The FP8-fed routes then feed P with offset 8 - ceil(slack), the most E4M3 allows.
  std::optional<float> guard_slack_log2;
  int rows = 256;        // query rows sampled evenly over the sequence
  uint64_t seed = 1;
  int threads = 0;       // 0: all cores
};

struct AccuracyRow {
  std::string route;
  std::string classifier; // "none" for routes without a classifier
  ClassifierSpec coefficients;
  double sigma = 0;
  int seqlen = 0, head_dim = 0;
  bool causal = false;
  double cos_vs_fp64 = 0, cos_vs_bf16 = 0;
  double rel_l2_vs_fp64 = 0, rel_l2_vs_bf16 = 0;
};

// n values ~ N(0, sigma^2) of the experiments' generator, from `seed`.
std::vector<float> gaussian(std::size_t n, double sigma, uint64_t seed);

// One grid point's inputs as every forward experiment draws them: Q, K, V ~ N(0, sigma^2) from
// seeds 3 seed + 0, 1, 2, one head, and min(rows, seqlen) query rows sampled evenly.
struct GridPointInputs {
  std::vector<float> q, k, v;
  cpu::AttentionProblem problem;  // views of q, k, v
  cpu::ReferenceOptions reference; // the mask, the sampled rows and the grid's threads
};
GridPointInputs gridPointInputs(const AccuracyGrid &grid, double sigma, int seqlen, int head_dim, bool causal);

// fn(sigma, seqlen, head dim, causal) for every grid point in order, then progress(done, total);
// the first error stops the walk and is returned.
llvm::Error forEachGridPoint(const AccuracyGrid &grid, const std::function<void(int, int)> &progress,
                             const std::function<llvm::Error(double, int, int, bool)> &fn);

// Checks the grid (head dims 64/128/256, lengths and rows >= 1, sigma > 0, known classifiers).
llvm::Error validateGrid(const AccuracyGrid &grid);

// `progress(done, total)` is called after each grid point.
llvm::Expected<std::vector<AccuracyRow>>
runAccuracyGrid(const AccuracyGrid &grid, const std::function<void(int, int)> &progress);

// The classifier of a variant for one shape (fits the Gaussian score model of the shape).
llvm::Expected<ClassifierSpec> classifierForVariant(const std::string &variant, double sigma,
                                                   int seqlen, bool causal, uint64_t seed);

} // namespace fa4jit::tools
