#include "tools/eqfuse_bench/plot.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "support/error.h"

namespace eqfuse::bench {
namespace {

struct Series {
  std::string name, colour;
};

// One panel of grouped bars: values[model][series] (negative: absent), with its own scale.
void panel(std::ostringstream& svg, double top, const std::string& title,
           const std::vector<std::string>& models, const std::vector<Series>& series,
           const std::vector<std::vector<double>>& values, const char* format) {
  const double left = 60, height = 180, group = 34.0 * series.size() + 24;
  double peak = 0;
  for (const auto& row : values)
    for (double v : row) peak = std::max(peak, v);
  if (peak <= 0) peak = 1;
  svg << fmt::format("<text x=\"{}\" y=\"{}\" font-weight=\"bold\">{}</text>\n", left, top - 8,
                     title);
  svg << fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#9ca3af\"/>\n",
                     left, top, top + height);
  for (size_t m = 0; m < models.size(); ++m) {
    double x0 = left + 10 + m * group;
    for (size_t s = 0; s < series.size(); ++s) {
      double v = values[m][s];
      if (v < 0) continue;
      double h = height * v / peak, x = x0 + s * 34.0;
      svg << fmt::format(
          "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"30\" height=\"{:.1f}\" fill=\"{}\"><title>{} "
          "{}: {}</title></rect>\n",
          x, top + height - h, h, series[s].colour, models[m], series[s].name,
          fmt::format(fmt::runtime(format), v));
      svg << fmt::format(
          "<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"9\" text-anchor=\"middle\">{}</text>\n",
          x + 15, top + height - h - 3, fmt::format(fmt::runtime(format), v));
    }
    svg << fmt::format(
        "<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"10\" text-anchor=\"middle\">{}</text>\n",
        x0 + 17.0 * series.size(), top + height + 14, models[m]);
  }
  double lx = left;
  for (const Series& s : series) {
    svg << fmt::format(
        "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"10\" height=\"10\" fill=\"{}\"/><text "
        "x=\"{:.1f}\" "
        "y=\"{:.1f}\" font-size=\"10\">{}</text>\n",
        lx, top + height + 24, s.colour, lx + 14, top + height + 33, s.name);
    lx += 14 + 7.0 * s.name.size() + 16;
  }
}

double number_at(const nlohmann::json& row, std::initializer_list<const char*> path) {
  const nlohmann::json* j = &row;
  for (const char* key : path) {
    if (!j->is_object() || !j->contains(key)) return -1;
    j = &(*j)[key];
  }
  return j->is_number() ? j->get<double>() : -1;
}

}  // namespace

void write_plot(const nlohmann::json& doc, const std::string& file) {
  std::vector<std::string> models;
  std::vector<std::vector<double>> kernels, speed;
  for (const auto& row : doc["models"]) {
    if (row.contains("error")) continue;
    models.push_back(row["model"].get<std::string>());
    kernels.push_back({number_at(row, {"kernels_before"}), number_at(row, {"kernels_after"}),
                       number_at(row, {"ort", "kernels"})});
    double interp = number_at(row, {"interpreter_ms"});
    double twin = number_at(row, {"twin_ms"}), ort = number_at(row, {"ort", "ms"});
    speed.push_back(
        {twin > 0 && interp > 0 ? interp / twin : -1, ort > 0 && interp > 0 ? interp / ort : -1});
  }
  const double width = std::max(560.0, 80 + models.size() * (34.0 * 3 + 24));
  std::ostringstream svg;
  svg << fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0f}\" height=\"560\" "
      "font-family=\"Helvetica, Arial, sans-serif\" font-size=\"12\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
      width);
  panel(svg, 40, "kernels launched", models,
        {{"original", "#9ca3af"}, {"eqfuse", "#2563eb"}, {"ONNX Runtime", "#f59e0b"}}, kernels,
        "{:.0f}");
  panel(svg, 320, "CPU speed-up over the reference interpreter (higher is better)", models,
        {{"eqfuse C++ twin", "#2563eb"}, {"ONNX Runtime", "#f59e0b"}}, speed, "{:.2f}x");
  svg << "</svg>\n";
  std::ofstream out(file);
  if (!(out << svg.str())) throw Error("cannot write '" + file + "'");
}

}  // namespace eqfuse::bench
