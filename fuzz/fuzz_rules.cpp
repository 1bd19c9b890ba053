// Fuzz target: arbitrary text as a rule file. Parsing and checking (shape inference of both
// sides at representative bindings) either accept it or throw eqfuse::Error with file:line:col.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "rules/checker.h"
#include "rules/parser.h"
#include "rules/shapes.h"
#include "support/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace eqfuse;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    rules::RuleSet set = rules::parse_rules(text, "fuzz.rules");
    // Fewer bindings than a real check: the same code paths, at a rate that lets the fuzzer
    // explore (the full enumeration takes seconds per rule under the sanitizers).
    rules::ShapeChoice small;
    small.max_rank = 3;
    small.wanted = 16;
    small.max_tries = 2000;
    small.separation_tries = 500;
    small.witness_per_combo = 1;
    rules::check_rules(set, small);
  } catch (const Error&) {
  }
  return 0;
}
