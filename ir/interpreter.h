#pragma once
// The reference interpreter: runs any Graph on the CPU. It is the ground truth that every
// optimization, rule and generated kernel is checked against, so it favours exactness
// (accumulating in double where sums are long) over speed, while staying fast enough to run
// real models (resnet18 at batch 1 in seconds).
#include <vector>

#include "ir/graph.h"
#include "ir/op_table.h"
#include "ir/tensor.h"

namespace eqfuse::ir {

// Evaluates one node on concrete inputs (one per node input; nullptr for an omitted optional
// input). Constant folding at import uses it too. Throws Error of kind Unsupported naming the
// node for opaque ops and for attribute values the kernel cannot execute.
std::vector<Tensor> evaluate_node(const Graph& graph, const Node& node,
                                  const std::vector<const Tensor*>& inputs,
                                  const ScopeLookup* scope = nullptr);

// Runs a control-flow body: `formal` binds its first inputs, `outer` the names it reads from
// enclosing scopes (its remaining inputs). Shapes are not checked against the body's declared
// types, which loop-carried values may outgrow.
std::vector<Tensor> run_subgraph(const Graph& body, const std::vector<const Tensor*>& formal,
                                 const ScopeLookup& outer);

class Interpreter {
 public:
  explicit Interpreter(const Graph& graph) : graph_(graph) {}
  // `inputs` follow graph.inputs(); returns the values of graph.outputs(), in order.
  // Input dtypes and shapes are checked against the graph's (symbolic dims bind to any size).
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) const;

 private:
  const Graph& graph_;
};

}  // namespace eqfuse::ir
