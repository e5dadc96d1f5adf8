#pragma once
// The sm_100a (Blackwell) attention kernel as the code generator sees it: which specs it serves,
// its default tiles, the TMEM plan it is instantiated with, its shared-memory size and the extra
// baked constants (templates/fa4jit/attention_sm100/config.cuh). Pure, no CUDA.
//
// A spec is served by the tcgen05 kernel when it targets sm_100a, its route is nvfp8 or directp and
// Q/K are fed natively (qk_widening == Native: kind::mxf4nvf4 with UE4M3 scales). Its TMEM columns
// come from the planner (requestFromSpec -> planTmem -> fillTmemPlanRef); the spec records the
// plan (attention.tmem), and the emitter re-plans and refuses a spec whose record disagrees.
#include <vector>

#include "fa4jit/codegen/baked_dims.h"
#include "fa4jit/codegen/spec.h"
#include "llvm/Support/Error.h"

namespace fa4jit {

// Tiles of the tcgen05 kernel: one 128-row Q tile per CTA (the planner's q_tiles = 1), 4 warps,
// 128 keys per tile, two K/V stages.
struct Tcgen05AttentionTiles {
  static constexpr int kBlockM = 128;
  static constexpr int kWarps = 4;
  static constexpr int kBlockN = 128;
  static constexpr int kStages = 2;
};

bool isTcgen05Attention(const KernelSpec &spec);

// `spec` (sm_100a, nvfp8 or directp) moved onto the tcgen05 kernel: native FP4 Q/K, V native MXFP4
// (directp) or E4M3 as stored (nvfp8), the tiles above and the TMEM plan filled in.
// Precondition: the planner accepts the shape (true for head dims 64, 128, 256).
KernelSpec withTcgen05Kernel(KernelSpec spec);

// The planner's column assignment for a spec the tcgen05 kernel serves; an error names the reason
// (planner rejection, or a recorded plan in spec.attention.tmem that differs from the planner's).
llvm::Expected<TmemPlanRef> tcgen05TmemPlan(const KernelSpec &spec);

// Dynamic shared memory of the tcgen05 kernel, computed independently of the template's layout
// (Sm100AttentionTraits::kSharedBytes); the emitted static_assert pins the two together.
int tcgen05AttentionSharedBytes(const AttentionSpec &a);

// The config members beyond the mma.sync ones: stages and the TMEM columns.
llvm::Expected<std::vector<BakedConstant>> tcgen05BakedConstants(const KernelSpec &spec);

} // namespace fa4jit
