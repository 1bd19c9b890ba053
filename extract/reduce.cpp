#include "extract/reduce.h"

#include <algorithm>
#include <numeric>

#include "extract/scc.h"
#include "support/error.h"

namespace eqfuse::extract {
namespace {
constexpr ClassIndex kNoClass = std::numeric_limits<ClassIndex>::max();

// Parent e-node occurrences of each e-class among the usable e-nodes (CSR).
struct Parents {
  std::vector<uint32_t> begin;
  std::vector<NodeIndex> node;
  Parents(const ExtractionProblem& p, const std::vector<char>& usable)
      : begin(p.num_classes() + 1, 0) {
    for (NodeIndex n = 0; n < p.num_nodes(); ++n)
      if (usable[n])
        for (ClassIndex k : p.children(n)) ++begin[k + 1];
    for (size_t c = 0; c < p.num_classes(); ++c) begin[c + 1] += begin[c];
    node.resize(begin.back());
    std::vector<uint32_t> fill(begin.begin(), begin.end() - 1);
    for (NodeIndex n = 0; n < p.num_nodes(); ++n)
      if (usable[n])
        for (ClassIndex k : p.children(n)) node[fill[k]++] = n;
  }
};

// Drops usable e-nodes with a child e-class that has no term made of usable e-nodes.
bool drop_dead_children(const ExtractionProblem& p, std::vector<char>* usable) {
  const Parents parents(p, *usable);
  std::vector<uint32_t> pending(p.num_nodes(), 0);
  std::vector<char> live(p.num_classes(), 0);
  std::vector<ClassIndex> ready;
  for (NodeIndex n = 0; n < p.num_nodes(); ++n) {
    if (!(*usable)[n]) continue;
    pending[n] = static_cast<uint32_t>(p.children(n).size());
    if (pending[n] == 0 && !live[p.node_class(n)]) {
      live[p.node_class(n)] = 1;
      ready.push_back(p.node_class(n));
    }
  }
  while (!ready.empty()) {
    ClassIndex c = ready.back();
    ready.pop_back();
    for (uint32_t i = parents.begin[c]; i < parents.begin[c + 1]; ++i) {
      NodeIndex n = parents.node[i];
      if (--pending[n] == 0 && !live[p.node_class(n)]) {
        live[p.node_class(n)] = 1;
        ready.push_back(p.node_class(n));
      }
    }
  }
  bool changed = false;
  for (NodeIndex n = 0; n < p.num_nodes(); ++n)
    if ((*usable)[n] && pending[n] != 0) {
      (*usable)[n] = 0;
      changed = true;
    }
  return changed;
}

// Drops e-nodes of an e-class c with a child e-class that has no term avoiding c: an acyclic
// choice never uses them, but a relaxation without acyclicity would close cheap cycles through
// them. Only children in c's strongly connected component can need c. A pass over a component
// costs its size times its e-node entries; components beyond `*budget` are left as they are.
bool drop_cycle_only_nodes(const ExtractionProblem& p, std::vector<char>* usable, double* budget) {
  const size_t num_classes = p.num_classes();
  std::vector<std::vector<ClassIndex>> edges(num_classes);
  for (NodeIndex n = 0; n < p.num_nodes(); ++n)
    if ((*usable)[n])
      for (ClassIndex k : p.children(n)) edges[p.node_class(n)].push_back(k);
  uint32_t num_components = 0;
  const std::vector<uint32_t> comp = strongly_connected_components(edges, &num_components);
  std::vector<std::vector<ClassIndex>> members(num_components);
  for (ClassIndex c = 0; c < num_classes; ++c) members[comp[c]].push_back(c);
  const Parents parents(p, *usable);
  std::vector<uint32_t> pending(p.num_nodes(), 0);
  std::vector<char> live(num_classes, 0);
  std::vector<ClassIndex> ready;
  bool changed = false;
  for (const auto& scc : members) {
    if (scc.size() < 2) continue;
    double work = 0;
    for (ClassIndex c : scc)
      for (NodeIndex n : p.nodes(c)) work += 1 + static_cast<double>(p.children(n).size());
    work *= static_cast<double>(scc.size());
    if (work > *budget) continue;
    *budget -= work;
    const uint32_t id = comp[scc.front()];
    for (ClassIndex removed : scc) {
      // Liveness inside the component with `removed` taken out; outside it, all is live.
      ready.clear();
      for (ClassIndex c : scc) {
        live[c] = 0;
        if (c == removed) continue;
        for (NodeIndex n : p.nodes(c)) {
          if (!(*usable)[n]) continue;
          uint32_t inside = 0;
          for (ClassIndex k : p.children(n)) inside += comp[k] == id;
          pending[n] = inside;
          if (inside == 0 && !live[c]) {
            live[c] = 1;
            ready.push_back(c);
          }
        }
      }
      while (!ready.empty()) {
        ClassIndex c = ready.back();
        ready.pop_back();
        for (uint32_t i = parents.begin[c]; i < parents.begin[c + 1]; ++i) {
          NodeIndex n = parents.node[i];
          ClassIndex q = p.node_class(n);
          if (comp[q] != id || q == removed) continue;
          if (--pending[n] == 0 && !live[q]) {
            live[q] = 1;
            ready.push_back(q);
          }
        }
      }
      for (NodeIndex n : p.nodes(removed)) {
        if (!(*usable)[n]) continue;
        for (ClassIndex k : p.children(n))
          if (k == removed || (comp[k] == id && !live[k])) {
            (*usable)[n] = 0;
            changed = true;
            break;
          }
      }
    }
  }
  return changed;
}

std::vector<char> usable_nodes(const ExtractionProblem& p) {
  std::vector<char> usable(p.num_nodes(), 1);
  for (NodeIndex n = 0; n < p.num_nodes(); ++n)
    for (ClassIndex k : p.children(n))
      if (k == p.node_class(n)) usable[n] = 0;
  drop_dead_children(p, &usable);
  double budget = 3e7;  // about a second of work
  while (drop_cycle_only_nodes(p, &usable, &budget)) drop_dead_children(p, &usable);
  return usable;
}

}  // namespace

ReducedProblem reduce_problem(const ExtractionProblem& problem) {
  const size_t num_classes = problem.num_classes(), num_nodes = problem.num_nodes();
  ReducedProblem out;
  out.reduced_node.assign(num_nodes, kNoNode);
  out.forced_node.assign(num_classes, kNoNode);
  out.dominated_by.assign(num_nodes, kNoNode);

  const std::vector<char> usable = usable_nodes(problem);
  std::vector<uint32_t> usable_count(num_classes, 0);
  for (NodeIndex n = 0; n < num_nodes; ++n) usable_count[problem.node_class(n)] += usable[n];
  std::vector<char> live(num_classes, 0);
  for (NodeIndex n = 0; n < num_nodes; ++n)
    if (usable[n]) live[problem.node_class(n)] = 1;
  auto only_node = [&](ClassIndex c) {
    for (NodeIndex n : problem.nodes(c))
      if (usable[n]) return n;
    return kNoNode;
  };

  // Folded e-classes: one usable e-node, of cost 0. Using one costs nothing beyond its
  // children, so a parent may as well point at those (recursively, at the first e-classes that
  // are not folded): its `expansion`. Folded e-classes cannot form a cycle among themselves:
  // none of them would have a finite term. Paths, hence cycles, between the other e-classes
  // are the same before and after.
  for (ClassIndex c = 0; c < num_classes; ++c)
    if (usable_count[c] == 1 && problem.cost(only_node(c)) == 0) out.forced_node[c] = only_node(c);
  auto is_folded = [&](ClassIndex c) { return out.forced_node[c] != kNoNode; };
  std::vector<std::vector<ClassIndex>> expansion(num_classes);
  {
    std::vector<char> done(num_classes, 0);
    std::vector<std::pair<ClassIndex, bool>> stack;  // (e-class, children pushed)
    for (ClassIndex c = 0; c < num_classes; ++c) {
      if (!is_folded(c) || done[c]) continue;
      stack.push_back({c, false});
      while (!stack.empty()) {
        auto [k, expanded] = stack.back();
        if (done[k]) {
          stack.pop_back();
          continue;
        }
        auto children = problem.children(out.forced_node[k]);
        if (!expanded) {
          stack.back().second = true;
          for (ClassIndex g : children)
            if (is_folded(g) && !done[g]) stack.push_back({g, false});
          continue;
        }
        stack.pop_back();
        auto& e = expansion[k];
        for (ClassIndex g : children) {
          if (is_folded(g))
            e.insert(e.end(), expansion[g].begin(), expansion[g].end());
          else
            e.push_back(g);
        }
        std::sort(e.begin(), e.end());
        e.erase(std::unique(e.begin(), e.end()), e.end());
        done[k] = 1;
      }
    }
  }

  // Each usable e-node's children with folded ones expanded, sorted and deduplicated; an
  // e-node that then needs its own e-class is on a cycle and dropped.
  std::vector<std::vector<ClassIndex>> kids(num_nodes);
  std::vector<char> acyclic(num_nodes, 0);
  for (NodeIndex n = 0; n < num_nodes; ++n) {
    if (!usable[n] || is_folded(problem.node_class(n))) continue;
    for (ClassIndex k : problem.children(n)) {
      if (is_folded(k))
        kids[n].insert(kids[n].end(), expansion[k].begin(), expansion[k].end());
      else
        kids[n].push_back(k);
    }
    std::sort(kids[n].begin(), kids[n].end());
    kids[n].erase(std::unique(kids[n].begin(), kids[n].end()), kids[n].end());
    acyclic[n] = !std::binary_search(kids[n].begin(), kids[n].end(), problem.node_class(n));
  }

  // Dominance inside each e-class: visiting e-nodes cheapest first (then fewest children), one
  // is dropped when a kept one needs a subset of its children. Only with non-negative costs:
  // with negative ones the children that switching leaves out may have been worth having.
  const bool dominance = problem.min_cost() >= 0;
  std::vector<char> kept(num_nodes, 0);
  std::vector<NodeIndex> order, kept_here;
  for (ClassIndex c = 0; c < num_classes; ++c) {
    if (is_folded(c)) continue;
    order.clear();
    for (NodeIndex n : problem.nodes(c))
      if (acyclic[n]) order.push_back(n);
    std::stable_sort(order.begin(), order.end(), [&](NodeIndex a, NodeIndex b) {
      if (problem.cost(a) != problem.cost(b)) return problem.cost(a) < problem.cost(b);
      return kids[a].size() < kids[b].size();
    });
    kept_here.clear();
    for (NodeIndex a : order) {
      if (dominance)
        for (NodeIndex b : kept_here)
          if (std::includes(kids[a].begin(), kids[a].end(), kids[b].begin(), kids[b].end())) {
            out.dominated_by[a] = b;
            break;
          }
      if (out.dominated_by[a] == kNoNode) {
        kept[a] = 1;
        kept_here.push_back(a);
      }
    }
  }

  // Reachable from the roots (folded ones expanded) through kept e-nodes.
  std::vector<ClassIndex> reduced_class(num_classes, kNoClass);
  std::vector<ClassIndex> todo;
  auto reach = [&](ClassIndex c) {
    if (reduced_class[c] != kNoClass) return;
    reduced_class[c] = out.problem.add_class();
    out.original_class.push_back(c);
    todo.push_back(c);
  };
  std::vector<ClassIndex> roots;
  for (ClassIndex r : problem.roots()) {
    if (!live[r]) fail("no finite term for a root e-class");
    if (is_folded(r))
      roots.insert(roots.end(), expansion[r].begin(), expansion[r].end());
    else
      roots.push_back(r);
  }
  std::sort(roots.begin(), roots.end());
  roots.erase(std::unique(roots.begin(), roots.end()), roots.end());
  for (ClassIndex r : roots) reach(r);
  while (!todo.empty()) {
    ClassIndex c = todo.back();
    todo.pop_back();
    for (NodeIndex n : problem.nodes(c))
      if (kept[n])
        for (ClassIndex k : kids[n]) reach(k);
  }
  std::vector<ClassIndex> children;
  for (ClassIndex rc = 0; rc < out.original_class.size(); ++rc) {
    for (NodeIndex n : problem.nodes(out.original_class[rc])) {
      if (!kept[n]) continue;
      children.clear();
      for (ClassIndex k : kids[n]) children.push_back(reduced_class[k]);
      out.reduced_node[n] = out.problem.add_node(rc, problem.cost(n), children);
      out.original_node.push_back(n);
    }
  }
  for (ClassIndex r : roots) out.problem.add_root(reduced_class[r]);
  return out;
}

Choice ReducedProblem::reduce(const ExtractionProblem& original, const Choice& choice) const {
  auto order = chosen_classes_bottom_up(original, choice);
  if (!order) fail("reduce: not a valid acyclic choice");
  Choice reduced(problem.num_classes(), kNoNode);
  std::vector<ClassIndex> reduced_class(original.num_classes(), kNoClass);
  for (ClassIndex rc = 0; rc < original_class.size(); ++rc) reduced_class[original_class[rc]] = rc;
  for (ClassIndex c : *order) {
    if (reduced_class[c] == kNoClass) continue;  // folded, or unreachable in the reduced problem
    NodeIndex n = choice[c];
    if (reduced_node[n] == kNoNode) n = dominated_by[n];
    if (n == kNoNode || reduced_node[n] == kNoNode)
      fail("reduce: the choice uses a dropped e-node");
    reduced[reduced_class[c]] = reduced_node[n];
  }
  return reduced;
}

Choice ReducedProblem::expand(const ExtractionProblem& original, const Choice& reduced) const {
  Choice choice(original.num_classes(), kNoNode);
  for (ClassIndex c = 0; c < original.num_classes(); ++c) choice[c] = forced_node[c];
  for (ClassIndex rc = 0; rc < reduced.size(); ++rc)
    if (reduced[rc] != kNoNode) choice[original_class[rc]] = original_node[reduced[rc]];
  return choice;
}

}  // namespace eqfuse::extract
