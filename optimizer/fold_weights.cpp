#include "optimizer/fold_weights.h"

#include <fmt/format.h>

#include "ir/interpreter.h"
#include "ir/op_table.h"
#include "support/error.h"

namespace eqfuse::optimizer {

bool foldable_op(const ir::OpDef& def) {
  return def.kernel || def.scalar || def.scalar_for_node;
}

FoldReport fold_weight_subgraphs(const ir::Graph& graph, int64_t max_elements) {
  FoldReport report;
  ir::Graph& out = report.graph;
  out.name = graph.name;
  out.opsets = graph.opsets;
  std::vector<ir::ValueId> map(graph.values().size(), ir::kNoValue);
  for (ir::ValueId id : graph.inputs())
    map[id] = out.add_input(graph.value(id).name, graph.value(id).type);
  std::vector<std::shared_ptr<const ir::Tensor>> computed(graph.values().size());  // folded
  // Weights are copied when first used (unused ones drop out), keeping external ones external.
  auto mapped = [&](ir::ValueId id) {
    if (id == ir::kNoValue || map[id] != ir::kNoValue) return id == ir::kNoValue ? id : map[id];
    const ir::Value& v = graph.value(id);
    if (computed[id])
      map[id] = out.add_weight(v.name, computed[id]);
    else if (v.data)
      map[id] = out.add_weight(v.name, v.data);
    else if (v.external)
      map[id] = out.add_external_weight(v.name, v.type, *v.external);
    else
      fail("fold_weight_subgraphs: value '" + v.name + "' is used before it is defined");
    return map[id];
  };
  std::vector<bool> is_weight(graph.values().size(), false);
  for (ir::ValueId id = 0; id < graph.values().size(); ++id)
    is_weight[id] = graph.value(id).is_weight() && graph.value(id).producer == ir::kNoNode;
  for (const ir::Node& node : graph.nodes()) {
    bool weight_only = !node.is_opaque() && foldable_op(*node.def) &&
                       (!node.inputs.empty() || node.op_type == "Constant");
    for (ir::ValueId in : node.inputs)
      weight_only = weight_only && (in == ir::kNoValue || is_weight[in]);
    for (ir::ValueId o : node.outputs) {
      const ir::Shape& s = graph.value(o).type.shape;
      weight_only = weight_only && s.is_static() && *s.numel() <= max_elements;
    }
    if (weight_only) {
      std::vector<std::shared_ptr<const ir::Tensor>> data;
      std::vector<const ir::Tensor*> inputs;
      bool have = true;
      for (ir::ValueId in : node.inputs) {
        if (in == ir::kNoValue) {
          inputs.push_back(nullptr);
          continue;
        }
        std::shared_ptr<const ir::Tensor> d = computed[in];
        try {
          if (!d) d = graph.weight_data(in);
        } catch (const Error&) {
        }
        if (!d) {
          have = false;
          break;
        }
        data.push_back(d);
        inputs.push_back(d.get());
      }
      if (have) {
        std::vector<ir::Tensor> values = ir::evaluate_node(graph, node, inputs);
        for (size_t k = 0; k < node.outputs.size() && k < values.size(); ++k) {
          ir::ValueId o = node.outputs[k];
          computed[o] = std::make_shared<const ir::Tensor>(std::move(values[k]));
          map[o] = ir::kNoValue;  // added when first used, like every weight
          is_weight[o] = true;
        }
        ++report.folded;
        continue;
      }
      ++report.unfoldable;
    }
    ir::Node copy = node;
    for (ir::ValueId& in : copy.inputs) in = mapped(in);
    for (ir::ValueId& o : copy.outputs) {
      const ir::Value& v = graph.value(o);
      ir::ValueId id = out.add_value(v.name, v.type);
      map[o] = id;
      o = id;
    }
    out.add_node(std::move(copy));
  }
  for (ir::ValueId o : graph.outputs()) out.add_output(mapped(o));
  if (report.unfoldable)
    report.note = fmt::format(
        "{} weight-only nodes were planned for folding but kept: the model's weights are not "
        "there (structure only), so their values cannot be computed",
        report.unfoldable);
  return report;
}

}  // namespace eqfuse::optimizer
