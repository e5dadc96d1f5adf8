// The attention backward's decision table (templates/fa4jit/attention_backward): the main pass's
// instructions and tiles of a head dim. Both head dims run the wgmma main pass (main_wgmma.cuh),
// which took the backward from 0.31x to 0.56x cuDNN's at D128 against the mma.sync one
// (scripts/bench_backward.py). Each warpgroup keeps dK and dV of its 64 keys in registers, so the
// query step is as wide as the rest of the registers allow without spilling (the compile-all test
// shows 0 spills for every variant):
//  - both head dims: 64 queries per step, two warpgroups (128 keys per CTA): each takes one half
//    of dQ's columns over all 128 keys, so dQ's FP32 reductions are half those of 64-key CTAs and
//    each staged query block serves twice the keys. Against one warpgroup (64 keys): D128 1.7-1.8x,
//    D64 1.08-1.26x, more at longer keys (`fa4jit bench --backward --variants default,tile64x64x4`).
// The mma.sync main pass, where a spec asks for it: 16 keys per warp, 4 warps; D64 steps 64
// queries, D128 32 (its accumulators take 128 registers; 64 spills).
#include "decisions.h"

namespace fa4jit::decisions {

BackwardChoice backwardChoice(int head_dim, BackwardMma mma) {
  if (mma == BackwardMma::Wgmma)
    return {mma, TileShape{64, 128, 8}};
  return {mma, head_dim == 128 ? TileShape{32, 64, 4} : TileShape{64, 64, 4}};
}

BackwardChoice backwardChoice(int head_dim) { return backwardChoice(head_dim, BackwardMma::Wgmma); }

} // namespace fa4jit::decisions
