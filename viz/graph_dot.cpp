#include "viz/graph_dot.h"

#include <fmt/format.h>

#include <map>
#include <sstream>

#include "ir/kernel_body.h"
#include "optimizer/fusion.h"
#include "viz/dot_text.h"

namespace eqfuse::viz {
namespace {

std::string predicted(const GraphDotOptions& options, const ir::Graph& graph,
                      const ir::Node& node) {
  if (!options.cost) return "";
  try {
    return fmt::format("{:.4f} ms", options.cost->node_cost(graph, node).ms());
  } catch (const std::exception&) {
    return "";  // an op the cost model cannot price (opaque, unknown sizes): no figure
  }
}

}  // namespace

std::string graph_dot(const ir::Graph& graph, const GraphDotOptions& options) {
  std::vector<ir::NodeId> origin;
  ir::Graph flat = ir::inline_kernels(graph, &origin);
  std::ostringstream out;
  out << "digraph " << dot_quote(graph.name) << " {\n"
      << "  rankdir=TB; newrank=true;\n"
      << "  node [shape=box, style=\"rounded,filled\", fillcolor=white, fontname=\"Helvetica\", "
         "fontsize=11];\n"
      << "  edge [fontname=\"Helvetica\", fontsize=9, color=\"#6b7280\"];\n";
  auto value_node = [&](ir::ValueId v) {
    const ir::Value& value = flat.value(v);
    return value.producer == ir::kNoNode ? fmt::format("v{}", v)
                                         : fmt::format("n{}", value.producer);
  };

  for (ir::ValueId v : flat.inputs())
    out << fmt::format("  v{} [shape=ellipse, fillcolor=\"#f3f4f6\", label={}];\n", v,
                       dot_quote(flat.value(v).name + "\n" + flat.value(v).type.str()));
  if (options.weights) {
    for (ir::ValueId v : flat.weights())
      out << fmt::format("  v{} [shape=note, fontsize=9, fillcolor=\"#f9fafb\", label={}];\n", v,
                         dot_quote(flat.value(v).name + "\n" + flat.value(v).type.str()));
  }

  // The nodes of each kernel's body, by the kernel node they come from.
  std::map<ir::NodeId, std::vector<ir::NodeId>> bodies;
  for (ir::NodeId n = 0; n < flat.nodes().size(); ++n) {
    const ir::Node& from = graph.node(origin[n]);
    if (from.op_type == ir::kKernelOp) {
      bodies[origin[n]].push_back(n);
      continue;
    }
    std::string ms = predicted(options, graph, from);
    out << fmt::format("  n{} [label={}];\n", n,
                       dot_quote(flat.node(n).op_type + (ms.empty() ? "" : "\n" + ms)));
  }
  std::vector<std::string> names = graph.unique_node_names();  // as exported ONNX has them
  for (const auto& [k, members] : bodies) {
    const ir::Node& kernel = graph.node(k);
    auto kind = optimizer::kernel_node_kind(graph, kernel);
    std::string kind_name = kind ? *kind : "kernel";
    std::string name = names[k].empty() ? fmt::format("kernel #{}", k) : names[k];
    std::string ms = predicted(options, graph, kernel);
    out << fmt::format(
        "  subgraph cluster_k{} {{\n    label={}; labeljust=l; fontname=\"Helvetica\"; "
        "fontsize=10;\n    style=\"rounded,filled\"; fillcolor=\"{}\"; color=\"#374151\";\n",
        k, dot_quote(fmt::format("{}: {}{}", name, kind_name, ms.empty() ? "" : ", " + ms)),
        kind_colour(kind_name));
    for (ir::NodeId n : members)
      out << fmt::format("    n{} [label={}];\n", n, dot_quote(flat.node(n).op_type));
    out << "  }\n";
  }

  for (ir::NodeId n = 0; n < flat.nodes().size(); ++n) {
    for (ir::ValueId v : flat.node(n).inputs) {
      if (v == ir::kNoValue) continue;
      const ir::Value& value = flat.value(v);
      if (value.is_weight() && !options.weights) continue;
      // Inside one kernel an edge is an on-chip intermediate: no type label, dashed.
      bool inside = value.producer != ir::kNoNode && origin[value.producer] == origin[n] &&
                    graph.node(origin[n]).op_type == ir::kKernelOp;
      out << fmt::format("  {} -> n{} [{}];\n", value_node(v), n,
                         inside ? "style=dashed" : "label=" + dot_quote(" " + value.type.str()));
    }
  }
  for (size_t k = 0; k < flat.outputs().size(); ++k) {
    ir::ValueId v = flat.outputs()[k];
    out << fmt::format("  out{} [shape=ellipse, fillcolor=\"#f3f4f6\", label={}];\n", k,
                       dot_quote(flat.value(v).name + "\n" + flat.value(v).type.str()));
    out << fmt::format("  {} -> out{};\n", value_node(v), k);
  }
  out << "}\n";
  return out.str();
}

}  // namespace eqfuse::viz
