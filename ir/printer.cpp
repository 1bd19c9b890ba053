#include "ir/printer.h"

#include <fmt/format.h>

namespace eqfuse::ir {

namespace {
std::string ref(const Graph& g, ValueId v) {
  return v == kNoValue ? "_" : "%" + g.value(v).name;
}
}  // namespace

std::string print_node(const Graph& graph, const Node& node) {
  std::string out;
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    if (i) out += ", ";
    const Value& v = graph.value(node.outputs[i]);
    out += fmt::format("%{}: {}", v.name, v.type.str());
  }
  out += " = ";
  if (!node.domain.empty()) out += node.domain + ".";
  out += node.op_type + "(";
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    if (i) out += ", ";
    out += ref(graph, node.inputs[i]);
  }
  out += ")";
  if (!node.attrs.empty()) out += " " + node.attrs.str();
  if (node.is_opaque()) out += "  ; opaque";
  return out;
}

std::string print_graph(const Graph& graph) {
  std::string out = fmt::format("graph \"{}\" {{\n", graph.name);
  for (ValueId v : graph.inputs()) {
    out += fmt::format("  input %{}: {}\n", graph.value(v).name, graph.value(v).type.str());
  }
  for (ValueId v : graph.weights()) {
    const Value& value = graph.value(v);
    out += fmt::format("  weight %{}: {}{}\n", value.name, value.type.str(),
                       value.data ? "" : "  ; external");
  }
  for (const Node& node : graph.nodes()) out += "  " + print_node(graph, node) + "\n";
  for (ValueId v : graph.outputs()) out += fmt::format("  output {}\n", ref(graph, v));
  return out + "}\n";
}

}  // namespace eqfuse::ir
