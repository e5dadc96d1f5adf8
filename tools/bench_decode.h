#pragma once
// `fa4jit bench --decode`: decode over the paged NVFP4-K / FP8-V cache (Engine::decode, the combine
// of its splits included) per batch, context and page size, timed on the GPU, with the bandwidth it
// achieves on the cache's bytes beside a device copy's and the time a BF16 cache would need at copy
// bandwidth (the BF16 roofline). scripts/bench_decode.py times PyTorch SDPA's BF16 decode beside it.
#include "fa4jit/codegen/spec.h"

#include <vector>

namespace fa4jit::tools {

struct DecodeBenchOptions {
  std::vector<int> batches, contexts, page_sizes, splits; // splits 0: the heuristic's
  std::vector<KvValueFormat> value_formats;
  int q_heads = 32, kv_heads = 8, head_dim = 128, queries = 1;
  int reps = 0;
  bool json = false;
};

// Prints one table line (or one JSON object with json) per grid point; returns the exit code.
int runDecodeBench(const DecodeBenchOptions &options);

} // namespace fa4jit::tools
