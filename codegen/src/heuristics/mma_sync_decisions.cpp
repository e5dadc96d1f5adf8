// mma.sync decision table: the key tile of (route, head dim). 16 query rows per warp, 4 warps, one
// stage. Keys as wide as the registers allow without spilling: wider tiles amortize the per-tile
// barriers, but S (block_n / 4 FP32 registers per thread) sits beside O (head_dim / 2). The
// compile-all test (tests/runtime/test_compile_all_variants.cpp) shows the spills of the next
// wider tile: nvfp8 at D64 with 128 keys 8-20 bytes under its 168-register cap, D256 with 64 keys
// 64 bytes (bf16, nvfp8 causal).
#include "decisions.h"

namespace fa4jit::decisions {
namespace {

struct MmaSyncRow {
  Route route;
  bool any_route;
  int head_dim;
  int block_n;
};
constexpr MmaSyncRow kMmaSyncRows[] = {
    {Route::Nvfp8, false, 64, 64},
    {Route::Bf16, true, 64, 128},
    {Route::Bf16, true, 128, 64},
    {Route::Bf16, true, 256, 32},
};

} // namespace

TileSpec mmaSyncTiles(Route route, int head_dim) {
  TileSpec t;
  t.shape.warps = 4;
  t.shape.block_m = 16 * t.shape.warps;
  t.pipeline.stages = 1;
  t.schedule.kernel = AttentionSchedule::MmaSync;
  for (const MmaSyncRow &r : kMmaSyncRows)
    if ((r.any_route || r.route == route) && r.head_dim == head_dim) {
      t.shape.block_n = r.block_n;
      break;
    }
  return t;
}

} // namespace fa4jit::decisions
