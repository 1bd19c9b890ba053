#pragma once
// Rebuilding a graph node by node where some nodes become others: a kernel becomes its body's
// nodes (ir::inline_kernels), and code generation computes some ops as compositions of others (a
// Split as one Slice per output, a normalization as its reductions). The scaffolding is here
// once: inputs, weights and outputs carried over, every value of the source mapped to its
// counterpart, each new node's origin recorded.
#include <functional>
#include <string>
#include <vector>

#include "ir/builder.h"
#include "ir/graph.h"

namespace eqfuse::ir {

class GraphRebuild;
// Called for each node of the source in order: adds what stands for `node` (every output it has
// that anything reads must get a counterpart) and returns true, or returns false to keep the node
// as it is.
using NodeExpansion = std::function<bool(const Node& node, NodeId id, GraphRebuild& rebuild)>;

class GraphRebuild {
 public:
  explicit GraphRebuild(const Graph& source);

  const Graph& source() const { return source_; }
  Graph& graph() { return out_; }  // the graph being built

  // The counterpart of a source value already rebuilt (kNoValue stays kNoValue).
  ValueId operator()(ValueId source_value) const;
  // The counterparts of a source node's inputs.
  std::vector<ValueId> inputs(const Node& node) const;

  // Adds `node`, whose inputs are values of the new graph, with outputs that stand for the source
  // values `as` (their names, types and symbolic values).
  void emit(Node node, const std::vector<ValueId>& as);
  // Adds a node of op-table op `op_type` typed by inference and returns its one output: a value
  // standing for the source value `as` when given, with that value's type (Error (Unsupported)
  // naming both when inference gives another dtype or rank, or another extent of a dim both know),
  // else a new value named after `name`.
  ValueId op(const std::string& op_type, std::vector<ValueId> inputs, AttrList attrs,
             const std::string& name, ValueId as = kNoValue);
  // A weight of the new graph named after `base`, with a name neither graph has.
  ValueId constant(const std::string& base, Tensor data);
  // Makes `value`, a value of the new graph, the counterpart of the source value `source_value`.
  void alias(ValueId source_value, ValueId value);
  // A value name neither graph has, built from `base`.
  std::string fresh_name(const std::string& base) const;

 private:
  friend Graph rebuild_graph(const Graph&, const NodeExpansion&, std::vector<NodeId>*);
  const Graph& source_;
  Graph out_;
  std::vector<ValueId> map_;
};

// The source rebuilt through `expand`. `origin`, when given, receives for each node of the result
// the source node it stands for.
Graph rebuild_graph(const Graph& source, const NodeExpansion& expand,
                    std::vector<NodeId>* origin = nullptr);

}  // namespace eqfuse::ir
