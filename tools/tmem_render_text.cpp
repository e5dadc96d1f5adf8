// Table, one-line column bar and JSON of a TMEM plan.
#include "tmem_render.h"

#include <fmt/format.h>

#include <algorithm>

namespace fa4jit::tools {
using namespace fa4jit::tmem;

namespace {

char kindChar(RegionKind k) {
  switch (k) {
  case RegionKind::Scores: return 'S';
  case RegionKind::Output: return 'O';
  case RegionKind::Probabilities: return 'P';
  case RegionKind::ScaleFactors: return 'f';
  case RegionKind::SpareScores: return 's';
  }
  return '?';
}

const char *sfPlacement(const TmemPlan &p) {
  for (const Region &r : p.regions)
    if (r.kind == RegionKind::ScaleFactors)
      return toString(p.sf_placement_used);
  return "none (no block-scaled operand)";
}

std::string header(const TmemPlan &p) {
  const TmemRequest &r = p.request;
  std::string s = fmt::format("TMEM plan (sm_100a, {} lanes x {} columns x 32 bit)\n", kLanes, kCapacityColumns);
  s += fmt::format("  route {}  head_dim {}  q_tiles {}  block_n {}  o_split {}  formats QK {} / P {} / V {}\n",
                   toString(r.route), r.head_dim, r.q_tiles, r.block_n, r.o_split, toString(r.formats.qk),
                   toString(r.formats.p), toString(r.formats.v));
  if (p.fits)
    s += fmt::format("  fits: {} columns used, tcgen05.alloc {} columns, {} of {} spare; scale factors {}\n",
                     p.used_columns, p.allocation_columns, p.spare_columns, kCapacityColumns,
                     sfPlacement(p));
  else
    s += fmt::format("  REJECTED: {}\n", p.rejected_reason);
  return s;
}

} // namespace

std::string renderTmemBar(const TmemPlan &p) {
  // One character per 8 columns; the first line shows primary regions, the second aliases.
  const int cells = kCapacityColumns / 8;
  std::string primary(cells, '.'), alias(cells, ' ');
  for (const Region &r : p.regions) {
    std::string &line = r.aliases.empty() ? primary : alias;
    for (int c = r.first_column / 8; c < std::min(cells, (r.endColumn() + 7) / 8); ++c)
      line[c] = kindChar(r.kind);
  }
  const bool over = p.used_columns > kCapacityColumns;
  std::string s = "  [" + primary + "]" + (over ? fmt::format(" +{} over", p.used_columns - kCapacityColumns) : "") + "\n";
  s += "  [" + alias + "]  (8 columns per character; S scores, O output, P probabilities, f scale factors, s spare S)\n";
  return s;
}

std::string renderTmemTable(const TmemPlan &p) {
  std::string s = header(p) + "\n";
  s += fmt::format("  {:<7} {:>9} {:>5} {:>5}  {:<14} {:<8} {}\n", "region", "columns", "n", "lanes", "kind",
                   "aliases", "holds");
  for (const Region &r : p.regions)
    s += fmt::format("  {:<7} {:>9} {:>5} {:>5}  {:<14} {:<8} {}\n", r.name,
                     fmt::format("{}-{}", r.first_column, r.endColumn() - 1), r.columns, r.lanes, toString(r.kind),
                     r.aliases.empty() ? "-" : r.aliases, r.note);
  s += "\n" + renderTmemBar(p) + "\n";
  for (const OverlapWindow &w : p.windows) {
    s += fmt::format("  window {}: {} (needs {} columns, {} spare, {} destination(s))\n    {}\n", w.name,
                     w.open ? "OPEN" : "closed", w.needed_columns, w.spare_columns, w.destinations, w.explanation);
    if (!w.open && !w.levers.empty()) {
      s += "    what would open it:\n";
      for (const Lever &l : w.levers)
        s += fmt::format("      - {}: {}\n", l.change,
                         !l.fits ? std::string("does not fit")
                                 : fmt::format("{} spare, {} destination(s){}", l.spare_columns, l.destinations,
                                               l.destinations > 0 ? " -> opens" : ""));
    }
  }
  if (!p.notes.empty()) {
    s += "  notes:\n";
    for (const std::string &n : p.notes)
      s += "    - " + n + "\n";
  }
  return s;
}

llvm::json::Value tmemPlanToJson(const TmemPlan &p) {
  const TmemRequest &r = p.request;
  llvm::json::Array regions, windows, notes;
  for (const Region &x : p.regions)
    regions.push_back(llvm::json::Object{{"name", x.name},
                                         {"first_column", x.first_column},
                                         {"columns", x.columns},
                                         {"lanes", x.lanes},
                                         {"kind", toString(x.kind)},
                                         {"aliases", x.aliases},
                                         {"note", x.note}});
  for (const OverlapWindow &w : p.windows) {
    llvm::json::Array levers;
    for (const Lever &l : w.levers)
      levers.push_back(llvm::json::Object{{"change", l.change},
                                          {"fits", l.fits},
                                          {"spare_columns", l.spare_columns},
                                          {"destinations", l.destinations},
                                          {"opens", l.fits && l.destinations > 0}});
    windows.push_back(llvm::json::Object{{"name", w.name},
                                         {"open", w.open},
                                         {"needed_columns", w.needed_columns},
                                         {"spare_columns", w.spare_columns},
                                         {"destinations", w.destinations},
                                         {"explanation", w.explanation},
                                         {"levers", std::move(levers)}});
  }
  for (const std::string &n : p.notes)
    notes.push_back(n);
  return llvm::json::Object{
      {"target", "sm_100a"},
      {"route", toString(r.route)},
      {"head_dim", r.head_dim},
      {"q_tiles", r.q_tiles},
      {"block_n", r.block_n},
      {"o_split", r.o_split},
      {"formats", llvm::json::Object{{"qk", toString(r.formats.qk)}, {"p", toString(r.formats.p)}, {"v", toString(r.formats.v)}}},
      {"capacity_columns", kCapacityColumns},
      {"lanes", kLanes},
      {"fits", p.fits},
      {"rejected_reason", p.rejected_reason},
      {"used_columns", p.used_columns},
      {"allocation_columns", p.allocation_columns},
      {"spare_columns", p.spare_columns},
      {"sf_placement", sfPlacement(p)},
      {"regions", std::move(regions)},
      {"windows", std::move(windows)},
      {"notes", std::move(notes)},
  };
}

} // namespace fa4jit::tools
