// Fuzz target: arbitrary text as an egraph-serialize file. Reading it and building the
// extraction problem either succeed or throw eqfuse::Error naming what is wrong.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "egraph/serialized_egraph.h"
#include "extract/problem.h"
#include "support/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace eqfuse;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    egraph::SerializedEGraph g = egraph::parse_serialized_egraph(text, "fuzz.json");
    (void)extract::make_problem(g);
  } catch (const Error&) {
  }
  return 0;
}
