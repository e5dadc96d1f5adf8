// Overlap windows of a TMEM plan: which MMAs of consecutive steps can be in flight together
// because their destinations have columns of their own.
//
// The tensor core runs the MMAs of one CTA in issue order. What the columns decide is whether the
// MMA warp may *issue* QK^T of KV tile j+1 before PV of tile j has finished reading P_t out of
// S_t (P aliases S): only if QK(j+1) has another S destination. Without one, QK(j+1) waits for
// PV(j), and the softmax of tile j+1 cannot start before PV(j) completes (docs/ARCHITECTURE.md
// §7; the paper's profiling shows exactly this at D = 128: 512 columns, no overlap).
#include "tmem_internal.h"

#include <fmt/format.h>

namespace fa4jit::tmem::detail {
namespace {

struct Variant {
  std::string change;
  TmemRequest request;
};

std::vector<Variant> leverVariants(const TmemPlan &plan) {
  const TmemRequest &r = plan.request;
  std::vector<Variant> v;
  auto with = [&](std::string change, auto edit) {
    TmemRequest x = r;
    x.claim_windows = false;
    x.sf_placement = SfPlacement::Auto;
    edit(x);
    v.push_back({std::move(change), x});
  };
  if (r.q_tiles == 2)
    with("one Q tile per CTA (q_tiles 1): frees one S and one O", [](TmemRequest &x) { x.q_tiles = 1; });
  if ((r.head_dim / r.o_split) % 32 == 0 && r.o_split < 4)
    with(fmt::format("split O by head dim (o_split {0}): sibling CTAs own the other columns and recompute S",
                       r.o_split * 2),
         [](TmemRequest &x) { x.o_split *= 2; });
  const int half_n = r.block_n / 2;
  if (half_n >= 32 && half_n % 32 == 0 && (bits(r.formats.p) != 4 || half_n % 64 == 0))
    with(fmt::format("smaller S tiles (block_n {0}): S and its extra destination both shrink", half_n),
         [half_n](TmemRequest &x) { x.block_n = half_n; });
  if (plan.sf_placement_used != SfPlacement::InScoreGap && r.q_tiles == 2 &&
      (scaleVecSize(r.formats.qk) || scaleVecSize(r.formats.p)))
    with("scale factors in dead score columns (sf in-score-gap)",
         [](TmemRequest &x) { x.sf_placement = SfPlacement::InScoreGap; });
  if (bits(r.formats.p) > 4)
    with("FP4 P and V (mxfp4): P aliases S already, so this only widens the dead-score gap",
         [](TmemRequest &x) { x.formats.p = x.formats.v = OperandFormat::Mxfp4; });
  return v;
}

std::vector<Lever> evaluateLevers(const TmemPlan &plan) {
  std::vector<Lever> out;
  for (const Variant &v : leverVariants(plan)) {
    llvm::Expected<TmemPlan> p = placeRegions(v.request);
    if (!p) {
      llvm::consumeError(p.takeError()); // a variant the shape cannot take is simply not offered
      continue;
    }
    out.push_back({v.change, p->fits, p->fits ? p->spare_columns : 0, extraDestinations(*p, v.request.block_n)});
  }
  return out;
}

OverlapWindow nextQkWindow(const TmemPlan &plan) {
  const TmemRequest &r = plan.request;
  OverlapWindow w;
  w.name = "QK(j+1) || PV(j)";
  w.needed_columns = r.block_n;
  w.spare_columns = plan.fits ? plan.spare_columns : 0;
  w.destinations = extraDestinations(plan, r.block_n);
  w.open = w.destinations > 0;
  if (!plan.fits) {
    w.explanation = "the plan does not fit, so no window is analysed";
  } else if (w.open) {
    w.explanation = fmt::format(
        "{0} spare columns hold {1} extra S destination(s) of {2}: QK^T of KV tile j+1 can be issued into one while "
        "PV of tile j still reads P (aliasing S) and accumulates into O, so softmax of tile j+1 starts without "
        "waiting for PV(j)",
        w.spare_columns, w.destinations, r.block_n);
    if (w.destinations < r.q_tiles)
      w.explanation += "; the Q tiles rotate the spare destination (in-order MMA execution frees the oldest S "
                       "before the next QK needs it)";
    if (scaleVecSize(r.formats.qk))
      w.explanation += "; QK's scale factors may then ride in the dead score columns of the buffer whose P is "
                       "being read, which needs P(j) ready but not PV(j) done";
  } else {
    w.explanation = fmt::format(
        "the plan claims {0} of {1} columns; another S destination needs {2} but only {3} are spare, so QK^T of KV "
        "tile j+1 must wait until PV(j) has read P out of S (P aliases S) and the tensor core idles between them{4}",
        plan.used_columns, kCapacityColumns, r.block_n, w.spare_columns,
        r.q_tiles == 2 ? " unless the other Q tile's MMAs fill the gap" : "");
  }
  w.levers = evaluateLevers(plan);
  return w;
}

OverlapWindow epilogueWindow(const TmemPlan &plan) {
  const TmemRequest &r = plan.request;
  OverlapWindow w;
  w.name = "PV(next work tile) || O epilogue";
  w.needed_columns = r.head_dim / r.o_split;
  // Columns a claimed S destination took are not available to this window.
  w.spare_columns = plan.fits ? plan.spare_columns : 0;
  w.destinations = extraDestinations(plan, w.needed_columns);
  w.open = w.destinations > 0;
  w.explanation =
      w.open ? fmt::format("{0} spare columns hold another O of {1}: a persistent CTA can start accumulating its "
                             "next work tile while the epilogue still drains O",
                             w.spare_columns, w.needed_columns)
             : fmt::format("another O needs {0} columns, {1} are spare: the first PV of the next work tile waits "
                             "for the epilogue to read O out of TMEM",
                             w.needed_columns, w.spare_columns);
  return w;
}

} // namespace

void analyzeOverlap(TmemPlan &plan) {
  plan.windows.push_back(nextQkWindow(plan));
  const TmemRequest &r = plan.request;
  OverlapWindow &qk = plan.windows.front();
  if (r.claim_windows && qk.open) {
    plan.regions.push_back({"S*", plan.used_columns, r.block_n, kLanes, RegionKind::SpareScores, "",
                            "extra S destination of the QK(j+1) || PV(j) window, rotated among the Q tiles"});
    plan.used_columns += r.block_n;
    plan.spare_columns = kCapacityColumns - plan.used_columns;
    plan.allocation_columns = allocationColumns(plan.used_columns);
    qk.explanation += fmt::format("; claimed as S* at columns {0}-{1}", plan.used_columns - r.block_n,
                                    plan.used_columns - 1);
  }
  plan.windows.push_back(epilogueWindow(plan));
}

} // namespace fa4jit::tmem::detail
