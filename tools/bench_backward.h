#pragma once
// `fa4jit bench --backward`: the training route's forward (from BF16, quantization included), its
// backward, and the two as one training step, timed on the GPU through Engine calls.
#include "fa4jit/codegen/spec.h"

#include <optional>
#include <string>
#include <vector>

namespace fa4jit::tools {

struct BackwardBenchOptions {
  std::vector<int> head_dims, seqlens;
  std::vector<bool> causals;
  long tokens = 0; // batch * heads * seqlen per point
  int reps = 0;
  // default, deterministic, mxfp4, saved-nvfp4, mma-sync, wgmma, or tileMxNxW (the main pass's
  // query step, keys per CTA and warps): one column each.
  std::vector<std::string> variants;
  bool json = false;
};

// The main-pass tile a "tileMxNxW" variant names (none for another name).
std::optional<TileShape> parseBackwardBenchTile(const std::string &name);
// The other variant names BackwardBenchOptions::variants takes.
const std::vector<std::string> &backwardBenchVariants();

// Prints one table line (or one JSON object per variant with json) per grid point; returns the
// process exit code.
int runBackwardBench(const BackwardBenchOptions &options);

} // namespace fa4jit::tools
