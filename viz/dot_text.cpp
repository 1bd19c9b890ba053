#include "viz/dot_text.h"

namespace eqfuse::viz {

std::string dot_quote(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

const char* kind_colour(std::string_view kind) {
  if (kind == "pointwise") return "#dbeafe";
  if (kind == "reduction") return "#dcfce7";
  if (kind == "contraction") return "#fde68a";
  if (kind == "attention") return "#fbcfe8";
  return "#e5e7eb";
}

}  // namespace eqfuse::viz
