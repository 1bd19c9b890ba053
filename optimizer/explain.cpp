#include "optimizer/explain.h"

#include <algorithm>

#include "ir/kernel_body.h"
#include "optimizer/fusion.h"

namespace eqfuse::optimizer {

namespace {

void add_rule(std::vector<std::string>& rules, egraph::Symbol origin) {
  if (origin == egraph::kNoOrigin) return;
  std::string name(egraph::symbol_name(origin));
  if (std::find(rules.begin(), rules.end(), name) == rules.end()) rules.push_back(std::move(name));
}

}  // namespace

size_t NodeExplanation::ops_from_input() const {
  return static_cast<size_t>(std::count_if(fused_ops.begin(), fused_ops.end(),
                                           [](const FusedOp& op) { return op.rule.empty(); }));
}

Provenance node_provenance(const TensorEGraph& teg, const ir::Graph& built,
                           const std::vector<egraph::NodeId>& made_from) {
  const egraph::EGraph& eg = *teg.egraph;
  const egraph::Symbol fusion = egraph::intern(kFusionOrigin);
  Provenance out;
  for (size_t i = 0; i < built.nodes().size() && i < made_from.size(); ++i) {
    const ir::Node& node = built.nodes()[i];
    if (node.outputs.empty()) continue;
    egraph::NodeId n = made_from[i];
    NodeExplanation why;
    why.op = node.op_type;
    if (auto fused = teg.fused_from.find(n); fused != teg.fused_from.end()) {
      for (egraph::NodeId part : fused->second) {
        egraph::Symbol origin = eg.origin(part);
        why.fused_ops.push_back(
            {std::string(egraph::symbol_name(eg.op(part))),
             origin == egraph::kNoOrigin ? "" : std::string(egraph::symbol_name(origin))});
        add_rule(why.rules, origin);
      }
    } else if (eg.origin(n) != fusion) {
      add_rule(why.rules, eg.origin(n));
    }
    out.emplace(built.value(node.outputs[0]).name, std::move(why));
  }
  return out;
}

Explanations explain(const ir::Graph& result, const Provenance& provenance,
                     const cost::CostModel& model) {
  Explanations out;
  std::vector<std::string> names = result.unique_node_names();
  for (size_t i = 0; i < result.nodes().size(); ++i) {
    const ir::Node& node = result.nodes()[i];
    bool kernel = node.op_type == ir::kKernelOp;
    NodeExplanation why;
    if (!node.outputs.empty()) {
      auto it = provenance.find(result.value(node.outputs[0]).name);
      if (it != provenance.end()) why = it->second;
    }
    if (!kernel && why.rules.empty()) continue;
    why.node = names[i];
    why.op = node.op_type;
    if (kernel) {
      auto kind = kernel_node_kind(result, node);
      why.kind = kind ? kernel_kind_name(*kind) : "other";
    }
    why.predicted_ms = model.node_cost(result, node).ms();
    (kernel ? out.kernels : out.rewritten).push_back(std::move(why));
  }
  return out;
}

}  // namespace eqfuse::optimizer
