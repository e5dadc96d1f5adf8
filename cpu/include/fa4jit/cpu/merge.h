#pragma once
// The merge-states kernel's arithmetic on the host (templates/fa4jit/merge, docs/NUMERICS.md §4):
// the same row rule (mergeRowScales) and the same fused multiply-adds in part order, on FP32
// states. Tests hold the kernel to it and it to the FP64 reference over the union of the keys.
#include <cstdint>

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

namespace fa4jit::cpu {

// One FP32 attention state of `rows` rows: O [rows, head_dim] and LSE [rows], contiguous.
struct StateRef {
  const float *o = nullptr;
  const float *lse = nullptr;
};

// Merges 1 .. kMaxMergeParts parts into o [rows, head_dim] and lse [rows] (either may alias a
// part's: each row reads its parts before writing). Errors name a missing part or a bad count.
llvm::Error mergeStatesModel(llvm::ArrayRef<StateRef> parts, std::int64_t rows, int head_dim, float *o, float *lse);

} // namespace fa4jit::cpu
