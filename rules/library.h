#pragma once
// The rule library (rules/library/*.rules), embedded in the binary at build time, so that
// optimize() has its default rules wherever it runs, with no data files to find.
#include <string_view>
#include <utility>
#include <vector>

#include "rules/rule.h"

namespace eqfuse::rules {

// (file name, text) of each library file, sorted by name ("algebra.rules", ...).
const std::vector<std::pair<std::string_view, std::string_view>>& library_texts();

// The library parsed (each rule's file is "rules/library/NAME.rules").
RuleSet library_rules();

}  // namespace eqfuse::rules
