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

}  // namespace eqfuse::extract
