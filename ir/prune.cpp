#include "ir/prune.h"

#include <vector>

namespace eqfuse::ir {

Graph prune_unused(const Graph& graph, const std::set<std::string>& keep) {
  std::vector<bool> live(graph.values().size(), false);
  for (ValueId v : graph.outputs()) live[v] = true;
  for (ValueId v = 0; v < graph.values().size(); ++v) {
    if (keep.count(graph.value(v).name)) live[v] = true;
  }
  const auto& nodes = graph.nodes();
  std::vector<bool> node_live(nodes.size(), false);
  for (size_t n = nodes.size(); n-- > 0;) {
    for (ValueId out : nodes[n].outputs) node_live[n] = node_live[n] || live[out];
    if (!node_live[n]) continue;
    for (ValueId in : nodes[n].inputs) {
      if (in != kNoValue) live[in] = true;
    }
  }

  Graph out;
  out.name = graph.name;
  out.opsets = graph.opsets;
  std::vector<ValueId> remap(graph.values().size(), kNoValue);
  for (ValueId v : graph.inputs())
    remap[v] = out.add_input(graph.value(v).name, graph.value(v).type);
  for (ValueId v = 0; v < graph.values().size(); ++v) {
    const Value& value = graph.value(v);
    if (!live[v] || !value.is_weight()) continue;
    remap[v] = value.data ? out.add_weight(value.name, value.data)
                          : out.add_external_weight(value.name, value.type, *value.external);
  }
  for (size_t n = 0; n < nodes.size(); ++n) {
    if (!node_live[n]) continue;
    Node node = nodes[n];
    for (ValueId& in : node.inputs) {
      if (in != kNoValue) in = remap[in];
    }
    for (ValueId& o : node.outputs) {
      const Value& value = graph.value(o);
      o = remap[o] = out.add_value(value.name, value.type);
      out.value(o).sym_value = value.sym_value;
    }
    out.add_node(std::move(node));
  }
  for (ValueId v : graph.outputs()) out.add_output(remap[v]);
  return out;
}

}  // namespace eqfuse::ir
