#include "viz/egraph_dot.h"

#include <fmt/format.h>

#include <deque>
#include <map>
#include <set>
#include <sstream>

#include "extract/dag.h"
#include "extract/problem.h"
#include "support/error.h"
#include "viz/dot_text.h"

namespace eqfuse::viz {

std::vector<std::string> extracted_nodes(const egraph::SerializedEGraph& egraph) {
  extract::SerializedProblem p = extract::make_problem(egraph);
  extract::ExtractionResult r = extract::extract_dag(p.problem);
  std::vector<std::string> ids;
  for (extract::NodeIndex n : r.choice)
    if (n != extract::kNoNode) ids.push_back(p.node_ids[n]);
  return ids;
}

std::string egraph_dot(const egraph::SerializedEGraph& egraph, const EGraphDotOptions& options) {
  std::map<std::string, std::vector<size_t>> members;  // e-class -> its nodes (file order)
  std::map<std::string, size_t> node_at;
  for (size_t i = 0; i < egraph.nodes.size(); ++i) {
    members[egraph.nodes[i].eclass].push_back(i);
    node_at[egraph.nodes[i].id] = i;
  }
  auto child_class = [&](const std::string& node_id) {
    return egraph.nodes[node_at.at(node_id)].eclass;
  };

  // The e-classes drawn: all, or those within `depth` steps of the focus.
  std::set<std::string> shown;
  if (options.focus_class.empty()) {
    for (const auto& [c, _] : members) shown.insert(c);
  } else {
    if (!members.count(options.focus_class))
      throw Error(fmt::format("--class {}: the e-graph has no such e-class", options.focus_class));
    std::map<std::string, std::set<std::string>> near;  // both directions
    for (const auto& n : egraph.nodes)
      for (const auto& child : n.children) {
        near[n.eclass].insert(child_class(child));
        near[child_class(child)].insert(n.eclass);
      }
    std::deque<std::pair<std::string, size_t>> todo{{options.focus_class, 0}};
    shown.insert(options.focus_class);
    while (!todo.empty()) {
      auto [c, d] = todo.front();
      todo.pop_front();
      if (d == options.depth) continue;
      for (const std::string& next : near[c])
        if (shown.insert(next).second) todo.push_back({next, d + 1});
    }
  }
  if (shown.size() > options.max_classes)
    throw Error(fmt::format(
        "the picture would hold {} e-classes, more than {} can be read: draw the neighbourhood "
        "of one e-class (--class ID --depth N)",
        shown.size(), options.max_classes));

  std::set<std::string> chosen(options.chosen.begin(), options.chosen.end());
  std::set<std::string> roots(egraph.root_eclasses.begin(), egraph.root_eclasses.end());
  std::ostringstream out;
  out << "digraph egraph {\n  compound=true; rankdir=TB; newrank=true;\n"
      << "  node [shape=box, style=\"rounded,filled\", fillcolor=white, fontname=\"Helvetica\", "
         "fontsize=11];\n  edge [color=\"#6b7280\", arrowsize=0.7];\n";
  auto node_name = [](size_t i) { return fmt::format("n{}", i); };
  std::map<std::string, size_t> cluster_of;  // e-class -> a cluster index
  for (const std::string& c : shown) {
    size_t k = cluster_of.size();
    cluster_of[c] = k;
    bool root = roots.count(c) > 0;
    out << fmt::format(
        "  subgraph cluster_c{} {{\n    label={}; fontname=\"Helvetica\"; fontsize=10;\n    "
        "style=\"rounded,dashed{}\"; color=\"{}\";\n",
        k, dot_quote(fmt::format("e-class {}{}", c, root ? " (root)" : "")), root ? ",bold" : "",
        root ? "#111827" : "#9ca3af");
    for (size_t i : members[c]) {
      const auto& n = egraph.nodes[i];
      bool picked = chosen.count(n.id) > 0;
      out << fmt::format(
          "    {} [label={}{}];\n", node_name(i), dot_quote(n.op),
          picked ? fmt::format(", fillcolor=\"{}\", penwidth=2", kChosenColour) : "");
    }
    out << "  }\n";
  }
  // Children outside the picture become one dashed stub each.
  std::map<std::string, std::string> stubs;
  for (const std::string& c : shown)
    for (size_t i : members[c])
      for (const std::string& child : egraph.nodes[i].children) {
        std::string cc = child_class(child);
        std::string colour = chosen.count(egraph.nodes[i].id) ? ", color=\"#b45309\"" : "";
        if (shown.count(cc)) {
          // (lhead clips the arrow at the child's box; not for a child in its own e-class.)
          std::string head = cc == c ? "" : fmt::format("lhead=cluster_c{}", cluster_of[cc]);
          out << fmt::format("  {} -> {} [{}{}];\n", node_name(i), node_name(members[cc].front()),
                             head, colour);
          continue;
        }
        auto [stub, added] = stubs.emplace(cc, fmt::format("stub{}", stubs.size()));
        if (added)
          out << fmt::format("  {} [shape=plaintext, style=\"\", label={}];\n", stub->second,
                             dot_quote("e-class " + cc + " ..."));
        out << fmt::format("  {} -> {} [style=dashed{}];\n", node_name(i), stub->second, colour);
      }
  out << "}\n";
  return out.str();
}

}  // namespace eqfuse::viz
