#pragma once
// The experiment behind `fa4jit accuracy --backward`: for each grid point (sigma, seqlen, head dim
// 64/128, causal), Gaussian Q, K, V, dO, one head, the nvfp8 forward's O and LSE from its CPU
// model, then each backward variant's model (E4M3 or MXFP4 P/V; BF16 or saved NVFP4 Q/K in the dS
// products) against the FP64 reference gradients (docs/NUMERICS.md §3).
#include <functional>
#include <string>
#include <vector>

#include "accuracy_grid.h"
#include "fa4jit/cpu/backward.h"

namespace fa4jit::tools {

struct BackwardAccuracyRow {
  std::string variant; // "e4m3", "e4m3 saved-nvfp4", "mxfp4"
  double sigma = 0;
  int seqlen = 0, head_dim = 0;
  bool causal = false;
  cpu::GradientAgreement vs_fp64;
};

// The grid's sigmas, lengths, head dims (64 and 128 only) and masks; its seed and threads.
llvm::Expected<std::vector<BackwardAccuracyRow>>
runBackwardAccuracy(const AccuracyGrid &grid, const std::function<void(int, int)> &progress);

} // namespace fa4jit::tools
