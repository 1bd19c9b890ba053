#include "extract/problem.h"

#include <algorithm>
#include <cmath>
#include <string_view>
#include <unordered_map>

#include "egraph/serialized_egraph.h"
#include "support/error.h"

namespace eqfuse::extract {

ClassIndex ExtractionProblem::add_class() {
  class_nodes_.emplace_back();
  return static_cast<ClassIndex>(class_nodes_.size() - 1);
}

NodeIndex ExtractionProblem::add_node(ClassIndex eclass, double cost,
                                      std::span<const ClassIndex> children) {
  if (eclass >= num_classes()) fail("extraction problem: e-node in unknown e-class");
  if (!std::isfinite(cost))
    fail("extraction problem: e-node cost must be finite, got " + std::to_string(cost));
  for (ClassIndex c : children)
    if (c >= num_classes()) fail("extraction problem: e-node child is an unknown e-class");
  auto n = static_cast<NodeIndex>(node_class_.size());
  node_class_.push_back(eclass);
  node_cost_.push_back(cost);
  min_cost_ = std::min(min_cost_, cost);
  child_classes_.insert(child_classes_.end(), children.begin(), children.end());
  child_begin_.push_back(static_cast<uint32_t>(child_classes_.size()));
  class_nodes_[eclass].push_back(n);
  return n;
}

void ExtractionProblem::add_root(ClassIndex eclass) {
  if (eclass >= num_classes()) fail("extraction problem: unknown root e-class");
  roots_.push_back(eclass);
}

SerializedProblem make_problem(const egraph::SerializedEGraph& egraph) {
  SerializedProblem out;
  std::unordered_map<std::string_view, ClassIndex> class_of_id;
  std::unordered_map<std::string_view, ClassIndex> class_of_node;
  class_of_id.reserve(egraph.nodes.size());
  class_of_node.reserve(egraph.nodes.size());
  for (const auto& n : egraph.nodes) {
    auto [it, added] = class_of_id.try_emplace(n.eclass, 0);
    if (added) {
      it->second = out.problem.add_class();
      out.class_ids.push_back(n.eclass);
    }
    class_of_node.emplace(n.id, it->second);
  }
  std::vector<ClassIndex> children;
  for (const auto& n : egraph.nodes) {
    children.clear();
    for (const auto& c : n.children) {
      auto it = class_of_node.find(c);
      if (it == class_of_node.end()) fail("e-node " + n.id + " has unknown child node " + c);
      children.push_back(it->second);
    }
    out.problem.add_node(class_of_id.at(n.eclass), n.cost, children);
    out.node_ids.push_back(n.id);
  }
  for (const auto& r : egraph.root_eclasses) {
    auto it = class_of_id.find(r);
    if (it == class_of_id.end()) fail("root e-class " + r + " has no e-node");
    out.problem.add_root(it->second);
  }
  return out;
}

egraph::SerializedEGraph to_serialized(const ExtractionProblem& problem,
                                       std::span<const std::string> ops) {
  // Which e-nodes can be part of a term at all: every child class keeps one (to a fixpoint).
  std::vector<bool> kept(problem.num_nodes(), true);
  std::vector<size_t> alive(problem.num_classes(), 0);
  for (NodeIndex n = 0; n < problem.num_nodes(); ++n) ++alive[problem.node_class(n)];
  for (bool changed = true; changed;) {
    changed = false;
    for (NodeIndex n = 0; n < problem.num_nodes(); ++n) {
      if (!kept[n]) continue;
      for (ClassIndex c : problem.children(n))
        if (alive[c] == 0) {
          kept[n] = false;
          --alive[problem.node_class(n)];
          changed = true;
          break;
        }
    }
  }
  auto node_id = [&](ClassIndex c, size_t j) {
    return std::to_string(c) + "." + std::to_string(j);
  };
  std::vector<std::string> first(problem.num_classes());
  std::vector<size_t> position(problem.num_nodes(), 0);
  for (ClassIndex c = 0; c < problem.num_classes(); ++c) {
    size_t j = 0;
    for (NodeIndex n : problem.nodes(c))
      if (kept[n]) position[n] = j++;
    if (j > 0) first[c] = node_id(c, 0);
  }
  egraph::SerializedEGraph out;
  for (ClassIndex c = 0; c < problem.num_classes(); ++c)
    for (NodeIndex n : problem.nodes(c)) {
      if (!kept[n]) continue;
      egraph::SerializedNode node;
      node.id = node_id(c, position[n]);
      node.op = n < ops.size() ? ops[n] : "node";
      for (ClassIndex k : problem.children(n)) node.children.push_back(first[k]);
      node.eclass = std::to_string(c);
      node.cost = problem.cost(n);
      out.nodes.push_back(std::move(node));
    }
  for (ClassIndex r : problem.roots())
    if (alive[r] > 0) out.root_eclasses.push_back(std::to_string(r));
  return out;
}

}  // namespace eqfuse::extract
