#include "extract/dag.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>

#include "extract/greedy.h"
#include "support/error.h"

namespace eqfuse::extract {
namespace {

// A full choice (every extractable e-class has an e-node) with reference counts of the part
// reachable from the roots, so that switching one e-class's e-node is priced by touching only
// the subterms that enter or leave the graph.
// What the searches of one extract_dag call may spend, shared by all its starts: the work
// limit counts the search's own steps (a walk's step, a question), so where it stops depends
// on the problem alone; the deadline is a safety net whose result depends on machine speed.
struct Budget {
  using clock = std::chrono::steady_clock;
  clock::time_point deadline;
  uint64_t work_limit = 0;
  uint64_t spent = 0;  // by the searches that have ended
  DagStop stop = DagStop::converged;
};

class LocalSearch {
 public:
  using clock = Budget::clock;

  LocalSearch(const ExtractionProblem& problem, Choice choice, Budget& budget)
      : p_(problem),
        budget_(budget),
        choice_(std::move(choice)),
        refs_(problem.num_classes(), 0),
        seen_(problem.num_classes(), 0),
        parent_begin_(problem.num_classes() + 1, 0) {
    for (ClassIndex r : p_.roots()) total_ += add_ref(r);
    for (NodeIndex n = 0; n < p_.num_nodes(); ++n)
      for (ClassIndex k : p_.children(n)) ++parent_begin_[k + 1];
    for (size_t c = 0; c < p_.num_classes(); ++c) parent_begin_[c + 1] += parent_begin_[c];
    parents_.resize(parent_begin_.back());
    std::vector<uint32_t> fill(parent_begin_.begin(), parent_begin_.end() - 1);
    for (NodeIndex n = 0; n < p_.num_nodes(); ++n)
      for (ClassIndex k : p_.children(n)) parents_[fill[k]++] = n;
  }
  ~LocalSearch() { budget_.spent += work_; }
  LocalSearch(const LocalSearch&) = delete;
  LocalSearch& operator=(const LocalSearch&) = delete;

  const Choice& choice() const { return choice_; }
  // Whether the budget is spent; once it is, it stays so. Asked before every move, not once
  // per e-class (one e-class may have thousands of candidates). The work limit is checked on
  // every question; the clock is read only when kWorkPerReading steps have gone by since the
  // last reading, so the search overruns its deadline by at most that much work and one move.
  bool out_of_budget() {
    if (out_of_budget_) return true;
    ++work_;
    if (budget_.spent + work_ >= budget_.work_limit) {
      budget_.stop = DagStop::work_limit;
      out_of_budget_ = true;
    } else if (work_ >= next_reading_) {
      next_reading_ = work_ + kWorkPerReading;
      if (clock::now() >= budget_.deadline) {
        budget_.stop = DagStop::time_limit;
        out_of_budget_ = true;
      }
    }
    return out_of_budget_;
  }
  bool in_graph(ClassIndex c) const { return refs_[c] > 0; }
  double total() const { return total_; }

  // Whether e-node b may replace the choice of its e-class: every child has a finite term.
  bool candidate(NodeIndex b) const {
    ClassIndex c = p_.node_class(b);
    if (b == choice_[c]) return false;
    for (ClassIndex k : p_.children(b))
      if (choice_[k] == kNoNode || k == c) return false;
    return true;
  }

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

  // Switches e-class c (in the graph) to e-node b if that forms no cycle and, when
  // `only_if_better`, lowers the DAG cost by more than rounding. Returns the change in DAG cost
  // when switched, nothing otherwise.
  std::optional<double> switch_node(ClassIndex c, NodeIndex b, bool only_if_better) {
    NodeIndex a = choice_[c];
    if (!only_if_better && reaches(p_.children(b), c)) return std::nullopt;
    double delta = p_.cost(b) - p_.cost(a);
    // Add first, then remove: subterms shared by a and b never leave and re-enter.
    for (ClassIndex k : p_.children(b)) delta += add_ref(k);
    for (ClassIndex k : p_.children(a)) delta -= drop_ref(k);
    if (!only_if_better || (delta < -epsilon() && !reaches(p_.children(b), c))) {
      choice_[c] = b;
      total_ += delta;
      return delta;
    }
    for (ClassIndex k : p_.children(a)) add_ref(k);
    for (ClassIndex k : p_.children(b)) drop_ref(k);
    return std::nullopt;
  }

  // A two-step move for what single switches cannot see: switch c to b even at a loss, then
  // let the e-classes that could use the subterms b brought in switch to them. Kept only if
  // the two steps together lower the DAG cost. Out of budget, it stops trying follow-up switches
  // (and keeps what it has only if that is already better).
  bool kick(ClassIndex c, NodeIndex b) {
    NodeIndex a = choice_[c];
    entered_.clear();
    recording_ = true;
    std::optional<double> first = switch_node(c, b, false);
    recording_ = false;
    if (!first) return false;
    double delta = *first;
    std::vector<std::pair<ClassIndex, NodeIndex>> undo{{c, a}};
    std::vector<ClassIndex> fresh(entered_);
    fresh.insert(fresh.end(), p_.children(b).begin(), p_.children(b).end());
    for (ClassIndex e : fresh) {
      if (out_of_budget_) break;
      for (uint32_t i = parent_begin_[e]; i < parent_begin_[e + 1]; ++i) {
        NodeIndex q = parents_[i];
        ClassIndex z = p_.node_class(q);
        if (z == c || !in_graph(z) || !candidate(q)) continue;
        if (out_of_budget()) break;
        NodeIndex old = choice_[z];
        if (auto d = switch_node(z, q, true)) {
          delta += *d;
          undo.push_back({z, old});
        }
      }
    }
    if (delta < -epsilon()) return true;
    for (auto it = undo.rbegin(); it != undo.rend(); ++it)
      switch_node(it->first, it->second, false);
    return false;
  }

