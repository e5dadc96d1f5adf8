#pragma once
// A line chart as SVG text (`fa4jit accuracy --formats --plot`): series of (x, y) points over a
// logarithmic or linear x axis, a linear y axis, grid lines with labels, and a legend; kernel
// series dashed. No dependencies: the file opens in any browser.
#include <string>
#include <utility>
#include <vector>

namespace fa4jit::tools {

struct PlotSeries {
  std::string name;
  std::vector<std::pair<double, double>> points; // drawn in the given order
  bool dashed = false;
};

struct LinePlot {
  std::string title, x_label, y_label;
  bool log_x = true;
  double y_min = 0, y_max = 1; // the y range drawn (points outside are clamped to its edges)
  std::vector<PlotSeries> series;
};

std::string renderLinePlotSvg(const LinePlot &plot);

} // namespace fa4jit::tools
