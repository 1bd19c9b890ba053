#include "frontend/subgraph_scope.h"

#include <unordered_set>

namespace eqfuse::frontend {

void collect_attribute_free_names(const onnx::AttributeProto& attr, std::set<std::string>& out) {
  if (attr.has_g()) collect_free_names(attr.g(), out);
  for (const auto& sub : attr.graphs()) collect_free_names(sub, out);
}

void collect_node_subgraph_names(const onnx::NodeProto& node, std::set<std::string>& out) {
  for (const auto& attr : node.attribute()) collect_attribute_free_names(attr, out);
}

void collect_free_names(const onnx::GraphProto& graph, std::set<std::string>& out) {
  std::unordered_set<std::string> defined;
  for (const auto& v : graph.input()) defined.insert(v.name());
  for (const auto& t : graph.initializer()) defined.insert(t.name());
  for (const auto& n : graph.node()) {
    for (const auto& o : n.output()) defined.insert(o);
  }
  std::set<std::string> used;
  for (const auto& n : graph.node()) {
    for (const auto& i : n.input()) {
      if (!i.empty()) used.insert(i);
    }
    collect_node_subgraph_names(n, used);
  }
  for (const auto& o : graph.output()) used.insert(o.name());
  for (const auto& name : used) {
    if (!defined.count(name)) out.insert(name);
  }
}

}  // namespace eqfuse::frontend
