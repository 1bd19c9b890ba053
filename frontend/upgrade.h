#pragma once
// Brings ONNX nodes of opsets 7-16 to the opset-17 semantics the op table speaks (see
// ir/op_table.h), and normalizes "attribute-like" inputs: when Squeeze/Unsqueeze axes,
// ReduceSum axes, Split's split, Pad's pads, Clip's min/max or Slice's starts/ends/axes/steps
// are constants, the IR holds them as attributes, so rewrite rules match one form only.
// Export (onnx_export.cpp) turns them back into inputs where opset 17 wants inputs.
//
// Written by hand rather than with ONNX's version converter: the converter is all-or-nothing
// per model (one adapter it lacks, or a model it dislikes, and nothing converts), it refuses
// structure-only models, and the few changes that matter to eqfuse are short to state here.
#include <string>
#include <vector>

#include "ir/graph.h"

namespace eqfuse::frontend {

// One node as the importer is about to add it: inputs already resolved to values, outputs
// still names (an empty name is an omitted optional output).
struct NodeSpec {
  std::string name;
  std::string op_type;
  std::string domain;
  std::vector<ir::ValueId> inputs;
  std::vector<std::string> outputs;
  ir::Attributes attrs;
  std::vector<ir::Subgraph> subgraphs = {};  // imported bodies of If, Loop and Scan
  std::string label() const;                 // "node 'conv1' (Conv)"
};

// Where upgraded nodes go: the importer, which infers types, folds constants and adds them.
class NodeSink {
 public:
  virtual ~NodeSink() = default;
  virtual const ir::Graph& graph() const = 0;
  // Adds the node (or folds it); returns the values of its outputs.
  virtual std::vector<ir::ValueId> emit(NodeSpec node) = 0;
  virtual ir::ValueId add_constant(const std::string& base_name, ir::Tensor value) = 0;
  // A fresh value name.
  virtual std::string fresh_name(const std::string& base) = 0;
};

// Emits `node`, written at default-domain `opset`, in opset-17 form (one or more nodes).
void upgrade_and_emit(NodeSink& sink, NodeSpec node, int opset);

// Turns constant attribute-like inputs of an opset-17 node into attributes (see above).
void constant_inputs_to_attributes(const ir::Graph& graph, NodeSpec& node);

}  // namespace eqfuse::frontend
