#pragma once
// The bridge between tensor graphs and e-graphs: an ir::Graph becomes an e-graph over the
// tensor language (op-table names, attributes as payload, TensorAnalysis data per class), and a
// choice of one e-node per class becomes an ir::Graph again. Everything the optimizer and the
// rule tests stand on.
//
// The tensor language:
//  - a node of a known op is `(Op :attr value... child...)`, attribute values spelled by
//    ir/attr_text.h, so rule patterns' literals match them; schema attributes with a default
//    are always present (filled in), so `:alpha ?a` binds and an unwritten attribute in a rule
//    means its default. Two canonicalizations make more rules match: a Transpose without `perm`
//    gets the reversed permutation when the rank is known, and a Split without `split` gets
//    `num_outputs` (its output count);
//  - graph inputs are `(Input :name "x")`, weights `(Weight :name "w")` (small ones carry their
//    value in the analysis), an omitted optional input in the middle `(None)`;
//  - multi-output ops are tuple-valued classes read through `(Proj :index k T)`;
//  - opaque ops, and ops whose outputs beyond the first are used although the table gives them
//    one value, are kept as they are: `(op :#node "name" child...)`, which no rule matches.
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "egraph/egraph.h"
#include "ir/graph.h"
#include "optimizer/tensor_analysis.h"

namespace eqfuse::optimizer {

struct TensorEGraph {
  std::unique_ptr<TensorAnalysis> analysis;
  std::unique_ptr<egraph::EGraph> egraph;
  // The graph's outputs, as classes (canonicalize with egraph->find).
  std::vector<egraph::EClassId> outputs;
  // The graph it came from: names, inputs order, weights' data, opsets.
  std::shared_ptr<const ir::Graph> source;
  // The e-node that each value of the source graph became (by ValueId; kNoId for values of
  // nodes that were dropped). Choosing these rebuilds the source graph.
  std::vector<egraph::NodeId> value_node;
  // Names of source values and the class each became, in the order they were defined (inputs,
  // weights, then the nodes' outputs), to keep names on the way back: when classes merge, the
  // name defined first wins.
  std::vector<std::pair<egraph::EClassId, std::string>> class_name;
  // Provenance of fused kernels: each kernel e-node (fusion.h) and the e-nodes, other than
  // kernels, that its body was fused from, ascending (the order they were made). With each
  // e-node's origin (egraph.h) this says which rules a kernel stands on.
  std::unordered_map<egraph::NodeId, std::vector<egraph::NodeId>> fused_from;

  TensorEGraph();
  TensorEGraph(TensorEGraph&&) noexcept;
  TensorEGraph& operator=(TensorEGraph&&) noexcept;
  ~TensorEGraph();
  const TensorData& data(egraph::EClassId c) const { return analysis->data(egraph->find(c)); }
};

TensorEGraph from_graph(const ir::Graph& graph);

// Picks the e-node to use for a (canonical) class.
using NodeChoice = std::function<egraph::NodeId(egraph::EClassId)>;
// Rebuilds a graph from the output classes following `choice`: inputs in the source's order
// (all of them, used or not), weights carried over by name, value names kept where a class
// still stands for a source value. Throws Error on a choice that is not a node of its class or
// that yields a cycle, and when a chosen node fails shape inference.
// `made_from`, when given, receives the e-node each node of the result was built from (by the
// result's NodeId).
ir::Graph to_graph(const TensorEGraph& teg, const NodeChoice& choice,
                   std::vector<egraph::NodeId>* made_from = nullptr);
// The choice that rebuilds the source graph: each class's node from the source when it has
// one, else its first node.
NodeChoice original_choice(const TensorEGraph& teg);

}  // namespace eqfuse::optimizer