 private:
  double epsilon() const { return 1e-12 * (1.0 + std::abs(total_)); }

  // Adds one use of e-class c; returns the cost that enters the graph.
  double add_ref(ClassIndex c) {
    double added = 0;
    stack_.assign(1, c);
    while (!stack_.empty()) {
      ClassIndex k = stack_.back();
      stack_.pop_back();
      ++work_;
      if (refs_[k]++ > 0) continue;
      if (recording_) entered_.push_back(k);
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
      ++work_;
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
      ++work_;
      if (k == target) return true;
      if (seen_[k] == stamp_) continue;
      seen_[k] = stamp_;
      for (ClassIndex g : p_.children(choice_[k])) stack_.push_back(g);
    }
    return false;
  }

  const ExtractionProblem& p_;
  static constexpr uint64_t kWorkPerReading = 1024;  // about 10 us
  Budget& budget_;
  bool out_of_budget_ = false;
  uint64_t work_ = 0, next_reading_ = 0;
  Choice choice_;
  std::vector<uint32_t> refs_;
  std::vector<uint32_t> seen_;
  uint32_t stamp_ = 0;
  std::vector<ClassIndex> stack_;
  double total_ = 0;
  std::vector<uint32_t> parent_begin_;  // parent e-nodes of each e-class (CSR)
  std::vector<NodeIndex> parents_;
  bool recording_ = false;
  std::vector<ClassIndex> entered_;  // e-classes that entered the graph while recording
};

}  // namespace

namespace {

// The local search from one full start: single switches to a local optimum, then two-step
// kicks; repeat while either helps, and stop when the budget is spent, between any two moves.
Choice descend(const ExtractionProblem& problem, Choice start, Budget& budget) {
  LocalSearch search(problem, std::move(start), budget);
  for (bool improved = true; improved && !search.out_of_budget();) {
    improved = false;
    for (bool descending = true; descending && !search.out_of_budget();) {
      descending = false;
      search.refill();
      for (ClassIndex c = 0; c < problem.num_classes() && !search.out_of_budget(); ++c) {
        if (!search.in_graph(c)) continue;
        for (NodeIndex b : problem.nodes(c)) {
          if (!search.candidate(b)) continue;
          if (search.out_of_budget()) break;
          if (search.switch_node(c, b, true)) descending = true;
        }
      }
    }
    if (search.out_of_budget()) break;
    search.refill();
    for (ClassIndex c = 0; c < problem.num_classes() && !search.out_of_budget(); ++c) {
      if (!search.in_graph(c)) continue;
      for (NodeIndex b : problem.nodes(c)) {
        if (!search.in_graph(c) || !search.candidate(b)) continue;
        if (search.out_of_budget()) break;
        if (search.kick(c, b)) improved = true;
      }
    }
  }
  return search.choice();
}

}  // namespace

const char* dag_stop_name(DagStop stop) {
  switch (stop) {
    case DagStop::converged:
      return "converged";
    case DagStop::work_limit:
      return "work limit";
    case DagStop::time_limit:
      return "time limit";
  }
  return "?";
}

ExtractionResult extract_dag(const ExtractionProblem& problem, const DagOptions& options) {
  using clock = LocalSearch::clock;
  auto start = clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(clock::now() - start).count(); };
  require_non_negative_costs(problem, "dag");

  TreeCosts greedy = tree_costs(problem);
  for (ClassIndex r : problem.roots())
    if (greedy.choice[r] == kNoNode)
      fail("no finite term for a root e-class (every term is cyclic)");

  Budget budget;
  // NaN or negative: no time at all.
  const double seconds =
      options.time_limit_seconds >= 0 ? std::min(options.time_limit_seconds, 1e6) : 0;
  budget.deadline =
      start + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(seconds));
  budget.work_limit = options.work_limit;
  Choice best = descend(problem, greedy.choice, budget);
  double best_cost = dag_cost(problem, best);
  // The caller's starts, each completed with the greedy choice where it has none; a start whose
  // reachable part is not a valid acyclic choice is skipped. Past the budget a start is still
  // priced, just not improved. The first of equal costs is kept.
  for (const Choice& hint : options.starts) {
    Choice from = greedy.choice;
    for (size_t c = 0; c < hint.size() && c < from.size(); ++c)
      if (hint[c] != kNoNode) from[c] = hint[c];
    if (!is_valid_choice(problem, from)) continue;
    Choice found = descend(problem, std::move(from), budget);
    double cost = dag_cost(problem, found);
    if (cost < best_cost * (1 - 1e-12)) {
      best = std::move(found);
      best_cost = cost;
    }
  }
  ExtractionResult result = make_result(problem, best);
  result.seconds = elapsed();
  result.stop_reason = dag_stop_name(budget.stop);
  return result;
}

}  // namespace eqfuse::extract
