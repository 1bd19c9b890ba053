#pragma once
// Weight-only subgraphs computed once at optimize time: a node all of whose inputs are weights
// (BatchNormalization's scale folded into a Conv's kernel, a transposed or concatenated weight,
// constant shape arithmetic) is evaluated by the interpreter and its outputs become weights, so
// it costs nothing at run time and the output model carries the folded values. A model whose
// weights are not there (structure only) keeps such nodes, and the report says so.
#include <string>

#include "ir/graph.h"
#include "ir/op_table.h"

namespace eqfuse::optimizer {

// Whether the interpreter can compute a node of this op (a reference kernel, or an elementwise
// meaning), so that the optimizer may fold it when its inputs are weights.
bool foldable_op(const ir::OpDef& def);

struct FoldReport {
  ir::Graph graph;
  size_t folded = 0;      // nodes computed
  size_t unfoldable = 0;  // weight-only nodes kept because a weight's data is missing
  std::string note;       // says why, when unfoldable > 0
};

// Folds nodes whose outputs stay under `max_elements` elements each.
FoldReport fold_weight_subgraphs(const ir::Graph& graph, int64_t max_elements = int64_t{1} << 26);

}  // namespace eqfuse::optimizer
