#pragma once
// A readable text form of a Graph, one node per line, for `eqfuse info --print`, debugging and
// test failure messages:
//
//   graph "mlp" {
//     input %x: f32[n,64]
//     weight %w: f32[64,10]
//     %matmul_0: f32[n,10] = MatMul(%x, %w)
//     %a: f32[n,5], %b: f32[n,5] = Split(%matmul_0) :axis 1
//     output %matmul_0
//   }
//
// Omitted optional inputs print as `_`; opaque ops get a trailing `; opaque`. The form is for
// people, not a serialization: nothing parses it back.
#include <string>

#include "ir/graph.h"

namespace eqfuse::ir {

std::string print_graph(const Graph& graph);
std::string print_node(const Graph& graph, const Node& node);

}  // namespace eqfuse::ir
