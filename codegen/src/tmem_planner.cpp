// TMEM column placement for one attention CTA on sm_100a (see tmem_planner.h).
//
// Order follows FA4's D128 forward (flash_attn/cute/flash_fwd_sm100.py: tmem_s_offset = [0, 128],
// tmem_o_offset = [256, 384], BF16 P at S + n_block/2): all S buffers first, then all O buffers,
// then dedicated scale factors (CUTLASS puts them after the accumulators).
#include "tmem_internal.h"

#include <fmt/format.h>

namespace fa4jit::tmem {
namespace {

llvm::Error invalid(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "tmem plan: " + msg);
}

llvm::Error validate(const TmemRequest &r) {
  if (r.q_tiles != 1 && r.q_tiles != 2)
    return invalid(fmt::format("q_tiles {0} is not 1 or 2 (one 128-row MMA tile per softmax warpgroup)", r.q_tiles));
  if (r.head_dim < 16 || r.head_dim > 256 || r.head_dim % 16 != 0)
    return invalid(fmt::format("head_dim {0} is not a multiple of 16 in [16, 256] (PV's MMA N)", r.head_dim));
  if (r.block_n < 32 || r.block_n > 256 || r.block_n % 32 != 0)
    return invalid(fmt::format("block_n {0} is not a multiple of 32 in [32, 256] (QK's MMA N, Direct-P blocks of 32)", r.block_n));
  if (r.o_split != 1 && r.o_split != 2 && r.o_split != 4)
    return invalid(fmt::format("o_split {0} is not 1, 2 or 4", r.o_split));
  if (r.head_dim % (16 * r.o_split) != 0)
    return invalid(fmt::format("head_dim {0} / o_split {1} is not a multiple of 16", r.head_dim, r.o_split));
  const OperandFormats &f = r.formats;
  if (bits(f.qk) == 4 && r.head_dim % 64 != 0)
    return invalid(fmt::format("head_dim {0} is not a multiple of 64, the K of one FP4 MMA (QK^T reduces over it)", r.head_dim));
  if (f.p == OperandFormat::Nvfp4)
    return invalid("P as NVFP4 is not a route here: P's block scale is a power of two (MXFP4)");
  if (scaleVecSize(f.p) != scaleVecSize(f.v) || (bits(f.p) == 16) != (bits(f.v) == 16))
    return invalid(fmt::format("P ({0}) and V ({1}) cannot feed one MMA kind", toString(f.p), toString(f.v)));
  if (bits(f.p) == 4 && r.block_n % 64 != 0)
    return invalid(fmt::format("block_n {0} is not a multiple of 64, the K of one FP4 MMA (PV reduces over keys)", r.block_n));
  return llvm::Error::success();
}

std::string tileName(const char *base, int t) { return std::string(base) + std::to_string(t); }

struct Builder {
  const TmemRequest &r;
  TmemPlan plan;
  int next = 0;            // first free non-aliased column
  int gap_used[2] = {0, 0}; // columns of S_t's dead-score gap already given to scale factors
  int gap_size = 0;

  void add(Region reg) { plan.regions.push_back(std::move(reg)); }

  void dedicated(const std::string &name, int cols, const std::string &note) {
    add({name, next, cols, kLanes, RegionKind::ScaleFactors, "", note + " (dedicated)"});
    next += cols;
  }

