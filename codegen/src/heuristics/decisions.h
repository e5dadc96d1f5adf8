#pragma once
// The decision tables behind heuristics.h, one per kernel family (private to codegen).
#include "fa4jit/codegen/spec.h"

namespace fa4jit::decisions {

// sm_90a's wgmma kernel (sm90_decisions.cpp): the tiles and schedule of (route, head dim, causal)
// written into `t`; false where the table has no row (a head dim the kernel does not take).
bool sm90WgmmaTiles(Route route, int head_dim, bool causal, TileSpec &t);
// The wgmma defaults that change with the number of keys (the causal grid, nvfp8's widening site).
void applyLengthRules(Route route, bool causal, int seqlen_k, TileSpec &t);

// D128's three consumers fit 128-key tiles only with FP16 scores (and directp's only with thread
// key blocks): `s` with 96-key tiles where its 128 do not fit (spec_edits.cpp).
KernelSpec fittingThreeConsumerKeys(KernelSpec s);

// The mma.sync kernel (every target from sm_80; mma_sync_decisions.cpp).
TileSpec mmaSyncTiles(Route route, int head_dim);

// The attention backward of a head dim (backward_decisions.cpp).
struct BackwardChoice {
  BackwardMma mma;
  TileShape tile;
};
BackwardChoice backwardChoice(int head_dim);
BackwardChoice backwardChoice(int head_dim, BackwardMma mma); // (that main pass's tiles)

} // namespace fa4jit::decisions
