#pragma once
// Shared between the TMEM planner's translation units (not a public header).
#include "fa4jit/codegen/tmem_planner.h"

namespace fa4jit::tmem::detail {

// Column placement only (regions, fit, allocation, notes); no overlap analysis.
llvm::Expected<TmemPlan> placeRegions(const TmemRequest &request);

// Fills plan.windows (and, when request.claim_windows, claims the spare S destination).
void analyzeOverlap(TmemPlan &plan);

inline int extraDestinations(const TmemPlan &p, int needed) {
  return p.fits && needed > 0 ? p.spare_columns / needed : 0;
}

} // namespace fa4jit::tmem::detail
