#pragma once
// Reshapes whose target shape is computed at run time, made constant. Exporters of models with a
// dynamic batch write `x.view(b, s, h, d)` as Shape(x) -> Gather(0) -> Unsqueeze -> Concat(..,
// [s, h, d]) -> Reshape: four small integer ops that launch work and hide the reshape from rules
// and fusion (a Reshape with a computed shape is not a layout op that folds into indexing).
// Where the symbolic value of that shape is known in full (ir/shape_values.h), ONNX's own
// Reshape codes say the same thing as a constant: 0 copies the input's dim at that position, -1
// takes what is left. [batch, 64, 4, 32] from x of shape [batch, 64, 128] becomes (0 64 4 32),
// which holds for every batch, so the output stays shape-generic. The shape chain is then dead.
#include <cstddef>

#include "ir/graph.h"

namespace eqfuse::ir {

struct ConstantShapeSpecs {
  Graph graph;
  size_t reshapes = 0;  // Reshapes whose computed shape input became a constant `shape`
};

// A copy of `graph` in which every Reshape (allowzero 0) whose shape input is computed and
// whose elements are each a constant, the input's dim at the same position, or (once) the one
// dim left, reads a constant `shape` attribute instead; the inferred output type must come out
// the same, else the Reshape is left as it is. Nodes nothing reads any more are pruned.
ConstantShapeSpecs with_constant_shape_specs(const Graph& graph);

}  // namespace eqfuse::ir
