#include "extract/dag.h"

#include <chrono>
#include <cmath>

#include "extract/greedy.h"
#include "support/error.h"

namespace eqfuse::extract {
namespace {

// A full choice (every extractable e-class has an e-node) with reference counts of the part
// reachable from the roots, so that switching one e-class's e-node is priced by touching only
// the subterms that enter or leave the graph.
class LocalSearch {
 public:
  LocalSearch(const ExtractionProblem& problem, Choice choice)
      : p_(problem),
        choice_(std::move(choice)),
        refs_(problem.num_classes(), 0),
        seen_(problem.num_classes(), 0) {
    for (ClassIndex r : p_.roots()) total_ += add_ref(r);
  }

  const Choice& choice() const { return choice_; }
  bool in_graph(ClassIndex c) const { return refs_[c] > 0; }

  // Re-chooses the e-classes outside the graph greedily, pricing what is inside at 0, so that
  // a switch brings in the cheapest subterms given the current graph.
  void refill() {
    Choice fixed(p_.num_classes(), kNoNode);
    for (ClassIndex c = 0; c < p_.num_classes(); ++c)
      if (refs_[c] > 0) fixed[c] = choice_[c];
    TreeCosts t = tree_costs(p_, &fixed);
    for (ClassIndex c = 0; c < p_.num_classes(); ++c)
      if (refs_[c] == 0 && t.choice[c] != kNoNode) choice_[c] = t.choice[c];
  }

  // Tries e-node `b` for e-class `c` (in the graph); keeps it if the DAG cost drops by more
  // than rounding and no cycle forms. Returns whether it was kept.
  bool try_switch(ClassIndex c, NodeIndex b) {
    NodeIndex a = choice_[c];
    double delta = p_.cost(b) - p_.cost(a);
    // Add first, then remove: subterms shared by a and b never leave and re-enter.
    for (ClassIndex k : p_.children(b)) delta += add_ref(k);
    for (ClassIndex k : p_.children(a)) delta -= drop_ref(k);
    const double eps = 1e-12 * (1.0 + std::abs(total_));
    if (delta < -eps && !reaches(p_.children(b), c)) {
      choice_[c] = b;
      total_ += delta;
      return true;
    }
    for (ClassIndex k : p_.children(a)) add_ref(k);
    for (ClassIndex k : p_.children(b)) drop_ref(k);
    return false;
  }

 private:
  // Adds one use of e-class c; returns the cost that enters the graph.
  double add_ref(ClassIndex c) {
    double added = 0;
    stack_.assign(1, c);
    while (!stack_.empty()) {
      ClassIndex k = stack_.back();
      stack_.pop_back();
      if (refs_[k]++ > 0) continue;
      NodeIndex n = choice_[k];
      added += p_.cost(n);
      for (ClassIndex g : p_.children(n)) stack_.push_back(g);
    }
    return added;
  }
  // Removes one use of e-class c; returns the cost that leaves the graph.
  double drop_ref(ClassIndex c) {
    double removed = 0;
    stack_.assign(1, c);
    while (!stack_.empty()) {
      ClassIndex k = stack_.back();
      stack_.pop_back();
      if (--refs_[k] > 0) continue;
      NodeIndex n = choice_[k];
      removed += p_.cost(n);
      for (ClassIndex g : p_.children(n)) stack_.push_back(g);
    }
    return removed;
  }
  // Whether e-class `target` is reachable from `from` through the current choice.
  bool reaches(std::span<const ClassIndex> from, ClassIndex target) {
    ++stamp_;
    stack_.assign(from.begin(), from.end());
    while (!stack_.empty()) {
      ClassIndex k = stack_.back();
      stack_.pop_back();
      if (k == target) return true;
      if (seen_[k] == stamp_) continue;
      seen_[k] = stamp_;
      for (ClassIndex g : p_.children(choice_[k])) stack_.push_back(g);
    }
    return false;
  }

  const ExtractionProblem& p_;
  Choice choice_;
  std::vector<uint32_t> refs_;
  std::vector<uint32_t> seen_;
  uint32_t stamp_ = 0;
  std::vector<ClassIndex> stack_;
  double total_ = 0;
};

}  // namespace

ExtractionResult extract_dag(const ExtractionProblem& problem, const DagOptions& options) {
  using clock = std::chrono::steady_clock;
  auto start = clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(clock::now() - start).count(); };

  TreeCosts greedy = tree_costs(problem);
  for (ClassIndex r : problem.roots())
    if (greedy.choice[r] == kNoNode)
      fail("no finite term for a root e-class (every term is cyclic)");

  LocalSearch search(problem, std::move(greedy.choice));
  std::vector<char> extractable(problem.num_classes());
  for (ClassIndex c = 0; c < problem.num_classes(); ++c)
    extractable[c] = search.choice()[c] != kNoNode;

  bool improved = true;
  while (improved && elapsed() < options.time_limit_seconds) {
    improved = false;
    search.refill();
    for (ClassIndex c = 0; c < problem.num_classes() && elapsed() < options.time_limit_seconds;
         ++c) {
      if (!search.in_graph(c)) continue;
      for (NodeIndex b : problem.nodes(c)) {
        if (b == search.choice()[c]) continue;
        bool ok = true;
        for (ClassIndex k : problem.children(b))
          if (!extractable[k] || k == c) ok = false;
        if (ok && search.try_switch(c, b)) improved = true;
      }
    }
  }
  ExtractionResult result = make_result(problem, search.choice());
  result.seconds = elapsed();
  return result;
}

}  // namespace eqfuse::extract
