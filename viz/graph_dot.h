#pragma once
// A model as a Graphviz picture. Ops are rounded boxes; graph inputs and outputs are ellipses,
// weights small notes; an edge carries the type of the value it is ("f32[batch,128]"). Each fused
// kernel is drawn as a box (a dot cluster) around the ops of its body, so the picture shows
// what the kernel replaces: coloured by its kind (pointwise, reduction, contraction, attention;
// viz/dot_text.h) and titled with its name, kind and predicted time when a cost model is given.
#include <string>

#include "cost/cost_model.h"
#include "ir/graph.h"

namespace eqfuse::viz {

struct GraphDotOptions {
  const cost::CostModel* cost = nullptr;  // predicted ms per kernel and op, when given
  bool weights = true;                    // draw weights (notes) feeding the ops
};

std::string graph_dot(const ir::Graph& graph, const GraphDotOptions& options = {});

}  // namespace eqfuse::viz
