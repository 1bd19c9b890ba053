#pragma once
// Why the optimized graph looks as it does. For each node of the result that a rewrite made, the
// rules behind it, read from the e-graph's provenance: each e-node's origin (egraph/egraph.h) and
// each kernel's fused_from (tensor_egraph.h). A kernel lists the ops it fuses and the rules that
// made any of them, oldest first, so a user can see which rule to blame; another node made by a
// rule names that rule. `eqfuse optimize --explain` prints it, the report carries it (kernels[],
// rewritten[]).
//
// A rule whose right side is one of its pattern variables (x * 1 -> x) makes no e-node, only a
// merge, so no node's origin names it; such rules show where a node of the input model is gone:
// each input node that the result no longer computes, what computes its value now, and the rules
// on the chain of merges between the two (egraph/merge_forest.h). The sequential pipeline
// re-imports the algebra's graph, so there only fusion's merges are seen.
#include <string>
#include <unordered_map>
#include <vector>

#include "cost/cost_model.h"
#include "ir/graph.h"
#include "optimizer/tensor_egraph.h"
#include "rules/fusion_kinds.h"

namespace eqfuse::optimizer {

// An op that a kernel fuses and the rule that made it ("" when the input model had it).
struct FusedOp {
  std::string op, rule;
};

struct NodeExplanation {
  std::string node;                // its name in the result (Graph::unique_node_names)
  std::string output;              // the name of its first output value
  std::string op;                  // "Kernel" or the op type
  std::string kind;                // a kernel's kind ("pointwise", ...); "" for other ops
  std::vector<FusedOp> fused_ops;  // a kernel: the ops it fuses, oldest first
  std::vector<std::string> rules;  // the rules that made it (or what it fuses), oldest first
  double predicted_ms = 0;
  // Of the fused ops, how many the input graph had.
  size_t ops_from_input() const;
};

// The provenance of each node of `built` (to_graph's result; `made_from` its e-nodes), keyed by
// the name of the node's first output, which later passes (weight folding) keep.
using Provenance = std::unordered_map<std::string, NodeExplanation>;
Provenance node_provenance(const TensorEGraph& teg, const ir::Graph& built,
                           const std::vector<egraph::NodeId>& made_from);

// A node of the input model that the result no longer has, and why.
struct Replacement {
  std::string node;  // its name in the input model (Graph::unique_node_names)
  std::string op;
  // What computes its value in the result: "VALUE (OP)" for a node of the result (by its output's
  // name), "inside kernel VALUE", "input NAME" or "weight NAME".
  std::string now;
  // The rules on the chain of merges that made the two equal, in chain order (congruence, fusion
  // and the analysis's own merges left out).
  std::vector<std::string> rules;
};
// The input nodes of teg.source that `built` (to_graph's result; `made_from` its e-nodes) no
// longer computes as they were, whose replacement a rule proved equal. Input nodes merely fused
// into a kernel are not listed: the kernel's fused_ops name them.
std::vector<Replacement> replaced_nodes(const TensorEGraph& teg, const ir::Graph& built,
                                        const std::vector<egraph::NodeId>& made_from);

struct Explanations {
  std::vector<NodeExplanation> kernels;    // every Kernel node of the result, in graph order
  std::vector<NodeExplanation> rewritten;  // other nodes that a rule made
  std::vector<Replacement> replaced;       // input nodes a rule replaced
};
// The explanations of the final graph's nodes (names, kinds under `kinds` and predicted times as
// they are there).
Explanations explain(const ir::Graph& result, const Provenance& provenance,
                     const cost::CostModel& model, const rules::FusionKinds& kinds);

}  // namespace eqfuse::optimizer
