// The cells of the heatmaps in a gnuplot SVG (gpt/io/figures.h's write_heatmaps), read back for
// tests: each panel's grey background (the NaN colour, #d9d9d9, one polygon over the whole graph
// area) and the cell polygons inside it. write_heatmaps draws a heatmap `with image pixels`, so
// every cell with a value is one <polygon fill = 'rgb(r, g, b)' points = '...'/> of exactly one
// cell's size and a NaN cell none; an embedded, scaled-up <image> (the blurred drawing) has no
// polygons at all. A colour box lies outside every panel's graph area: heatmap_panels skips it,
// colour_boxes returns it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <regex>
#include <string>
#include <utility>
#include <vector>

namespace attograd::testing {

/// A filled polygon of the SVG with its bounding box (SVG pixels, y down) and its colour.
struct SvgPolygon {
  int r = 0, g = 0, b = 0;
  double x0 = 0, y0 = 0, x1 = 0, y1 = 0;
};

/// Every `<polygon fill = 'rgb(r, g, b)' points = 'x,y ...'/>` of a gnuplot SVG, in order.
inline std::vector<SvgPolygon> svg_polygons(const std::string& svg) {
  static const std::regex polygon(
      R"(<polygon fill = 'rgb\(\s*(\d+),\s*(\d+),\s*(\d+)\)' points = '([^']*)')");
  static const std::regex point(R"((-?[0-9.]+),(-?[0-9.]+))");
  std::vector<SvgPolygon> out;
  for (std::sregex_iterator m(svg.begin(), svg.end(), polygon), end; m != end; ++m) {
    SvgPolygon p;
    p.r = std::stoi((*m)[1]), p.g = std::stoi((*m)[2]), p.b = std::stoi((*m)[3]);
    p.x0 = p.y0 = INFINITY, p.x1 = p.y1 = -INFINITY;
    const std::string points = (*m)[4];
    for (std::sregex_iterator q(points.begin(), points.end(), point); q != end; ++q) {
      const double x = std::stod((*q)[1]), y = std::stod((*q)[2]);
      p.x0 = std::min(p.x0, x), p.x1 = std::max(p.x1, x);
      p.y0 = std::min(p.y0, y), p.y1 = std::max(p.y1, y);
    }
    out.push_back(p);
  }
  return out;
}

/// One drawn cell of a heatmap: its row (0 at the top), column (0 on the left) and colour.
struct SvgCell {
  int64_t row = 0, col = 0;
  int r = 0, g = 0, b = 0;
};

/// The heatmap panels of a write_heatmaps SVG, in drawing order, each as its drawn cells; panel k
/// a matrix of shapes[k] = (rows, cols) (the last shape for the panels after it). A polygon inside
/// a panel's graph area that is not one cell in size (within 0.1 px) or off the cell grid is
/// returned with row = col = -1, so a test sees it.
inline std::vector<std::vector<SvgCell>> heatmap_panels(
    const std::string& svg, const std::vector<std::pair<int64_t, int64_t>>& shapes) {
  std::vector<std::vector<SvgCell>> panels;
  const SvgPolygon* area = nullptr;
  const std::vector<SvgPolygon> polygons = svg_polygons(svg);
  for (const SvgPolygon& p : polygons) {
    if (p.r == 217 && p.g == 217 && p.b == 217) {  // a panel's background: a new panel
      area = &p;
      panels.emplace_back();
      continue;
    }
    if (area == nullptr) continue;
    const double slack = 0.1;
    if (p.x0 < area->x0 - slack || p.x1 > area->x1 + slack || p.y0 < area->y0 - slack ||
        p.y1 > area->y1 + slack)
      continue;  // outside the graph area: the colour box
    const auto [rows, cols] = shapes[std::min(panels.size(), shapes.size()) - 1];
    const double w = (area->x1 - area->x0) / static_cast<double>(cols),
                 h = (area->y1 - area->y0) / static_cast<double>(rows);
    const double col = (p.x0 - area->x0) / w, row = (p.y0 - area->y0) / h;
    const bool one_cell = std::abs(p.x1 - p.x0 - w) < slack && std::abs(p.y1 - p.y0 - h) < slack &&
                          std::abs(col - std::round(col)) * w < slack &&
                          std::abs(row - std::round(row)) * h < slack;
    SvgCell c;
    c.row = one_cell ? std::llround(row) : -1;
    c.col = one_cell ? std::llround(col) : -1;
    c.r = p.r, c.g = p.g, c.b = p.b;
    panels.back().push_back(c);
  }
  return panels;
}

/// The heatmap panels of a write_heatmaps SVG whose matrices are all rows x cols.
inline std::vector<std::vector<SvgCell>> heatmap_panels(const std::string& svg, int64_t rows,
                                                        int64_t cols) {
  return heatmap_panels(svg, {{rows, cols}});
}

/// The colour boxes of a write_heatmaps SVG: the filled polygons outside the graph area of the
/// panel drawn before them, one box per panel and left edge (gnuplot draws a box as thin slices,
/// one above the other, from the scale's zmin at the bottom to its zmax at the top), in drawing
/// order.
inline std::vector<std::vector<SvgPolygon>> colour_boxes(const std::string& svg) {
  std::vector<std::vector<SvgPolygon>> boxes;
  const SvgPolygon* area = nullptr;
  bool new_panel = false;  // a box drawn after another panel is another box, wherever it is
  const std::vector<SvgPolygon> polygons = svg_polygons(svg);
  for (const SvgPolygon& p : polygons) {
    if (p.r == 217 && p.g == 217 && p.b == 217) {
      area = &p;
      new_panel = true;
      continue;
    }
    if (area == nullptr || (p.x0 >= area->x0 - 0.1 && p.x1 <= area->x1 + 0.1 &&
                            p.y0 >= area->y0 - 0.1 && p.y1 <= area->y1 + 0.1))
      continue;
    if (new_panel || boxes.empty() || std::abs(boxes.back().back().x0 - p.x0) > 0.1)
      boxes.emplace_back();
    new_panel = false;
    boxes.back().push_back(p);
  }
  return boxes;
}

/// The colour write_heatmaps gives `v` on its scale [zmin, zmax]: white to #08306b, or, when
/// `diverging`, #b2182b through white (midway) to #08306b; as 0-255 channels (rounded).
inline std::vector<double> heatmap_colour(double v, double zmin, double zmax, bool diverging) {
  const double s = std::clamp((v - zmin) / (zmax - zmin), 0.0, 1.0);
  const double white[3] = {255, 255, 255}, blue[3] = {8, 48, 107}, red[3] = {178, 24, 43};
  std::vector<double> rgb(3);
  for (int i = 0; i < 3; ++i)
    rgb[i] = !diverging ? white[i] + (blue[i] - white[i]) * s
             : s < 0.5  ? red[i] + (white[i] - red[i]) * 2 * s
                        : white[i] + (blue[i] - white[i]) * (2 * s - 1);
  return rgb;
}

/// Whether a drawn cell has the colour of `v` (within one step of 255).
inline bool has_colour(const SvgCell& c, double v, double zmin, double zmax, bool diverging) {
  const std::vector<double> want = heatmap_colour(v, zmin, zmax, diverging);
  return std::abs(c.r - want[0]) <= 1.01 && std::abs(c.g - want[1]) <= 1.01 &&
         std::abs(c.b - want[2]) <= 1.01;
}

}  // namespace attograd::testing
