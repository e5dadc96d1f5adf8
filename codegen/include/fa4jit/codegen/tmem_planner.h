#pragma once
// TMEM planner (sm_100a): assigns tensor-memory columns to the buffers of one attention CTA and
// reports which MMA overlap windows the assignment leaves (docs/ARCHITECTURE.md §7).
//
// Tensor memory is 128 lanes x 512 columns x 32 bit per SM. A CTA owns one `tcgen05.alloc` of a
// power-of-two column count in [32, 512] (one warp allocates and frees). Every buffer here spans
// all 128 lanes (M = 128 rows per Q tile, one row per lane), so a plan is a map of columns:
//   S_t  FP32 scores of Q tile t             block_n columns
//   O_t  FP32 output accumulator of tile t   head_dim columns
//   P_t  probabilities, aliasing S_t         block_n * bits(P) / 32 columns, top end of S_t
//   SF*  block-scale factors of block-scaled MMA operands (UE4M3 / UE8M0, tcgen05.cp
//        32x128b.warpx4 copies replicate them into all four 32-lane subpartitions)
// The planner is pure: request in, plan out. Malformed requests are errors; requests that are
// well formed but do not fit return a plan with `fits == false` and the reason.
#include "fa4jit/codegen/spec.h"

#include <llvm/Support/Error.h>

#include <string>
#include <vector>

namespace fa4jit::tmem {

inline constexpr int kLanes = 128;
inline constexpr int kCapacityColumns = 512;
inline constexpr int kMinAllocColumns = 32;

// Format of one MMA operand as the tensor core consumes it.
enum class OperandFormat : uint8_t {
  Bf16,    // 16 bit, no block scale
  Fp8E4m3, // 8 bit, per-tensor/per-head scale applied outside the MMA (kind::f8f6f4)
  Nvfp4,   // E2M1 + UE4M3 per 16 along K (kind::mxf4nvf4, scale_vec::4X)
  Mxfp4,   // E2M1 + UE8M0 per 32 along K (kind::mxf4, scale_vec::2X)
};
int bits(OperandFormat f);
int scaleVecSize(OperandFormat f); // elements per block scale; 0 if not block-scaled
const char *toString(OperandFormat f);

struct OperandFormats {
  OperandFormat qk = OperandFormat::Nvfp4; // Q and K (QK^T reduces over the head dim)
  OperandFormat p = OperandFormat::Mxfp4;  // P, the A operand of PV (reduces over keys), from TMEM
  OperandFormat v = OperandFormat::Mxfp4;  // V, the B operand of PV
};
// The routes of docs/NUMERICS.md §2 as fed to sm_100a tensor cores.
OperandFormats defaultOperandFormats(Route route);

// Where block-scale factors go.
// "Dead score columns": the part of S_t that P_t does not use, free between softmax_t reading S_t
// and the next QK writing it.
enum class SfPlacement : uint8_t {
  Auto,         // PvInScoreGap, or InScoreGap when that is needed to fit or to open a window
  Dedicated,    // all in own columns after the accumulators (CUTLASS's convention)
  PvInScoreGap, // PV's scales (SFP, SFV) in their own tile's dead score columns (costs no
                // dependency: they die before QK may rewrite S anyway); QK's scales dedicated
  InScoreGap,   // PV's as above; QK's (SFQ, SFK) in the other tile's dead score columns, which
                // ties QK(t) to softmax(1-t) (a public FA4 block-scaled fork does this)
};
const char *toString(SfPlacement p);

struct TmemRequest {
  Route route = Route::DirectP;
  OperandFormats formats = defaultOperandFormats(Route::DirectP);
  int head_dim = 128;  // multiple of 16 in [16, 256]; of 64 when Q/K are FP4 (MMA-K = 64)
  int q_tiles = 2;     // 128-row Q tiles per CTA (FA4 runs two, ping-ponging softmax)
  int block_n = 128;   // keys per S tile; multiple of 32 in [32, 256]
  int o_split = 1;     // O columns per CTA = head_dim / o_split (sibling CTAs own the rest)
  SfPlacement sf_placement = SfPlacement::Auto;
  bool claim_windows = false; // add the spare S destination of an open window to the plan
};

// Request from a kernel spec: sm_100a only; q_tiles = block_m / 128.
llvm::Expected<TmemRequest> requestFromSpec(const KernelSpec &spec);

enum class RegionKind : uint8_t {
  Scores,       // S_t, FP32 accumulator of QK^T
  Output,       // O_t, FP32 accumulator of PV
  Probabilities,// P_t, written by softmax (tcgen05.st), read by PV as operand A
  ScaleFactors, // SFQ/SFK/SFP/SFV
  SpareScores,  // the extra S destination of an open overlap window
};
const char *toString(RegionKind k);

struct Region {
  std::string name;
  int first_column = 0;
  int columns = 0;
  int lanes = kLanes;
  RegionKind kind = RegionKind::Scores;
  std::string aliases; // name of the region whose columns this one reuses; empty if none
  std::string note;    // what it holds and, for aliases, why the lifetimes do not collide
  int endColumn() const { return first_column + columns; }
};

// A change of the request and what it does to the window (evaluated by re-planning).
struct Lever {
  std::string change;
  bool fits = false;
  int spare_columns = 0;
  int destinations = 0;
};

struct OverlapWindow {
  std::string name;         // e.g. "QK(j+1) || PV(j)"
  bool open = false;
  int needed_columns = 0;   // columns one more destination needs
  int spare_columns = 0;    // capacity columns no region claims
  int destinations = 0;     // extra destinations that fit
  std::string explanation;
  std::vector<Lever> levers; // what would open (or widen) it
};

struct TmemPlan {
  TmemRequest request;
  bool fits = false;
  std::string rejected_reason; // which buffers, how many columns over
  int used_columns = 0;        // end of the last non-aliased region (may exceed 512 if !fits)
  int allocation_columns = 0;  // tcgen05.alloc argument; 0 if !fits
  int spare_columns = 0;       // kCapacityColumns - used_columns (>= 0 when fits)
  SfPlacement sf_placement_used = SfPlacement::Dedicated;
  std::vector<Region> regions;
  std::vector<OverlapWindow> windows;
  std::vector<std::string> notes; // decisions worth reading (SF conflicts, dependencies added)

  const Region *find(const std::string &name) const;
};

// Columns of the scale factors of one block-scaled MMA operand held for a K extent:
// ceil(mn / 128) * 4 columns per group of four scales along K (a 32x128b.warpx4 copy puts 32 rows
// x 16 bytes in 32 lanes x 4 columns and replicates them to all four subpartitions).
int scaleFactorColumns(int mn, int k_extent, int scale_vec);

// Smallest legal tcgen05.alloc column count holding `columns` (0 if more than 512).
int allocationColumns(int columns);

llvm::Expected<TmemPlan> planTmem(const TmemRequest &request);

// Checks the invariants every plan must keep: regions overlap only where declared as aliases
// (and an alias lies inside the region it names), nothing past the allocation, legal alloc size.
llvm::Error verifyPlan(const TmemPlan &plan);

// Records a plan that fits in the spec (part of the generated source and cache key).
llvm::Error fillTmemPlanRef(const TmemPlan &plan, TmemPlanRef &out);

} // namespace fa4jit::tmem
