// SVG drawing of a TMEM plan: columns across, one band for the 128 lanes, primary regions as
// coloured rectangles, aliases hatched over the lower half of the region they reuse, a legend.
#include "tmem_render.h"

#include "svg_text.h"

#include <fmt/format.h>

#include <algorithm>

namespace fa4jit::tools {
using namespace fa4jit::tmem;

namespace {

constexpr double kPx = 2.0;  // pixels per column
constexpr int kLeft = 30, kBandTop = 70, kBandH = 150;

const char *colour(RegionKind k) {
  switch (k) {
  case RegionKind::Scores: return "#4e79a7";
  case RegionKind::Output: return "#f28e2b";
  case RegionKind::Probabilities: return "#59a14f";
  case RegionKind::ScaleFactors: return "#b07aa1";
  case RegionKind::SpareScores: return "#76b7b2";
  }
  return "#999999";
}


double x(int column) { return kLeft + column * kPx; }
int textWidth(const std::string &s, int size) { return static_cast<int>(s.size() * size * 0.62); }

std::string title(const TmemPlan &p) {
  const TmemRequest &r = p.request;
  std::string t = fmt::format("TMEM plan: {} D{}, {} Q tile{}, block_n {}", toString(r.route), r.head_dim, r.q_tiles,
                              r.q_tiles == 1 ? "" : "s", r.block_n);
  if (r.o_split > 1)
    t += fmt::format(", o_split {}", r.o_split);
  return t + (p.fits ? fmt::format(" - {} of {} columns, alloc {}", p.used_columns, kCapacityColumns, p.allocation_columns)
                     : fmt::format(" - REJECTED, {} columns", p.used_columns));
}

} // namespace

std::string renderTmemSvg(const TmemPlan &p) {
  const int span = std::max(kCapacityColumns, p.used_columns);
  const int width = static_cast<int>(x(span)) + kLeft;
  const int below = kBandTop + kBandH; // first y under the band
  const int legend_y = below + 110;
  const int height = legend_y + 62 + 18 * static_cast<int>(p.windows.size() + 1);
  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"sans-serif\">\n",
      width, height);
  s += "<defs><pattern id=\"hatch\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
       "patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"white\" fill-opacity=\"0.35\"/>"
       "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"black\" stroke-width=\"2\" stroke-opacity=\"0.55\"/>"
       "</pattern></defs>\n";
  s += fmt::format("<rect x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"white\"/>\n", width, height);
  s += fmt::format("<text x=\"{}\" y=\"28\" font-size=\"17\" font-weight=\"bold\">{}</text>\n", kLeft, xmlEscape(title(p)));
  s += fmt::format("<text x=\"{}\" y=\"50\" font-size=\"12\" fill=\"#444\">128 lanes (one row per lane, M = 128) x "
                   "columns of 32 bit; hatched = alias reusing the columns under it</text>\n",
                   kLeft);
  // Free capacity, then overflow beyond it.
  s += fmt::format("<rect class=\"free\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#eeeeee\" "
                   "stroke=\"#bbbbbb\"/>\n",
                   x(0), kBandTop, kCapacityColumns * kPx, kBandH);

