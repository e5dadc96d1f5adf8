#pragma once
// The autotuner's search space for one decode shape over the paged cache: the plans worth timing
// (the paged-kv module's decode warps and step staging, and the key splits per sequence), in a
// fixed order with the
// heuristic's plan (chooseDecodeGrid) first, each with a short label. The page size, V format and
// head dim are the cache's and never vary; GQA packing is fixed by the row-block layout.
#include "fa4jit/codegen/spec.h"

#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace fa4jit {

struct DecodeShape {
  Target target = Target::Sm90a;
  int head_dim = 128;
  int page_size = 16;
  KvValueFormat value_format = KvValueFormat::Fp8;
  long long base_ctas = 1; // CTAs without splits: sequences x kv heads x row blocks
  int max_seq_len = 1;     // the longest sequence's tokens
  int sm_count = 132;
};

// Decode plans are tuned per power-of-two bucket of the grid without splits (the smallest power of
// two >= base_ctas): what decides the split count is how much of the GPU that grid fills.
int decodeCtaBucket(long long base_ctas);

struct DecodeCandidate {
  KernelSpec spec; // family PagedKv
  int splits = 1;
  std::string label; // "w4 s8" (registers), "w4 s8 ring3" (kv_stages 3)
};

struct DecodeCandidateList {
  std::vector<DecodeCandidate> kept; // kept[0] is the heuristic's plan
  int heuristic = 0;
};

// Warps 4 and 8, kv_stages 0 and 3, and splits 1, 2, 4, 8, 16 that leave every split at least
// kMinKeysPerSplit keys of max_seq_len. Deterministic. Errors: a shape no paged-kv spec serves (head dim, page size).
inline constexpr int kMinKeysPerSplit = 64;
llvm::Expected<DecodeCandidateList> enumerateDecodeCandidates(const DecodeShape &shape);

} // namespace fa4jit
