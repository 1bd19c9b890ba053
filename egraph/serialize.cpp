#include "egraph/serialize.h"

#include <fmt/format.h>

#include <unordered_map>

#include "egraph/term.h"

namespace eqfuse::egraph {
std::string node_text(const EGraph& g, NodeId n) {
  std::string text(symbol_name(g.op(n)));
  std::string attrs = attrs_string(g.attrs(n));
  if (!attrs.empty()) text += " " + attrs;
  return text;
}

SerializedEGraph to_serialized(const EGraph& g, const std::vector<EClassId>& roots) {
  if (!g.clean()) fail("internal: serializing an e-graph that needs a rebuild");
  SerializedEGraph out;
  out.nodes.reserve(g.num_nodes());
  for (EClassId c : g.classes()) {
    auto nodes = g.class_nodes(c);
    for (size_t k = 0; k < nodes.size(); ++k) {
      SerializedNode node;
      node.id = fmt::format("{}.{}", c, k);
      node.op = node_text(g, nodes[k]);
      for (EClassId child : g.children(nodes[k]))
        node.children.push_back(fmt::format("{}.0", child));
      node.eclass = std::to_string(c);
      if (Symbol o = g.origin(nodes[k]); o != kNoOrigin) node.origin = symbol_name(o);
      out.nodes.push_back(std::move(node));
    }
  }
  for (EClassId r : roots) out.root_eclasses.push_back(std::to_string(g.find(r)));
  return out;
}

std::vector<EClassId> add_serialized(EGraph& g, const SerializedEGraph& s) {
  std::unordered_map<std::string, size_t> node_index;
  for (size_t i = 0; i < s.nodes.size(); ++i) node_index.emplace(s.nodes[i].id, i);
  std::unordered_map<std::string, EClassId> class_of;  // file e-class -> our class
  // Ops: name, then optional attributes in term syntax.
  std::vector<std::pair<Symbol, AttrId>> ops;
  for (const SerializedNode& n : s.nodes) {
    size_t space = n.op.find(' ');
    if (space == std::string::npos) {
      ops.emplace_back(intern(n.op), kNoAttrs);
      continue;
    }
    Sexpr form = parse_sexpr("(" + n.op + ")", "node " + n.id);
    NodeForm nf = split_node_form(form);
    AttrList attrs;
    for (auto& [key, value] : nf.attrs) attrs.emplace_back(key, intern(value->str()));
    ops.emplace_back(nf.op, intern_attrs(std::move(attrs)));
  }
  // Add nodes whose children's classes exist, until nothing more can be added (a class may
  // only be reachable through a cycle once its other members exist).
  std::vector<bool> added(s.nodes.size(), false);
  size_t remaining = s.nodes.size();
  for (bool progress = true; progress && remaining > 0;) {
    progress = false;
    for (size_t i = 0; i < s.nodes.size(); ++i) {
      if (added[i]) continue;
      const SerializedNode& n = s.nodes[i];
      std::vector<EClassId> kids;
      bool ready = true;
      for (const std::string& child : n.children) {
        auto it = class_of.find(s.nodes[node_index.at(child)].eclass);
        if (it == class_of.end()) {
          ready = false;
          break;
        }
        kids.push_back(it->second);
      }
      if (!ready) continue;
      EClassId c;
      {
        OriginScope origin(g, n.origin.empty() ? kNoOrigin : intern(n.origin));
        c = g.add(ops[i].first, ops[i].second, kids);
      }
      auto [it, fresh] = class_of.emplace(n.eclass, c);
      if (!fresh) g.merge(it->second, c);
      added[i] = true;
      --remaining;
      progress = true;
    }
  }
  if (remaining > 0) {
    for (size_t i = 0; i < s.nodes.size(); ++i)
      if (!added[i])
        fail("e-class '" + s.nodes[i].eclass + "' of node '" + s.nodes[i].id +
             "' cannot be built: its children form a cycle with no leaf");
  }
  g.rebuild();
  std::vector<EClassId> roots;
  for (const std::string& r : s.root_eclasses) roots.push_back(g.find(class_of.at(r)));
  return roots;
}

std::string to_dot(const EGraph& g, const std::vector<EClassId>& roots) {
  if (!g.clean()) fail("internal: drawing an e-graph that needs a rebuild");
  std::string out = "digraph egraph {\n  compound=true;\n  clusterrank=local;\n";
  for (EClassId c : g.classes()) {
    bool root = std::find(roots.begin(), roots.end(), c) != roots.end();
    out += fmt::format("  subgraph cluster_{} {{\n    style=dotted;{}\n    label=\"#{}\";\n", c,
                       root ? " color=red;" : "", c);
    auto nodes = g.class_nodes(c);
    for (size_t k = 0; k < nodes.size(); ++k) {
      std::string label = node_text(g, nodes[k]);
      std::string escaped;
      for (char ch : label) {
        if (ch == '"' || ch == '\\') escaped += '\\';
        escaped += ch;
      }
      out += fmt::format("    \"{}.{}\" [label=\"{}\"];\n", c, k, escaped);
    }
    out += "  }\n";
  }
  for (EClassId c : g.classes()) {
    auto nodes = g.class_nodes(c);
    for (size_t k = 0; k < nodes.size(); ++k) {
      for (EClassId child : g.children(nodes[k]))
        out += fmt::format("  \"{}.{}\" -> \"{}.0\" [lhead=cluster_{}];\n", c, k, child, child);
    }
  }
  return out + "}\n";
}

}  // namespace eqfuse::egraph