  int small_label = 0;
  for (int pass = 0; pass < 2; ++pass)
    for (const Region &r : p.regions) {
      const bool alias = !r.aliases.empty();
      if (alias != (pass == 1))
        continue;
      const double rx = x(r.first_column), rw = r.columns * kPx;
      const int ry = alias ? kBandTop + kBandH / 2 : kBandTop, rh = alias ? kBandH / 2 : kBandH;
      s += fmt::format("<rect class=\"region\" data-name=\"{}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" "
                       "fill=\"{}\" stroke=\"white\" stroke-width=\"1\"><title>{}: columns {}-{} ({}){}</title></rect>\n",
                       xmlEscape(r.name), rx, ry, rw, rh, colour(r.kind), xmlEscape(r.name), r.first_column, r.endColumn() - 1,
                       xmlEscape(r.note), alias ? xmlEscape(", aliases " + r.aliases) : "");
      if (alias)
        s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"url(#hatch)\"/>\n", rx, ry, rw, rh);
      const std::string label = r.name;
      const std::string cols = fmt::format("{}-{}", r.first_column, r.endColumn() - 1);
      if (textWidth(label, 14) + 6 <= rw) {
        const int ty = alias ? ry + rh / 2 + 2 : ry + 24;
        s += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"14\" font-weight=\"bold\" fill=\"white\" "
                         "text-anchor=\"middle\" stroke=\"black\" stroke-width=\"0.4\">{}</text>\n",
                         rx + rw / 2, ty, xmlEscape(label));
        if (textWidth(cols, 11) + 4 <= rw)
          s += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"11\" fill=\"white\" text-anchor=\"middle\">{}</text>\n",
                           rx + rw / 2, ty + 15, cols);
      } else {
        // Too narrow: label under the band, staggered, with a leader line.
        const int ly = below + 34 + 15 * (small_label % 4);
        const double lx = rx + rw / 2;
        s += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"{3}\" stroke-width=\"1\"/>\n", lx,
                         ry + rh, ly - 10, colour(r.kind));
        s += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"10\" fill=\"{}\" text-anchor=\"middle\">{}</text>\n", lx,
                         ly, colour(r.kind), xmlEscape(label));
        ++small_label;
      }
    }

  // Column axis (every 64), capacity and allocation marks.
  if (span > kCapacityColumns)
    s += fmt::format("<rect class=\"overflow\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#e15759\" "
                     "fill-opacity=\"0.35\"/><text x=\"{}\" y=\"{}\" font-size=\"13\" font-weight=\"bold\" "
                     "fill=\"#c0392b\">over by {}</text>\n",
                     x(kCapacityColumns), kBandTop - 10, (span - kCapacityColumns) * kPx, kBandH + 20,
                     x(kCapacityColumns) + 6, kBandTop - 14, span - kCapacityColumns);
  for (int c = 0; c <= span; c += 64) {
    s += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#333\"/>\n", x(c), below, below + 6);
    s += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"10\" text-anchor=\"middle\" fill=\"#333\">{}</text>\n", x(c),
                     below + 17, c);
  }
  if (p.fits && p.allocation_columns < kCapacityColumns)
    s += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#222\" stroke-dasharray=\"5,3\"/>"
                     "<text x=\"{3}\" y=\"{4}\" font-size=\"11\">alloc {5}</text>\n",
                     x(p.allocation_columns), kBandTop - 8, below + 4, x(p.allocation_columns) + 3, kBandTop - 10,
                     p.allocation_columns);
  s += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#e15759\" stroke-width=\"2\"/>"
                   "<text x=\"{3}\" y=\"{4}\" font-size=\"11\" fill=\"#e15759\" text-anchor=\"end\">capacity {5}</text>\n",
                   x(kCapacityColumns), kBandTop - 14, below + 8, x(kCapacityColumns) - 3, kBandTop - 16, kCapacityColumns);

  // Legend.
  const std::pair<RegionKind, const char *> items[] = {
      {RegionKind::Scores, "S: FP32 scores (QK^T)"},
      {RegionKind::Output, "O: FP32 output (PV)"},
      {RegionKind::Probabilities, "P: probabilities (alias of S)"},
      {RegionKind::ScaleFactors, "SF*: block scales"},
      {RegionKind::SpareScores, "S*: spare S (window)"}};
  double lx = kLeft;
  int ly = legend_y;
  auto place = [&](const std::string &text) { // wraps the legend before it runs off the right edge
    const double w = 19 + textWidth(text, 12) + 18;
    if (lx + w > width - kLeft) {
      lx = kLeft;
      ly += 22;
    }
    const double at = lx;
    lx += w;
    return at;
  };
  for (const auto &[kind, text] : items) {
    const double at = place(text);
    s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"14\" height=\"14\" fill=\"{}\"/><text x=\"{}\" y=\"{}\" "
                     "font-size=\"12\">{}</text>\n",
                     at, ly, colour(kind), at + 19, ly + 12, xmlEscape(text));
  }
  const double at = place("alias (hatched)");
  s += fmt::format("<rect x=\"{0}\" y=\"{1}\" width=\"14\" height=\"14\" fill=\"#888\"/><rect x=\"{0}\" y=\"{1}\" "
                   "width=\"14\" height=\"14\" fill=\"url(#hatch)\"/><text x=\"{2}\" y=\"{3}\" font-size=\"12\">alias "
                   "(hatched)</text>\n",
                   at, ly, at + 19, ly + 12);

  int wy = ly + 40;
  if (!p.fits) {
    s += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"12\" fill=\"#c0392b\">rejected: {}</text>\n", kLeft, wy,
                     xmlEscape(p.rejected_reason));
    wy += 18;
  }
  for (const OverlapWindow &w : p.windows) {
    s += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"12\" fill=\"{}\">window {}: {} ({} spare, needs {})</text>\n",
                     kLeft, wy, w.open ? "#2e7d32" : "#c0392b", xmlEscape(w.name), w.open ? "open" : "closed",
                     w.spare_columns, w.needed_columns);
    wy += 18;
  }
  s += "</svg>\n";
  return s;
}

} // namespace fa4jit::tools
