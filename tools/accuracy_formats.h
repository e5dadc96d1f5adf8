#pragma once
// The experiment behind `fa4jit accuracy --formats`: for each grid point (sigma, seqlen, head dim,
// causal) the inputs of `fa4jit accuracy` (Gaussian Q, K, V ~ N(0, sigma^2), one head, the same
// seeds and sampled rows), every Q/K x P/V format pair of the format study (cpu/format_study.h)
// and, beside them, the two FP4 routes' kernel-exact models (nvfp8; directp with the piecewise
// classifier), each against the FP64 reference.
#include <functional>
#include <string>
#include <vector>

#include "accuracy_grid.h"

namespace fa4jit::tools {

struct FormatAccuracyRow {
  std::string label;       // "nvfp4 / e4m3", or "nvfp8 kernel", "directp kernel"
  bool kernel = false;     // a route's kernel-exact model (else the format study)
  double sigma = 0;
  int seqlen = 0, head_dim = 0;
  bool causal = false;
  double cos_vs_fp64 = 0, rel_l2_vs_fp64 = 0;
};

// The grid's sigmas, lengths, head dims, masks, rows, seed and threads (its routes and
// classifiers are not used).
llvm::Expected<std::vector<FormatAccuracyRow>>
runFormatAccuracy(const AccuracyGrid &grid, const std::function<void(int, int)> &progress);

} // namespace fa4jit::tools
