#pragma once
// What the dot writers share: quoting and the colours of kernel kinds.
#include <string>
#include <string_view>

namespace eqfuse::viz {

// `text` as a dot string literal, quotes included ("a\"b", newlines as \n).
std::string dot_quote(std::string_view text);

// Fill colour of a kernel of kind `kind` ("pointwise", "reduction", "contraction",
// "attention"; anything else is grey), and of the highlighted choice in an e-graph.
const char* kind_colour(std::string_view kind);
inline constexpr const char* kChosenColour = "#f59e0b";

}  // namespace eqfuse::viz
