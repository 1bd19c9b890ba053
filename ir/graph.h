#pragma once
// The tensor graph: SSA values, nodes in topological order, graph inputs and outputs, weights.
// Every later stage reads and writes this: the ONNX frontend builds it, the optimizer turns it
// into an e-graph and back, the interpreter runs it, codegen lowers it.
//
// A value is defined once: by a graph input, a weight (initializer), or one output of a node.
// Nodes are kept in topological order (add_node checks that inputs exist), so passes iterate
// nodes() front to back. Weights may live in an external file (ONNX external data) and are
// read only when first asked for, so structure-only models load and can be inspected.
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/attribute.h"
#include "ir/shape.h"
#include "ir/tensor.h"

namespace eqfuse::ir {

using ValueId = uint32_t;
using NodeId = uint32_t;
inline constexpr ValueId kNoValue = ~ValueId{0};  // an omitted optional input
inline constexpr NodeId kNoNode = ~NodeId{0};     // the producer of inputs and weights

struct OpDef;  // one entry of the op table (ir/op_table.h)
class Graph;

// The body of a control-flow node (If's branches, Loop's and Scan's body), imported from the
// subgraph attribute of that name. Its first `formal_inputs` inputs are the body's own; the
// rest are values it reads from enclosing scopes, bound by name where the node runs.
struct Subgraph {
  std::string attr;
  std::shared_ptr<const Graph> graph;
  size_t formal_inputs = 0;
};

// Where a weight's bytes are when they are not in memory: raw little-endian elements in the
// layout of Tensor storage, as ONNX external data stores them.
struct ExternalData {
  std::filesystem::path file;  // absolute, resolved by the frontend
  uint64_t offset = 0;
  std::optional<uint64_t> length;
};

struct Value {
  std::string name;
  TensorType type;
  NodeId producer = kNoNode;
  uint32_t output_index = 0;             // which output of `producer`
  std::shared_ptr<const Tensor> data;    // weights and folded constants
  std::optional<ExternalData> external;  // a weight whose data is not loaded yet
  // For a small integer tensor that a shape computation produces (Shape -> Gather -> Concat),
  // its elements as symbolic integers ("batch", "batch*64"), when inference knows them but
  // they are not all constant; nullptr otherwise. Reshape, Expand and the like read their
  // output shapes from here (see ir/shape_values.h).
  std::shared_ptr<const std::vector<SymInt>> sym_value;
  bool is_weight() const { return data != nullptr || external.has_value(); }
};

struct Node {
  std::string name;
  std::string op_type;          // the ONNX op name ("Conv"); opaque ops keep the model's name
  std::string domain;           // "" is the default ONNX domain
  const OpDef* def = nullptr;   // the op table entry; nullptr for an opaque (unknown) op
  std::vector<ValueId> inputs;  // kNoValue marks an omitted optional input
  std::vector<ValueId> outputs;
  Attributes attrs;
  std::vector<Subgraph> subgraphs;  // control flow only; the attributes keep the ONNX bytes
  bool is_opaque() const { return def == nullptr; }
};

class Graph {
 public:
  std::string name = "graph";
  std::map<std::string, int64_t> opsets = {{"", 17}};  // domain -> opset version

  // Adds a value not yet defined by anything (add_node defines node outputs).
  ValueId add_value(std::string name, TensorType type);
  ValueId add_input(std::string name, TensorType type);
  ValueId add_weight(std::string name, Tensor data);
  ValueId add_weight(std::string name, std::shared_ptr<const Tensor> data);
  ValueId add_external_weight(std::string name, TensorType type, ExternalData where);
  // Appends a node; its inputs must already be defined (topological order), its outputs must be
  // values added with add_value and not yet produced. Throws Error naming the node otherwise.
  NodeId add_node(Node node);
  void add_output(ValueId value);

  const Value& value(ValueId id) const { return values_.at(id); }
  Value& value(ValueId id) { return values_.at(id); }
  const Node& node(NodeId id) const { return nodes_.at(id); }
  Node& node(NodeId id) { return nodes_.at(id); }
  const std::vector<Value>& values() const { return values_; }
  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<ValueId>& inputs() const { return inputs_; }
  const std::vector<ValueId>& outputs() const { return outputs_; }
  std::vector<ValueId>& outputs() { return outputs_; }
  std::vector<ValueId> weights() const;
  std::optional<ValueId> find_value(std::string_view name) const;
  // A value name not used yet, built from `base`.
  std::string unique_name(const std::string& base) const;

  // The data of a weight, read from its external file on first use (not thread-safe).
  // Throws Error naming the weight and file when the file is missing or too short.
  std::shared_ptr<const Tensor> weight_data(ValueId id) const;

  // Number of elements and bytes over all weights (static shapes only).
  int64_t parameter_count() const;
  int64_t parameter_bytes() const;

  // Consumers of each value (node ids), computed on demand.
  std::vector<std::vector<NodeId>> consumers() const;
  // Node names made unique in node order, as exported ONNX names them: the first keeps its
  // name, later ones get "_1", "_2", ... (rewritten graphs repeat names: two Adds built by
  // rules are both "Add"). Empty names stay empty.
  std::vector<std::string> unique_node_names() const;

 private:
  std::vector<Value> values_;
  std::vector<Node> nodes_;
  std::vector<ValueId> inputs_;
  std::vector<ValueId> outputs_;
  std::unordered_map<std::string, ValueId> by_name_;
  mutable std::unordered_map<ValueId, std::shared_ptr<const Tensor>> loaded_;
};

}  // namespace eqfuse::ir
