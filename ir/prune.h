#pragma once
// Dead-code elimination on a Graph. Import leaves values behind that nothing reads (a constant
// `axes` input that became an attribute, the inputs of a folded shape chain); without pruning
// they would count as parameters, be exported, and become e-graph leaves.
#include <set>
#include <string>

#include "ir/graph.h"

namespace eqfuse::ir {

// A copy of `graph` without the nodes none of whose outputs is read and without the weights
// nothing reads. A value is read by a node, by being a graph output, or by being named in
// `keep` (names that ONNX If/Loop bodies read from the outer scope). Graph inputs always stay:
// they are the graph's interface.
Graph prune_unused(const Graph& graph, const std::set<std::string>& keep = {});

}  // namespace eqfuse::ir
