#include "extract/decompose.h"

#include <algorithm>
#include <unordered_map>

#include "support/error.h"

namespace eqfuse::extract {
namespace {

// The e-class graph (an edge from each e-class to the e-classes its e-nodes read) below a
// virtual root that points at the roots, with the immediate dominator of each reachable vertex
// (Cooper, Harvey and Kennedy's iteration over reverse postorder). Vertex n is the virtual root.
struct Dominators {
  std::vector<std::vector<ClassIndex>> succ;
  std::vector<ClassIndex> reverse_postorder;  // reachable vertices, the virtual root first
  std::vector<ClassIndex> idom;               // kNoClass where unreachable
};

Dominators dominators(const ExtractionProblem& p) {
  const auto n = static_cast<ClassIndex>(p.num_classes());
  Dominators d;
  d.succ.resize(n + 1);
  for (ClassIndex c = 0; c < n; ++c) {
    if (free_node(p, c) != kNoNode) continue;
    auto& out = d.succ[c];
    for (NodeIndex m : p.nodes(c))
      for (ClassIndex k : p.children(m))
        if (free_node(p, k) == kNoNode) out.push_back(k);
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
  }
  for (ClassIndex r : p.roots())
    if (free_node(p, r) == kNoNode) d.succ[n].push_back(r);

  std::vector<ClassIndex> postorder;
  std::vector<char> seen(n + 1, 0);
  std::vector<std::pair<ClassIndex, size_t>> stack{{n, 0}};
  seen[n] = 1;
  while (!stack.empty()) {
    auto& [v, next] = stack.back();
    if (next < d.succ[v].size()) {
      ClassIndex k = d.succ[v][next++];
      if (!seen[k]) {
        seen[k] = 1;
        stack.push_back({k, 0});
      }
    } else {
      postorder.push_back(v);
      stack.pop_back();
    }
  }
  d.reverse_postorder.assign(postorder.rbegin(), postorder.rend());
  std::vector<uint32_t> order(n + 1, 0);
  for (uint32_t i = 0; i < d.reverse_postorder.size(); ++i) order[d.reverse_postorder[i]] = i;
  std::vector<std::vector<ClassIndex>> pred(n + 1);
  for (ClassIndex v : d.reverse_postorder)
    for (ClassIndex k : d.succ[v]) pred[k].push_back(v);

  d.idom.assign(n + 1, kNoClass);
  d.idom[n] = n;
  auto intersect = [&](ClassIndex a, ClassIndex b) {
    while (a != b) {
      while (order[a] > order[b]) a = d.idom[a];
      while (order[b] > order[a]) b = d.idom[b];
    }
    return a;
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = 1; i < d.reverse_postorder.size(); ++i) {
      ClassIndex v = d.reverse_postorder[i];
      ClassIndex idom = kNoClass;
      for (ClassIndex q : pred[v])
        if (d.idom[q] != kNoClass) idom = idom == kNoClass ? q : intersect(q, idom);
      if (d.idom[v] != idom) {
        d.idom[v] = idom;
        changed = true;
      }
    }
  }
  return d;
}

}  // namespace

