#pragma once
// Checks shared by the frontend tests: two graphs have the same structure, and a graph runs
// to the expected outputs.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "frontend/test_data.h"
#include "ir/graph.h"
#include "ir/interpreter.h"

namespace eqfuse::test {

// Elements of the weights that nodes or outputs read (import may leave unread constants behind,
// e.g. axes inputs turned into attributes).
inline int64_t used_parameters(const ir::Graph& g) {
  std::vector<bool> used(g.values().size(), false);
  for (const ir::Node& n : g.nodes()) {
    for (ir::ValueId v : n.inputs) {
      if (v != ir::kNoValue) used[v] = true;
    }
  }
  for (ir::ValueId v : g.outputs()) used[v] = true;
  int64_t total = 0;
  for (ir::ValueId v = 0; v < g.values().size(); ++v) {
    if (used[v] && g.value(v).is_weight()) total += g.value(v).type.shape.numel().value_or(0);
  }
  return total;
}

// Same inputs, outputs (names and types) and node sequence (op types, attributes).
inline void check_same_structure(const ir::Graph& a, const ir::Graph& b) {
  REQUIRE(a.inputs().size() == b.inputs().size());
  for (size_t i = 0; i < a.inputs().size(); ++i) {
    CHECK(a.value(a.inputs()[i]).name == b.value(b.inputs()[i]).name);
    CHECK(a.value(a.inputs()[i]).type == b.value(b.inputs()[i]).type);
  }
  REQUIRE(a.outputs().size() == b.outputs().size());
  for (size_t i = 0; i < a.outputs().size(); ++i) {
    CHECK(a.value(a.outputs()[i]).name == b.value(b.outputs()[i]).name);
    CHECK(a.value(a.outputs()[i]).type == b.value(b.outputs()[i]).type);
  }
  REQUIRE(a.nodes().size() == b.nodes().size());
  for (size_t i = 0; i < a.nodes().size(); ++i) {
    const ir::Node& x = a.nodes()[i];
    const ir::Node& y = b.nodes()[i];
    INFO("node " << i << " " << x.op_type << " '" << x.name << "'");
    CHECK(x.op_type == y.op_type);
    CHECK(x.domain == y.domain);
    CHECK(x.inputs.size() == y.inputs.size());
    CHECK(x.outputs.size() == y.outputs.size());
    CHECK(x.attrs.str() == y.attrs.str());
    for (size_t k = 0; k < x.outputs.size() && k < y.outputs.size(); ++k) {
      CHECK(a.value(x.outputs[k]).type == b.value(y.outputs[k]).type);
    }
  }
  CHECK(used_parameters(a) == used_parameters(b));
}

inline void check_same_outputs(const std::vector<ir::Tensor>& got,
                               const std::vector<ir::Tensor>& expected, double rtol, double atol) {
  REQUIRE(got.size() == expected.size());
  for (size_t k = 0; k < got.size(); ++k) {
    frontend::Comparison c = frontend::compare_tensors(got[k], expected[k], rtol, atol);
    INFO("output " << k << ": got " << got[k].str() << ", expected " << expected[k].str() << ": "
                   << c.str());
    CHECK(c.match);
  }
}

inline std::vector<ir::Tensor> tensors_of(const std::vector<frontend::NamedTensor>& named) {
  std::vector<ir::Tensor> out;
  for (const auto& n : named) out.push_back(n.tensor);
  return out;
}

}  // namespace eqfuse::test