  // Puts a scale-factor region in the dead-score gap of S_buf; falls back to dedicated columns.
  void inGap(int buf, const std::string &name, int cols, const std::string &note) {
    const Region *s = plan.find(tileName("S", buf));
    if (gap_used[buf] + cols > gap_size) {
      plan.notes.push_back(fmt::format("{0} ({1} columns) does not fit in the {2} dead score columns of S{3} left "
                                         "by P: given dedicated columns",
                                         name, cols, gap_size - gap_used[buf], buf));
      dedicated(name, cols, note);
      return;
    }
    add({name, s->first_column + gap_used[buf], cols, kLanes, RegionKind::ScaleFactors, s->name, note});
    gap_used[buf] += cols;
  }
};

TmemPlan place(const TmemRequest &r, SfPlacement placement) {
  Builder b{r, {}};
  b.plan.request = r;
  b.plan.sf_placement_used = placement;
  const int o_cols = r.head_dim / r.o_split;
  const int p_cols = r.block_n * bits(r.formats.p) / 32;
  b.gap_size = r.block_n - p_cols;

  for (int t = 0; t < r.q_tiles; ++t) {
    b.add({tileName("S", t), b.next, r.block_n, kLanes, RegionKind::Scores, "",
           fmt::format("FP32 QK^T of Q tile {0} ({1} keys)", t, r.block_n)});
    b.next += r.block_n;
  }
  for (int t = 0; t < r.q_tiles; ++t) {
    b.add({tileName("O", t), b.next, o_cols, kLanes, RegionKind::Output, "",
           fmt::format("FP32 PV accumulator of Q tile {0} ({1} of {2} head-dim columns)", t, o_cols, r.head_dim)});
    b.next += o_cols;
  }
  // P goes to the top end of S (FA4: BF16 P at S + n_block/2) so the low columns stay one gap.
  for (int t = 0; t < r.q_tiles; ++t) {
    const Region s = *b.plan.find(tileName("S", t));
    b.add({tileName("P", t), s.first_column + b.gap_size, p_cols, kLanes, RegionKind::Probabilities, s.name,
           fmt::format("{0} P of tile {1}: {2} bits x {3} keys; softmax writes it after reading all of {4}, and "
                         "QK of the next KV tile may overwrite {4} only after PV has read it",
                         toString(r.formats.p), t, bits(r.formats.p), r.block_n, s.name)});
  }

  const int qk_vec = scaleVecSize(r.formats.qk);
  const int pv_vec = scaleVecSize(r.formats.p);
  const int sfq = qk_vec ? scaleFactorColumns(128, r.head_dim, qk_vec) : 0;
  const int sfk = qk_vec ? scaleFactorColumns(r.block_n, r.head_dim, qk_vec) : 0;
  const int sfp = pv_vec ? scaleFactorColumns(128, r.block_n, pv_vec) : 0;
  const int sfv = pv_vec ? scaleFactorColumns(o_cols, r.block_n, pv_vec) : 0;
  const std::string qk_sf = qk_vec == 16 ? "UE4M3 per 16" : "UE8M0 per 32";
  const std::string pv_sf = "UE8M0 per 32";

  const bool pv_in_gap = placement == SfPlacement::PvInScoreGap || placement == SfPlacement::InScoreGap;
  const bool qk_in_gap = placement == SfPlacement::InScoreGap && r.q_tiles == 2;
  if (pv_in_gap) {
    // PV's scales live while S_t's scores are dead: after softmax read S_t, until PV read P_t.
    // QK of the next KV tile rewrites S_t only after that, so this adds no dependency.
    for (int t = 0; pv_vec && t < r.q_tiles; ++t) {
      b.inGap(t, tileName("SFP", t), sfp, fmt::format("{0} scales of P{1}; live from softmax {1} writing P{1} until PV{1} completes", pv_sf, t));
      b.inGap(t, tileName("SFV.", t), sfv, fmt::format("{0} scales of V, a copy per Q tile so each dies with its own P", pv_sf));
    }
  }
  if (qk_in_gap) {
    // QK_t's scales cannot share S_t (that MMA writes it); the other tile's gap holds them.
    for (int t = 0; qk_vec && t < r.q_tiles; ++t) {
      const int other = 1 - t;
      b.inGap(other, tileName("SFQ", t), sfq, fmt::format("{0} scales of Q tile {1}, in S{2}'s dead scores", qk_sf, t, other));
      b.inGap(other, tileName("SFK.", t), sfk, fmt::format("{0} scales of the K tile, a copy for QK{1}", qk_sf, t));
    }
    if (qk_vec)
      b.plan.notes.push_back(
          "QK scale factors of tile t sit in S(1-t)'s dead score columns (as a public FA4 block-scaled fork "
          "does): their tcgen05.cp may run only after softmax(1-t) has drained S(1-t) and before QK(1-t) rewrites "
          "it, which ties QK(t) of the next KV tile to softmax(1-t) - a dependency dedicated columns do not have");
  } else {
    for (int t = 0; qk_vec && t < r.q_tiles; ++t)
      b.dedicated(tileName("SFQ", t), sfq, fmt::format("{0} scales of Q tile {1}, K = head dim {2}", qk_sf, t, r.head_dim));
    if (qk_vec)
      b.dedicated("SFK", sfk, fmt::format("{0} scales of the K tile ({1} keys, N rounded up to 128), read by every QK", qk_sf, r.block_n));
    if (qk_vec && placement == SfPlacement::InScoreGap)
      b.plan.notes.push_back("one Q tile: no other S buffer can hold QK's scale factors, so they get dedicated columns");
  }
  if (!pv_in_gap) {
    for (int t = 0; pv_vec && t < r.q_tiles; ++t)
      b.dedicated(tileName("SFP", t), sfp, fmt::format("{0} scales of P{1} (Direct-P block exponents), K = {2} keys", pv_sf, t, r.block_n));
    if (pv_vec)
      b.dedicated("SFV", sfv, fmt::format("{0} scales of V ({1} rows, N rounded up to 128), read by every PV", pv_sf, o_cols));
  }

  TmemPlan &p = b.plan;
  p.used_columns = b.next;
  p.fits = p.used_columns <= kCapacityColumns;
  p.spare_columns = kCapacityColumns - p.used_columns;
  p.allocation_columns = p.fits ? allocationColumns(p.used_columns) : 0;
  if (!p.fits) {
    const int s = r.q_tiles * r.block_n, o = r.q_tiles * o_cols, sf = p.used_columns - s - o;
    std::string reason = fmt::format("{0} ({1}) + {2} ({3})", r.q_tiles == 2 ? "S0+S1" : "S0", s,
                                       r.q_tiles == 2 ? "O0+O1" : "O0", o);
    if (sf > 0)
      reason += fmt::format(" + dedicated scale factors ({0})", sf);
    reason += fmt::format(" = {0} columns > {1} by {2}", p.used_columns, kCapacityColumns,
                            p.used_columns - kCapacityColumns);
    if (s + o > kCapacityColumns && o >= kCapacityColumns)
      reason += fmt::format("; O alone ({0} x {1}) takes all {2} columns: use one Q tile or split O by head dim",
                              r.q_tiles, o_cols, kCapacityColumns);
    else if (s + o > kCapacityColumns)
      reason += "; the accumulators alone do not fit: use one Q tile, a smaller block_n or split O by head dim";
    p.rejected_reason = reason;
  }
  return p;
}

int destinations(const TmemPlan &p) { return detail::extraDestinations(p, p.request.block_n); }

} // namespace

