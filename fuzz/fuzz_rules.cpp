// Fuzz target: arbitrary text as a rule file. Parsing and checking (shape inference of both
// sides at representative bindings) either accept it or throw eqfuse::Error with file:line:col.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "rules/checker.h"
#include "rules/parser.h"
#include "support/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace eqfuse;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    rules::RuleSet set = rules::parse_rules(text, "fuzz.rules");
    rules::check_rules(set);
  } catch (const Error&) {
  }
  return 0;
}
