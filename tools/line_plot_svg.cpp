// A line chart as SVG text (line_plot_svg.h).
#include "line_plot_svg.h"

#include "svg_text.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace fa4jit::tools {

namespace {

constexpr double kWidth = 860, kHeight = 520;
constexpr double kLeft = 70, kRight = 250, kTop = 50, kBottom = 60; // margins (legend on the right)
// Ten distinguishable colours (Tableau 10).
const char *const kColours[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};


} // namespace

std::string renderLinePlotSvg(const LinePlot &plot) {
  double x_lo = INFINITY, x_hi = -INFINITY;
  for (const PlotSeries &s : plot.series)
    for (const auto &[x, y] : s.points)
      if (std::isfinite(x) && (!plot.log_x || x > 0))
        x_lo = std::min(x_lo, x), x_hi = std::max(x_hi, x);
  if (!(x_lo < x_hi))
    x_lo = x_lo == INFINITY ? 0.5 : x_lo * 0.5, x_hi = x_lo * 4;
  auto tx = [&](double x) {
    return plot.log_x ? std::log(x / x_lo) / std::log(x_hi / x_lo) : (x - x_lo) / (x_hi - x_lo);
  };
  const double pw = kWidth - kLeft - kRight, ph = kHeight - kTop - kBottom;
  auto px = [&](double x) { return kLeft + tx(x) * pw; };
  auto py = [&](double y) {
    const double c = std::clamp(y, plot.y_min, plot.y_max);
    return kTop + (1.0 - (c - plot.y_min) / (plot.y_max - plot.y_min)) * ph;
  };
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"{2}\" y=\"28\" font-size=\"15\">{3}</text>\n",
      kWidth, kHeight, kLeft, xmlEscape(plot.title));
  // Horizontal grid: ten steps of the y range.
  for (int i = 0; i <= 10; ++i) {
    const double y = plot.y_min + (plot.y_max - plot.y_min) * i / 10.0;
    svg += fmt::format("<line x1=\"{0}\" x2=\"{1}\" y1=\"{2:.1f}\" y2=\"{2:.1f}\" stroke=\"#ddd\"/>"
                       "<text x=\"{3}\" y=\"{4:.1f}\" text-anchor=\"end\">{5:.3g}</text>\n",
                       kLeft, kLeft + pw, py(y), kLeft - 6, py(y) + 4, y);
  }
  // Vertical grid: the x values of the first series (the grid's points).
  if (!plot.series.empty())
    for (const auto &[x, y] : plot.series.front().points)
      svg += fmt::format("<line x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1}\" y2=\"{2}\" stroke=\"#eee\"/>"
                         "<text x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"middle\">{4:g}</text>\n",
                         px(x), kTop, kTop + ph, kTop + ph + 18, x);
  svg += fmt::format("<rect x=\"{0}\" y=\"{1}\" width=\"{2}\" height=\"{3}\" fill=\"none\" stroke=\"#444\"/>\n",
                     kLeft, kTop, pw, ph);
  svg += fmt::format("<text x=\"{0:.1f}\" y=\"{1}\" text-anchor=\"middle\">{2}</text>\n", kLeft + pw / 2,
                     kHeight - 18, xmlEscape(plot.x_label + (plot.log_x ? " (log scale)" : "")));
  svg += fmt::format("<text transform=\"translate(18 {0:.1f}) rotate(-90)\" text-anchor=\"middle\">{1}</text>\n",
                     kTop + ph / 2, xmlEscape(plot.y_label));
  for (std::size_t i = 0; i < plot.series.size(); ++i) {
    const PlotSeries &s = plot.series[i];
    const char *colour = kColours[i % (sizeof kColours / sizeof *kColours)];
    std::string points;
    for (const auto &[x, y] : s.points)
      if (std::isfinite(x) && std::isfinite(y) && (!plot.log_x || x > 0))
        points += fmt::format("{:.1f},{:.1f} ", px(x), py(y));
    const char *dash = s.dashed ? " stroke-dasharray=\"6 4\"" : "";
    svg += fmt::format("<polyline fill=\"none\" stroke=\"{0}\" stroke-width=\"2\"{1} points=\"{2}\"/>\n", colour,
                       dash, points);
    const double ly = kTop + 10 + 20 * double(i);
    svg += fmt::format("<line x1=\"{0}\" x2=\"{1}\" y1=\"{2:.1f}\" y2=\"{2:.1f}\" stroke=\"{3}\" stroke-width=\"2\"{4}/>"
                       "<text x=\"{5}\" y=\"{6:.1f}\">{7}</text>\n",
                       kLeft + pw + 16, kLeft + pw + 44, ly, colour, dash, kLeft + pw + 50, ly + 4, xmlEscape(s.name));
  }
  svg += "</svg>\n";
  return svg;
}

} // namespace fa4jit::tools