const Region *TmemPlan::find(const std::string &name) const {
  for (const Region &r : regions)
    if (r.name == name)
      return &r;
  return nullptr;
}

namespace detail {

llvm::Expected<TmemPlan> placeRegions(const TmemRequest &r) {
  if (llvm::Error e = validate(r))
    return e;
  const bool any_sf = scaleVecSize(r.formats.qk) || scaleVecSize(r.formats.p);
  if (!any_sf || r.sf_placement == SfPlacement::Dedicated)
    return place(r, SfPlacement::Dedicated);
  if (r.sf_placement != SfPlacement::Auto)
    return place(r, r.sf_placement);

  const TmemPlan ded = place(r, SfPlacement::Dedicated);
  TmemPlan pv = place(r, SfPlacement::PvInScoreGap);
  TmemPlan gap = place(r, SfPlacement::InScoreGap);
  if (!ded.fits)
    pv.notes.insert(pv.notes.begin(),
                    fmt::format("all-dedicated scale factors ({0} columns) would need {1} > {2} columns (over by {3})",
                                ded.used_columns - r.q_tiles * (r.block_n + r.head_dim / r.o_split),
                                ded.used_columns, kCapacityColumns,
                                ded.used_columns - kCapacityColumns));
  if (pv.fits && destinations(pv) >= destinations(gap))
    return pv;
  // Moving QK's scales too costs a cross-tile dependency; worth it only to fit or to open a window.
  const int qk_cols = pv.used_columns - gap.used_columns;
  if (!gap.fits)
    return pv.fits ? pv : gap; // the smaller overflow carries the better reason
  gap.notes.insert(gap.notes.begin(),
                   !pv.fits ? fmt::format("with PV's scale factors in dead score columns, QK's ({0} columns) would still "
                                          "need {1} > {2} columns (over by {3}): placed in the other tile's dead score "
                                          "columns",
                                          qk_cols, pv.used_columns, kCapacityColumns, pv.used_columns - kCapacityColumns)
                            : fmt::format("dedicated QK scale factors ({0} columns) would leave {1} spare columns, fewer "
                                          "than the {2} another S destination needs: placed in the other tile's dead "
                                          "score columns to open the overlap window",
                                          qk_cols, pv.spare_columns, r.block_n));
  if (!ded.fits)
    gap.notes.insert(gap.notes.begin(), pv.notes.front());
  return gap;
}

} // namespace detail

llvm::Expected<TmemPlan> planTmem(const TmemRequest &request) {
  llvm::Expected<TmemPlan> plan = detail::placeRegions(request);
  if (!plan)
    return plan.takeError();
  detail::analyzeOverlap(*plan);
  return plan;
}

} // namespace fa4jit::tmem
