#include "optimizer/explain.h"

#include <algorithm>
#include <unordered_set>

#include "egraph/merge_forest.h"

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

std::vector<Replacement> replaced_nodes(const TensorEGraph& teg, const ir::Graph& built,
                                        const std::vector<egraph::NodeId>& made_from) {
  const egraph::EGraph& eg = *teg.egraph;
  // The e-nodes the result computes as they are, and where each class's value is now.
  struct Where {
    egraph::NodeId node;
    std::string now;
  };
  std::unordered_set<egraph::NodeId> present;
  std::unordered_map<egraph::EClassId, Where> where;
  for (size_t i = 0; i < built.nodes().size() && i < made_from.size(); ++i) {
    const ir::Node& node = built.nodes()[i];
    if (node.outputs.empty()) continue;
    egraph::NodeId n = made_from[i];
    const std::string& value = built.value(node.outputs[0]).name;
    present.insert(n);
    where[eg.find(n)] = {n, value + " (" + node.op_type + ")"};
  }
  for (size_t i = 0; i < built.nodes().size() && i < made_from.size(); ++i) {
    auto fused = teg.fused_from.find(made_from[i]);
    if (fused == teg.fused_from.end() || built.nodes()[i].outputs.empty()) continue;
    const std::string& kernel = built.value(built.nodes()[i].outputs[0]).name;
    for (egraph::NodeId part : fused->second) {
      present.insert(part);
      where.emplace(eg.find(part), Where{part, "inside kernel " + kernel});
    }
  }
  const ir::Graph& source = *teg.source;
  auto leaves = [&](const std::vector<ir::ValueId>& values, const char* what) {
    for (ir::ValueId v : values) {
      egraph::NodeId n = teg.value_node[v];
      const std::string& name = source.value(v).name;
      if (n != egraph::kNoId && built.find_value(name))
        where.emplace(eg.find(n), Where{n, std::string(what) + " " + name});
    }
  };
  leaves(source.inputs(), "input");
  leaves(source.weights(), "weight");

  const egraph::Symbol congruence = egraph::intern(egraph::kCongruenceOrigin);
  const egraph::Symbol fusion = egraph::intern(kFusionOrigin);
  egraph::MergeForest forest(eg);
  std::vector<std::string> names = source.unique_node_names();
  std::vector<Replacement> out;
  for (size_t i = 0; i < source.nodes().size(); ++i) {
    const ir::Node& node = source.nodes()[i];
    if (node.outputs.size() != 1) continue;
    egraph::NodeId o = teg.value_node[node.outputs[0]];
    if (o == egraph::kNoId || present.count(o)) continue;
    auto it = where.find(eg.find(o));
    if (it == where.end()) continue;  // its value is not needed any more
    Replacement r{names[i], node.op_type, it->second.now, {}};
    for (const egraph::MergeRecord& m : forest.path(o, it->second.node))
      if (m.origin != congruence && m.origin != fusion) add_rule(r.rules, m.origin);
    if (!r.rules.empty()) out.push_back(std::move(r));
  }
  return out;
}

Explanations explain(const ir::Graph& result, const Provenance& provenance,
                     const cost::CostModel& model, const rules::FusionKinds& kinds) {
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
    why.output = node.outputs.empty() ? "" : result.value(node.outputs[0]).name;
    why.op = node.op_type;
    if (kernel) {
      auto kind = kernel_node_kind(result, node, kinds);
      why.kind = kind ? *kind : "other";
    }
    why.predicted_ms = model.node_cost(result, node).ms();
    (kernel ? out.kernels : out.rewritten).push_back(std::move(why));
  }
  return out;
}

}  // namespace eqfuse::optimizer
