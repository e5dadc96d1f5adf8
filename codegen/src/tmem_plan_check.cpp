// TMEM plan invariants, and the bridge between a plan and the kernel spec.
#include "fa4jit/codegen/tmem_planner.h"

#include <fmt/format.h>

#include <algorithm>

namespace fa4jit::tmem {
namespace {

llvm::Error fail(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "tmem plan: " + msg);
}

bool overlaps(const Region &a, const Region &b) {
  return a.first_column < b.endColumn() && b.first_column < a.endColumn();
}

bool inside(const Region &inner, const Region &outer) {
  return inner.first_column >= outer.first_column && inner.endColumn() <= outer.endColumn();
}

} // namespace

llvm::Error verifyPlan(const TmemPlan &plan) {
  if (!plan.fits)
    return fail("does not fit: " + plan.rejected_reason);
  const int a = plan.allocation_columns;
  if (a < kMinAllocColumns || a > kCapacityColumns || (a & (a - 1)) != 0)
    return fail(fmt::format("allocation {0} is not a power of two in [32, 512] (tcgen05.alloc)", a));
  if (plan.used_columns > a)
    return fail(fmt::format("{0} columns used but only {1} allocated", plan.used_columns, a));
  for (const Region &r : plan.regions) {
    if (r.columns <= 0 || r.first_column < 0 || r.endColumn() > a)
      return fail(fmt::format("region {0} (columns {1}..{2}) lies outside the {3} allocated columns", r.name,
                                r.first_column, r.endColumn() - 1, a));
    if (r.lanes != kLanes)
      return fail(fmt::format("region {0} spans {1} lanes, not {2}", r.name, r.lanes, kLanes));
    if (!r.aliases.empty()) {
      const Region *host = plan.find(r.aliases);
      if (!host || !host->aliases.empty())
        return fail(fmt::format("region {0} aliases '{1}', which is not a primary region", r.name, r.aliases));
      if (!inside(r, *host))
        return fail(fmt::format("region {0} is declared an alias of {1} but sticks out of it", r.name, host->name));
    }
  }
  for (size_t i = 0; i < plan.regions.size(); ++i)
    for (size_t j = i + 1; j < plan.regions.size(); ++j) {
      const Region &x = plan.regions[i], &y = plan.regions[j];
      if (!overlaps(x, y))
        continue;
      const bool declared = x.aliases == y.name || y.aliases == x.name;
      if (!declared)
        return fail(fmt::format("regions {0} ({1}..{2}) and {3} ({4}..{5}) overlap without a declared alias", x.name,
                                  x.first_column, x.endColumn() - 1, y.name, y.first_column, y.endColumn() - 1));
    }
  return llvm::Error::success();
}

llvm::Error fillTmemPlanRef(const TmemPlan &plan, TmemPlanRef &out) {
  if (llvm::Error e = verifyPlan(plan))
    return e;
  TmemPlanRef ref;
  ref.columns_allocated = plan.allocation_columns;
  auto col = [&](const std::string &name) {
    const Region *r = plan.find(name);
    return r ? r->first_column : -1;
  };
  for (int t = 0; t < 2; ++t) {
    const std::string i = std::to_string(t);
    ref.s_col[t] = col("S" + i);
    ref.o_col[t] = col("O" + i);
    ref.p_col[t] = col("P" + i);
    ref.sfq_col[t] = col("SFQ" + i);
    ref.sfp_col[t] = col("SFP" + i);
    // Shared scale factors (dedicated) have one region; in-gap placement copies them per tile.
    ref.sfk_col[t] = plan.find("SFK") ? col("SFK") : col("SFK." + i);
    ref.sfv_col[t] = plan.find("SFV") ? col("SFV") : col("SFV." + i);
  }
  ref.s_spare_col = col("S*");
  int lowest = -1;
  for (const Region &r : plan.regions)
    if (r.kind == RegionKind::ScaleFactors)
      lowest = lowest < 0 ? r.first_column : std::min(lowest, r.first_column);
  ref.sf_col = lowest;
  out = ref;
  return llvm::Error::success();
}

llvm::Expected<TmemRequest> requestFromSpec(const KernelSpec &spec) {
  if (spec.target != Target::Sm100a)
    return fail(fmt::format("target {0} has no tensor memory (sm_100a only)", toString(spec.target)));
  if (spec.family != KernelFamily::AttentionForward)
    return fail("only attention kernels use tensor memory");
  const AttentionSpec &a = spec.attention;
  if (a.tile.shape.block_m != 128 && a.tile.shape.block_m != 256)
    return fail(fmt::format("block_m {0} is not 128 or 256 (one or two 128-row MMA tiles)", a.tile.shape.block_m));
  TmemRequest r;
  r.route = a.route;
  r.formats = defaultOperandFormats(a.route);
  // A Hopper-style widening on sm_100a feeds FP8 instead of block-scaled FP4.
  if (a.route != Route::Bf16 && a.operands.qk_widening != Widening::Native)
    r.formats.qk = OperandFormat::Fp8E4m3;
  if (a.route == Route::DirectP && a.operands.v_widening != Widening::Native)
    r.formats.p = r.formats.v = OperandFormat::Fp8E4m3;
  r.head_dim = a.head_dim;
  r.q_tiles = a.tile.shape.block_m / 128;
  r.block_n = a.tile.shape.block_n;
  return r;
}

} // namespace fa4jit::tmem
