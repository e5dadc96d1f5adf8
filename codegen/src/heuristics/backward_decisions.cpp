// The attention backward's decision table (templates/fa4jit/attention_backward): the tiles of a
// head dim. Each warp keeps dK and dV of its 16 keys in registers (head_dim FP32 per thread), so
// the query step is as wide as the rest of the registers allow without spilling (spec_validate's
// backward rules; the compile-all test shows 0 spills for every variant):
//  - D64: 64 queries per step, 4 warps (64 keys per CTA): the widest step, and 4 warps share
//    each Q/dO block that is loaded once per 64 keys;
//  - D128: 32 queries per step (the accumulators take 128 registers; 64 spills), 4 warps: a
//    32-query step fills the k = 32 of the FP8 dV product, which 16 queries leave half empty.
#include "decisions.h"

namespace fa4jit::decisions {

BackwardChoice backwardChoice(int head_dim) {
  if (head_dim == 128)
    return {BackwardMma::MmaSync, TileShape{32, 64, 4}};
  return {BackwardMma::MmaSync, TileShape{64, 64, 4}};
}

} // namespace fa4jit::decisions