std::vector<ProblemPart> split_at_separators(const ExtractionProblem& p, size_t min_part_nodes) {
  const auto n = static_cast<ClassIndex>(p.num_classes());
  const Dominators d = dominators(p);

  // The dominator tree, with entry and exit times so that ancestry is two comparisons.
  std::vector<std::vector<ClassIndex>> tree(n + 1);
  for (size_t i = 1; i < d.reverse_postorder.size(); ++i) {
    ClassIndex v = d.reverse_postorder[i];
    tree[d.idom[v]].push_back(v);
  }
  std::vector<uint32_t> enter(n + 1, 0), leave(n + 1, 0);
  std::vector<ClassIndex> tree_postorder;
  {
    uint32_t clock = 0;
    std::vector<std::pair<ClassIndex, size_t>> stack{{n, 0}};
    enter[n] = clock++;
    while (!stack.empty()) {
      auto& [v, next] = stack.back();
      if (next < tree[v].size()) {
        ClassIndex k = tree[v][next++];
        enter[k] = clock++;
        stack.push_back({k, 0});
      } else {
        leave[v] = clock++;
        tree_postorder.push_back(v);
        stack.pop_back();
      }
    }
  }
  auto is_ancestor = [&](ClassIndex a, ClassIndex b) {  // a dominates b (or is b)
    return enter[a] <= enter[b] && leave[b] <= leave[a];
  };

  // S is a separator when every edge out of its dominator subtree stays inside it. An edge
  // x -> y leaves the subtree of each dominator of x that does not dominate y.
  std::vector<char> separator(n + 1, 1);
  separator[n] = 0;
  for (ClassIndex x : d.reverse_postorder) {
    if (x == n) continue;
    for (ClassIndex y : d.succ[x])
      for (ClassIndex a = x; a != n && !is_ancestor(a, y); a = d.idom[a]) separator[a] = 0;
  }

  // Bottom-up: a separator becomes a part when what it holds besides its nested parts is large
  // enough; the virtual root's part is the rest.
  std::vector<size_t> own_nodes(n + 1, 0);
  std::vector<size_t> part_of(n + 1, SIZE_MAX);
  std::vector<ProblemPart> parts;
  auto collect = [&](ClassIndex top, ProblemPart* part) {
    std::vector<ClassIndex> stack{top};
    while (!stack.empty()) {
      ClassIndex v = stack.back();
      stack.pop_back();
      if (v != n) part->classes.push_back(v);
      if (v != top && part_of[v] != SIZE_MAX) {
        part->nested.push_back({v, part_of[v]});
        continue;
      }
      for (auto it = tree[v].rbegin(); it != tree[v].rend(); ++it) stack.push_back(*it);
    }
  };
  for (ClassIndex v : tree_postorder) {
    size_t own = v == n ? 0 : p.nodes(v).size();
    for (ClassIndex k : tree[v])
      if (part_of[k] == SIZE_MAX) own += own_nodes[k];
    own_nodes[v] = own;
    if (v == n || (separator[v] && own >= min_part_nodes)) {
      ProblemPart part;
      part.separator = v == n ? kNoClass : v;
      part.num_nodes = own;
      collect(v, &part);
      if (part.classes.size() > 1)
        std::sort(part.classes.begin() + (v == n ? 0 : 1), part.classes.end());
      part_of[v] = parts.size();
      parts.push_back(std::move(part));
    }
  }
  return parts;
}

NodeIndex free_node(const ExtractionProblem& p, ClassIndex c) {
  for (NodeIndex m : p.nodes(c))
    if (p.children(m).empty() && p.cost(m) == 0) return m;
  return kNoNode;
}

ExtractionProblem part_problem(const ExtractionProblem& p, const ProblemPart& part,
                               const std::vector<double>& nested_cost,
                               std::vector<NodeIndex>* node_of, std::vector<ClassIndex>* class_of) {
  ExtractionProblem out;
  std::unordered_map<ClassIndex, ClassIndex> local;
  *class_of = part.classes;
  for (size_t i = 0; i < part.classes.size(); ++i) {
    local[part.classes[i]] = out.add_class();
  }
  std::unordered_map<ClassIndex, double> leaf_cost;
  for (size_t k = 0; k < part.nested.size(); ++k)
    leaf_cost[part.nested[k].first] = nested_cost.at(k);
  node_of->clear();
  std::vector<ClassIndex> children;
  for (size_t i = 0; i < part.classes.size(); ++i) {
    const auto c = static_cast<ClassIndex>(i);
    if (auto it = leaf_cost.find(part.classes[i]); it != leaf_cost.end()) {
      out.add_node(c, it->second, {});
      node_of->push_back(kNoNode);
      continue;
    }
    for (NodeIndex m : p.nodes(part.classes[i])) {
      children.clear();
      for (ClassIndex k : p.children(m)) {
        auto it = local.find(k);
        if (it == local.end()) {
          // A free e-class, shared by the parts: a class of its own with its free e-node.
          NodeIndex free = free_node(p, k);
          if (free == kNoNode)
            throw Error("a part's e-node reads outside it", Error::Kind::Internal);
          it = local.emplace(k, out.add_class()).first;
          class_of->push_back(k);
          out.add_node(it->second, 0, {});
          node_of->push_back(free);
        }
        children.push_back(it->second);
      }
      out.add_node(c, p.cost(m), children);
      node_of->push_back(m);
    }
  }
  if (part.separator != kNoClass) {
    out.add_root(0);
  } else {
    for (ClassIndex r : p.roots()) {
      auto it = local.find(r);
      if (it == local.end()) {  // a free root
        it = local.emplace(r, out.add_class()).first;
        class_of->push_back(r);
        out.add_node(it->second, 0, {});
        node_of->push_back(free_node(p, r));
      }
      out.add_root(it->second);
    }
  }
  return out;
}

}  // namespace eqfuse::extract
