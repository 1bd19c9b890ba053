#pragma once
// The JSON text of cost/devices/*.json, embedded at build time (cost/CMakeLists.txt writes the
// definition into a generated source), so the tool needs no data files at run time.
#include <string_view>
#include <utility>
#include <vector>

namespace eqfuse::cost {

// (name, JSON text) of each shipped profile, sorted by name.
const std::vector<std::pair<std::string_view, std::string_view>>& builtin_profile_texts();

}  // namespace eqfuse::cost
