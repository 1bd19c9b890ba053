#include "extract/ilp.h"

#include <CbcModel.hpp>
#include <CbcSolver.hpp>
#include <CoinPackedMatrix.hpp>
#include <OsiClpSolverInterface.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <optional>
#include <queue>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>

#include "extract/best_first.h"
#include "extract/dag.h"
#include "extract/decompose.h"
#include "extract/isolated.h"
#include "extract/mandatory.h"
#include "extract/reduce.h"
#include "extract/scc.h"
#include "support/error.h"

namespace eqfuse::extract {
namespace {

using clock = std::chrono::steady_clock;

// Reports from the solver process (extract/isolated.h), each a tag and its payload.
constexpr char kBoundTag = 'B';     // double: a proven lower bound on the DAG cost
constexpr char kSolutionTag = 'S';  // uint32 count, then the chosen reduced e-nodes (acyclic)
constexpr char kProvenTag = 'P';    // the last solution sent (or the warm start) is optimal

template <typename T>
void put(std::string& out, T value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof value);
}
template <typename T>
bool get(std::string_view& in, T* value) {
  if (in.size() < sizeof(T)) return false;
  std::memcpy(value, in.data(), sizeof(T));
  in.remove_prefix(sizeof(T));
  return true;
}

// Splits a child's reports into messages, calling `on(tag, payload)` for each. Returns the
// length of the complete messages read (a truncated last one waits for more), or nullopt when
// `on` returned false or a tag is unknown: the rest of that child's reports is not to be trusted.
std::optional<size_t> for_each_report(std::string_view in,
                                      const std::function<bool(char, std::string_view)>& on) {
  size_t used = 0;
  while (used < in.size()) {
    const char tag = in[used];
    std::string_view rest = in.substr(used + 1);
    size_t length = 0;
    if (tag == kBoundTag) {
      length = sizeof(double);
    } else if (tag == kSolutionTag) {
      uint32_t count;
      std::string_view head = rest;
      if (!get(head, &count)) break;
      length = sizeof count + size_t{count} * sizeof(uint32_t);
    } else if (tag != kProvenTag) {
      return std::nullopt;
    }
    if (rest.size() < length) break;
    if (!on(tag, rest.substr(0, length))) return std::nullopt;
    used += 1 + length;
  }
  return used;
}

// CBC's absolute optimality gap on the scaled objective (objective_scale): a proof means no
// solution is cheaper by more than this.
constexpr double kAllowableGap = 1e-7;

// CBC's tolerances are absolute: the objective is scaled so that a choice's e-nodes, their
// costs taken as magnitudes, sum to 1000 (for non-negative costs: the choice costs 1000).
double objective_scale(const ExtractionProblem& p, const Choice& choice) {
  double sum = 0, largest = 0;
  if (auto order = chosen_classes_bottom_up(p, choice))
    for (ClassIndex c : *order) sum += std::abs(p.cost(choice[c]));
  for (NodeIndex n = 0; n < p.num_nodes(); ++n) largest = std::max(largest, std::abs(p.cost(n)));
  return sum > 0 ? 1000 / sum : largest > 0 ? 1000 / largest : 1;
}

// Rows in compressed form (CoinPackedMatrix::appendRow reallocates on every call).
struct Rows {
  std::vector<CoinBigIndex> start;
  std::vector<int> index;
  std::vector<double> value, lower, upper;

  void add_entry(int column, double coefficient) {
    index.push_back(column);
    value.push_back(coefficient);
  }
  void begin_row() { start.push_back(static_cast<CoinBigIndex>(index.size())); }
  void end_row(double lo, double hi) {
    lower.push_back(lo);
    upper.push_back(hi);
  }
  int size() const { return static_cast<int>(lower.size()); }
};

// The relaxation without acyclicity over the reduced problem; one column per e-node.
Rows base_rows(const ExtractionProblem& p) {
  Rows rows;
  std::vector<char> is_root(p.num_classes(), 0);
  for (ClassIndex r : p.roots()) is_root[r] = 1;
  for (ClassIndex c = 0; c < p.num_classes(); ++c) {
    rows.begin_row();
    for (NodeIndex n : p.nodes(c)) rows.add_entry(static_cast<int>(n), 1);
    rows.end_row(is_root[c] ? 1 : 0, 1);
  }
  for (NodeIndex n = 0; n < p.num_nodes(); ++n)
    for (ClassIndex k : p.children(n)) {  // x_n <= sum of x over e-class k
      rows.begin_row();
      rows.add_entry(static_cast<int>(n), 1);
      for (NodeIndex m : p.nodes(k)) rows.add_entry(static_cast<int>(m), -1);
      rows.end_row(-COIN_DBL_MAX, 0);
    }
  for (const MandatoryPair& pair : mandatory_pairs(p)) {  // sum over `by` <= sum over `needed`
    rows.begin_row();
    for (NodeIndex n : p.nodes(pair.by)) rows.add_entry(static_cast<int>(n), 1);
    for (NodeIndex n : p.nodes(pair.needed)) rows.add_entry(static_cast<int>(n), -1);
    rows.end_row(-COIN_DBL_MAX, 0);
  }
  if (p.min_cost() < 0) {
    // With a negative cost, choosing an e-class that nothing needs would pay, and the objective
    // would count e-nodes that the DAG cost does not. So a non-root e-class is chosen only when
    // a chosen e-node of another e-class needs it: sum over c <= sum of x over c's parents.
    // Every choice's reachable part satisfies it; a solution that does and has no cycle at all
    // (choice_cycles looks at every chosen e-class then) is a choice whose DAG cost is the
    // objective.
    std::vector<std::vector<NodeIndex>> parents(p.num_classes());
    for (NodeIndex n = 0; n < p.num_nodes(); ++n)
      for (ClassIndex k : p.children(n))
        if (k != p.node_class(n) && (parents[k].empty() || parents[k].back() != n))
          parents[k].push_back(n);
    for (ClassIndex c = 0; c < p.num_classes(); ++c) {
      if (is_root[c]) continue;
      rows.begin_row();
      for (NodeIndex n : p.nodes(c)) rows.add_entry(static_cast<int>(n), 1);
      for (NodeIndex q : parents[c]) rows.add_entry(static_cast<int>(q), -1);
      rows.end_row(-COIN_DBL_MAX, 0);
    }
  }
  return rows;
}

// The cycles of a choice (one e-node per e-class, kNoNode where unchosen) in the part reachable
// from the roots, or with negative costs in all of it (base_rows): for each e-class of each
// cyclic component, a shortest cycle through it. Each cycle lists its e-classes in order,
// smallest first; empty when the choice is acyclic.
std::vector<std::vector<ClassIndex>> choice_cycles(const ExtractionProblem& p,
                                                   const Choice& choice) {
  const size_t num_classes = p.num_classes();
  std::vector<std::vector<ClassIndex>> edges(num_classes);
  std::vector<char> seen(num_classes, 0);
  std::vector<ClassIndex> todo;
  auto visit = [&](ClassIndex c) {
    if (!seen[c]) {
      seen[c] = 1;
      todo.push_back(c);
    }
  };
  for (ClassIndex r : p.roots()) visit(r);
  if (p.min_cost() < 0)
    for (ClassIndex c = 0; c < num_classes; ++c)
      if (choice[c] != kNoNode) visit(c);
  while (!todo.empty()) {
    ClassIndex c = todo.back();
    todo.pop_back();
    if (choice[c] == kNoNode) continue;  // cannot happen in a solution of the relaxation
    for (ClassIndex k : p.children(choice[c])) {
      edges[c].push_back(k);
      if (!seen[k]) {
        seen[k] = 1;
        todo.push_back(k);
      }
    }
  }
  uint32_t num_components = 0;
  std::vector<uint32_t> comp = strongly_connected_components(edges, &num_components);
  std::vector<uint32_t> size(num_components, 0);
  for (ClassIndex c = 0; c < num_classes; ++c) ++size[comp[c]];
  std::set<std::vector<ClassIndex>> cycles;
  std::vector<ClassIndex> parent(num_classes, 0), queue;
  std::vector<uint32_t> visited(num_classes, 0);
  uint32_t stamp = 0;
  for (ClassIndex s = 0; s < num_classes; ++s) {
    if (size[comp[s]] < 2) continue;
    // Breadth-first from s inside its component until an edge returns to s.
    ++stamp;
    queue.assign(1, s);
    visited[s] = stamp;
    bool closed = false;
    ClassIndex last = s;
    for (size_t head = 0; head < queue.size() && !closed; ++head) {
      ClassIndex v = queue[head];
      for (ClassIndex w : edges[v]) {
        if (comp[w] != comp[s]) continue;
        if (w == s) {
          closed = true;
          last = v;
          break;
        }
        if (visited[w] == stamp) continue;
        visited[w] = stamp;
        parent[w] = v;
        queue.push_back(w);
      }
    }
    if (!closed) continue;
    std::vector<ClassIndex> cycle;
    for (ClassIndex v = last; v != s; v = parent[v]) cycle.push_back(v);
    cycle.push_back(s);
    std::reverse(cycle.begin(), cycle.end());  // s, ..., last; then last -> s closes it
    std::rotate(cycle.begin(), std::min_element(cycle.begin(), cycle.end()), cycle.end());
    cycles.insert(std::move(cycle));
  }
  return {cycles.begin(), cycles.end()};
}

// The cut that forbids every cycle inside a set S of e-classes: in an acyclic choice some
// e-class of S is unchosen or has its e-node's children all outside S (following children
// inside S would otherwise never end), so
//   sum over e-classes c of S of x over c's e-nodes with a child in S  <=  |S| - 1.
// For S the e-classes of one cycle it is stronger than forbidding that cycle's edges alone.
void add_set_cut(const ExtractionProblem& p, std::vector<ClassIndex> set, std::vector<char>* in_set,
                 Rows* rows) {
  for (ClassIndex c : set) (*in_set)[c] = 1;
  rows->begin_row();
  for (ClassIndex c : set)
    for (NodeIndex n : p.nodes(c))
      for (ClassIndex k : p.children(n))
        if ((*in_set)[k]) {
          rows->add_entry(static_cast<int>(n), 1);
          break;
        }
  rows->end_row(-COIN_DBL_MAX, static_cast<double>(set.size()) - 1);
  for (ClassIndex c : set) (*in_set)[c] = 0;
}

// Cuts for every cycle of two e-classes (each has an e-node that reads the other: x and
// Neg(Neg(x)), a Transpose and its inverse), added before the first solve. Without them each
// solve on resnet18's e-graph finds a few such cycles, and a stage took eight solves.
void add_two_class_cycle_cuts(const ExtractionProblem& p, std::vector<char>* in_set, Rows* rows) {
  std::vector<std::pair<ClassIndex, ClassIndex>> edges;
  for (NodeIndex n = 0; n < p.num_nodes(); ++n)
    for (ClassIndex k : p.children(n))
      if (k != p.node_class(n)) edges.push_back({p.node_class(n), k});
  std::sort(edges.begin(), edges.end());
  edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
  for (auto [a, b] : edges)
    if (a < b && std::binary_search(edges.begin(), edges.end(), std::pair{b, a}))
      add_set_cut(p, {a, b}, in_set, rows);
}

struct SolveResult {
  bool proven = false;
  double bound = -COIN_DBL_MAX;  // CBC's best possible objective (scaled)
  Choice choice;                 // empty when CBC has no solution
};

// One CBC solve of the relaxation with the given rows, from an acyclic start.
// The rows over one column per e-node, each in [0, 1].
void load(const ExtractionProblem& p, const Rows& rows, const std::vector<double>& objective,
          OsiClpSolverInterface* solver) {
  const int num_columns = static_cast<int>(p.num_nodes());
  std::vector<CoinBigIndex> starts(rows.start);
  starts.push_back(static_cast<CoinBigIndex>(rows.index.size()));
  std::vector<int> lengths(rows.size());
  for (int r = 0; r < rows.size(); ++r) lengths[r] = static_cast<int>(starts[r + 1] - starts[r]);
  CoinPackedMatrix matrix(false, num_columns, rows.size(),
                          static_cast<CoinBigIndex>(rows.index.size()), rows.value.data(),
                          rows.index.data(), starts.data(), lengths.data());
  std::vector<double> col_lower(num_columns, 0), col_upper(num_columns, 1);
  solver->messageHandler()->setLogLevel(0);
  solver->loadProblem(matrix, col_lower.data(), col_upper.data(), objective.data(),
                      rows.lower.data(), rows.upper.data());
}

SolveResult solve_relaxation(const ExtractionProblem& p, const Rows& rows,
                             const std::vector<double>& objective,
                             const std::vector<double>& start_values, double seconds,
                             bool use_start = true) {
  const int num_columns = static_cast<int>(p.num_nodes());
  OsiClpSolverInterface solver;
  load(p, rows, objective, &solver);
  std::vector<std::string> names(num_columns);
  std::vector<const char*> name_pointers(num_columns);
  for (int col = 0; col < num_columns; ++col) {
    names[col] = "x" + std::to_string(col);
    name_pointers[col] = names[col].c_str();
    solver.setColName(col, names[col]);
    solver.setInteger(col);
  }

  CbcModel model(solver);
  CbcMain0(model);
  model.setLogLevel(0);
  model.messageHandler()->setLogLevel(0);
  if (use_start) model.setMIPStart(num_columns, name_pointers.data(), start_values.data());
  std::string limit = std::to_string(std::max(0.1, seconds));
  // -allowableGap is kAllowableGap.
  const char* argv[] = {"eqfuse", "-log",        "0",         "-slog", "0",
                        "-sec",   limit.c_str(), "-ratioGap", "0",     "-allowableGap",
                        "1e-7",   "-solve",      "-quit"};
  CbcMain1(static_cast<int>(std::size(argv)), argv, model);

  SolveResult out;
  out.proven = model.isProvenOptimal();
  out.bound = model.getBestPossibleObjValue();
  if (const double* solution = model.bestSolution()) {
    out.choice.assign(p.num_classes(), kNoNode);
    for (int col = 0; col < static_cast<int>(p.num_nodes()); ++col)
      if (solution[col] > 0.5) out.choice[p.node_class(static_cast<NodeIndex>(col))] = col;
  }
  return out;
}

// The columns of a choice: 1 for its e-nodes.
std::vector<double> start_columns(const ExtractionProblem& p, const Choice& choice) {
  std::vector<double> values(p.num_nodes(), 0);
  for (NodeIndex n : choice)
    if (n != kNoNode) values[n] = 1;
  return values;
}

// A lower bound that no cycle can fool (for non-negative costs; negative ones below): an
// acyclic term costs at least its root e-node plus the costliest term of one child (that
// child's term is part of it, and cannot contain the root e-node), so the cheapest such
// "critical path" of each root bounds the DAG cost from below. Computed for all e-classes at
// once, cheapest first (Knuth's generalization of Dijkstra: an e-node's value is known once all
// its children's are).
double critical_path_bound(const ExtractionProblem& p) {
  const size_t num_classes = p.num_classes();
  if (p.min_cost() < 0) {
    // The path argument needs the rest of a term to cost at least 0. With negative costs, a
    // choice takes at most one e-node per e-class: the cheapest of each, where negative.
    double bound = 0;
    for (ClassIndex c = 0; c < num_classes; ++c) {
      double least = 0;
      for (NodeIndex n : p.nodes(c)) least = std::min(least, p.cost(n));
      bound += least;
    }
    return bound;
  }
  std::vector<std::vector<NodeIndex>> parents(num_classes);
  std::vector<uint32_t> pending(p.num_nodes());
  std::vector<double> longest_child(p.num_nodes(), 0);
  using Entry = std::pair<double, ClassIndex>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> queue;
  for (NodeIndex n = 0; n < p.num_nodes(); ++n) {
    pending[n] = static_cast<uint32_t>(p.children(n).size());
    for (ClassIndex k : p.children(n)) parents[k].push_back(n);
    if (pending[n] == 0) queue.push({p.cost(n), p.node_class(n)});
  }
  std::vector<double> value(num_classes, -1);
  while (!queue.empty()) {
    auto [v, c] = queue.top();
    queue.pop();
    if (value[c] >= 0) continue;
    value[c] = v;
    for (NodeIndex n : parents[c]) {
      longest_child[n] = std::max(longest_child[n], v);
      if (--pending[n] == 0 && value[p.node_class(n)] < 0)
        queue.push({p.cost(n) + longest_child[n], p.node_class(n)});
    }
  }
  double bound = 0;
  for (ClassIndex r : p.roots()) bound = std::max(bound, value[r]);
  return bound;
}

// The message that reports an acyclic choice of the reduced problem.
std::string solution_message(const Choice& choice) {
  std::string message(1, kSolutionTag);
  uint32_t count = 0;
  for (NodeIndex n : choice) count += n != kNoNode;
  put(message, count);
  for (NodeIndex n : choice)
    if (n != kNoNode) put(message, static_cast<uint32_t>(n));
  return message;
}

double seconds_until(clock::time_point t) {
  return std::chrono::duration<double>(t - clock::now()).count();
}

// The full solve: relaxation, cuts for the cycles of its optimum, again, until an optimum is
// acyclic or `solve_deadline` passes (the LP bound may use up to 30% of the time to
// `deadline`). Reports bounds and better acyclic choices as it finds them, and updates the
// incumbent; true when it proved the incumbent optimal (to CBC's gap, kAllowableGap / scale).
bool lazy_cycle_search(const ExtractionProblem& p, Choice* incumbent, double* incumbent_cost,
                       double scale, clock::time_point solve_deadline, clock::time_point deadline,
                       const Report& report) {
  std::vector<double> objective(p.num_nodes());
  for (NodeIndex n = 0; n < p.num_nodes(); ++n) objective[n] = p.cost(n) * scale;
  Rows rows = base_rows(p);
  std::vector<char> in_set(p.num_classes(), 0);
  add_two_class_cycle_cuts(p, &in_set, &rows);
  double bound = -COIN_DBL_MAX;
  auto report_bound = [&](double value) {
    if (!(value > bound)) return;
    bound = value;
    std::string message(1, kBoundTag);
    put(message, bound);
    report(message);
  };
  {
    // The LP relaxation first, so that a bound comes back even if CBC never finishes.
    OsiClpSolverInterface lp;
    load(p, rows, objective, &lp);
    lp.getModelPtr()->setMaximumSeconds(0.3 * seconds_until(deadline));
    lp.initialSolve();
    if (lp.isProvenOptimal()) report_bound(lp.getObjValue() / scale);
  }
  for (;;) {
    // CBC overruns its limit a little; leave it time to stop and report.
    double seconds = seconds_until(solve_deadline) * 0.9 - 0.3;
    if (seconds < 0.1) return false;
    SolveResult solved =
        solve_relaxation(p, rows, objective, start_columns(p, *incumbent), seconds);
    if (solved.bound > -COIN_DBL_MAX / 2) report_bound(solved.bound / scale);
    if (solved.choice.empty()) return false;
    auto cycles = choice_cycles(p, solved.choice);
    if (cycles.empty()) {
      auto found = make_result(p, solved.choice);
      if (found.dag_cost < *incumbent_cost) {
        *incumbent = found.choice;
        *incumbent_cost = found.dag_cost;
        report(solution_message(*incumbent));
      }
      if (solved.proven) report(std::string(1, kProvenTag));
      return solved.proven;
    }
    if (!solved.proven) return false;  // out of time with a cyclic best
    for (const auto& cycle : cycles) add_set_cut(p, cycle, &in_set, &rows);
  }
}

// An exact solve of a small problem from an acyclic start (same loop, no reports): the best
// acyclic choice found by the deadline (the start if none is better).
Choice solve_small(const ExtractionProblem& p, Choice start, double start_cost,
                   clock::time_point deadline, bool* proven) {
  *proven = false;
  const double scale = objective_scale(p, start);
  std::vector<double> objective(p.num_nodes());
  for (NodeIndex n = 0; n < p.num_nodes(); ++n) objective[n] = p.cost(n) * scale;
  Rows rows = base_rows(p);
  std::vector<char> in_set(p.num_classes(), 0);
  add_two_class_cycle_cuts(p, &in_set, &rows);
  for (;;) {
    double seconds = seconds_until(deadline) * 0.9 - 0.05;
    if (seconds < 0.05) return start;
    SolveResult solved;
    try {
      solved = solve_relaxation(p, rows, objective, start_columns(p, start), seconds);
    } catch (const CoinError&) {
      // CBC rejects the start of some small models ("Illegal index" in getColumnName); the
      // start is kept anyway, so solve again without it.
      solved = solve_relaxation(p, rows, objective, {}, seconds * 0.9, false);
    }
    if (solved.choice.empty()) return start;
    auto cycles = choice_cycles(p, solved.choice);
    if (cycles.empty()) {
      auto found = make_result(p, solved.choice);
      *proven = solved.proven;
      return found.dag_cost < start_cost ? found.choice : start;
    }
    if (!solved.proven) return start;
    for (const auto& cycle : cycles) add_set_cut(p, cycle, &in_set, &rows);
  }
}

// One neighbourhood's sub-problem: the e-classes of the neighbourhood N with all their e-nodes,
// and the other chosen e-classes that only N's choices keep alive (O) with their chosen e-node.
// The chosen e-classes that the roots reach without passing through N (A) stay chosen whatever
// N picks, so their cost is constant and they are left out; a child in A is replaced by the
// e-classes of N that it reaches through A, which keeps every path, hence every cycle, and
// asks only for e-classes that are chosen anyway (they are the sub-problem's roots). E-nodes
// of N with an unchosen child outside N are left out.
struct SubProblem {
  ExtractionProblem problem;
  std::vector<ClassIndex> original_class;  // by sub e-class
  std::vector<NodeIndex> original_node;    // by sub e-node
  Choice start;                            // the incumbent on the sub-problem
};

SubProblem make_sub_problem(const ExtractionProblem& p, const Choice& incumbent,
                            const std::vector<char>& in_n) {
  constexpr ClassIndex kNone = std::numeric_limits<ClassIndex>::max();
  const size_t num_classes = p.num_classes();
  std::vector<char> in_a(num_classes, 0), required(num_classes, 0);
  std::vector<ClassIndex> todo;
  auto visit = [&](ClassIndex k) {
    if (in_n[k]) {
      required[k] = 1;
    } else if (!in_a[k]) {
      in_a[k] = 1;
      todo.push_back(k);
    }
  };
  for (ClassIndex r : p.roots()) visit(r);
  while (!todo.empty()) {
    ClassIndex c = todo.back();
    todo.pop_back();
    for (ClassIndex k : p.children(incumbent[c])) visit(k);
  }
  SubProblem sub;
  std::vector<ClassIndex> sub_of(num_classes, kNone);
  for (ClassIndex c = 0; c < num_classes; ++c)
    if (in_n[c] || (incumbent[c] != kNoNode && !in_a[c])) {
      sub_of[c] = sub.problem.add_class();
      sub.original_class.push_back(c);
    }
  // The e-classes of N that an e-class of A reaches through A, computed on demand.
  std::vector<std::vector<ClassIndex>> frontier(num_classes);
  std::vector<char> has_frontier(num_classes, 0);
  std::vector<uint32_t> mark(num_classes, 0);
  uint32_t stamp = 0;
  auto frontier_of = [&](ClassIndex y) -> const std::vector<ClassIndex>& {
    if (has_frontier[y]) return frontier[y];
    has_frontier[y] = 1;
    ++stamp;
    std::vector<ClassIndex> stack{y};
    mark[y] = stamp;
    while (!stack.empty()) {
      ClassIndex c = stack.back();
      stack.pop_back();
      for (ClassIndex k : p.children(incumbent[c])) {
        if (mark[k] == stamp) continue;
        mark[k] = stamp;
        if (in_n[k])
          frontier[y].push_back(sub_of[k]);
        else
          stack.push_back(k);  // in A: a child of a chosen e-class outside N is chosen
      }
    }
    return frontier[y];
  };
  std::vector<ClassIndex> kids;
  sub.start.assign(sub.original_class.size(), kNoNode);
  for (ClassIndex s = 0; s < sub.original_class.size(); ++s) {
    ClassIndex c = sub.original_class[s];
    std::span<const NodeIndex> options = p.nodes(c);
    if (!in_n[c]) options = {&incumbent[c], 1};
    for (NodeIndex n : options) {
      kids.clear();
      bool usable = true;
      for (ClassIndex k : p.children(n)) {
        if (sub_of[k] != kNone) {
          kids.push_back(sub_of[k]);
        } else if (in_a[k]) {
          const auto& f = frontier_of(k);
          kids.insert(kids.end(), f.begin(), f.end());
        } else {
          usable = false;
          break;
        }
      }
      // A child that is the e-node's own e-class (directly or through A) closes a cycle.
      std::sort(kids.begin(), kids.end());
      kids.erase(std::unique(kids.begin(), kids.end()), kids.end());
      if (!usable || std::binary_search(kids.begin(), kids.end(), s)) continue;
      NodeIndex m = sub.problem.add_node(s, p.cost(n), kids);
      sub.original_node.push_back(n);
      if (n == incumbent[c]) sub.start[s] = m;
    }
  }
  for (ClassIndex s = 0; s < sub.original_class.size(); ++s)
    if (required[sub.original_class[s]]) sub.problem.add_root(s);
  return sub;
}

// The DAG-aware search's choice as a warm start, within the ILP's time limit (its own budget is
// counted in steps and could outlast a short limit).
Choice dag_warm_start(const ExtractionProblem& problem, double seconds) {
  DagOptions options;
  options.time_limit_seconds = std::min(options.time_limit_seconds, std::max(0.0, seconds));
  return extract_dag(problem, options).choice;
}

// A valid acyclic start for negative costs, which extract_dag refuses: its choice on the same
// e-graph with the negative costs taken as 0.
Choice clipped_warm_start(const ExtractionProblem& problem, double seconds) {
  ExtractionProblem clipped;
  for (ClassIndex c = 0; c < problem.num_classes(); ++c) clipped.add_class();
  for (NodeIndex n = 0; n < problem.num_nodes(); ++n)
    clipped.add_node(problem.node_class(n), std::max(0.0, problem.cost(n)), problem.children(n));
  for (ClassIndex r : problem.roots()) clipped.add_root(r);
  return dag_warm_start(clipped, seconds);  // same e-node indices
}

}  // namespace

CostStep common_cost_step(const ExtractionProblem& p) {
  constexpr double kEps = std::numeric_limits<double>::epsilon();
  double scale = 1;  // 10^places
  for (int places = 0; places <= 6; ++places, scale *= 10) {
    int64_t divisor = 0;
    double error = 0;
    bool multiples = true;
    for (NodeIndex n = 0; n < p.num_nodes() && multiples; ++n) {
      const double x = p.cost(n) * scale, r = std::nearbyint(x);
      // A decimal read from text and scaled by 10^places is off by an ulp or two of x.
      const double off = 8 * kEps * std::max(1.0, std::abs(x));
      if (std::abs(r) > 0x1p52 || std::abs(x - r) > off) {
        multiples = false;
      } else {
        divisor = std::gcd(divisor, static_cast<int64_t>(std::abs(r)));
        // How far the cost is from r / 10^places: exactly |x - r| for whole numbers, else that
        // scaled back plus an ulp for the multiplication.
        error +=
            places == 0 ? std::abs(x - r) : std::abs(x - r) / scale + kEps * std::abs(p.cost(n));
      }
    }
    if (!multiples) continue;
    if (divisor == 0) return {};  // every cost is 0
    return {static_cast<double>(divisor) / scale, error};
  }
  return {};
}

double round_up_to_step(double bound, const CostStep& step, double tolerance) {
  if (!(step.step > 0) || !std::isfinite(bound)) return bound;
  // The optimum is at least bound - tolerance, and a multiple of the step give or take
  // step.error; a few ulps more cover the division.
  const double below =
      bound - tolerance - step.error - 8 * std::numeric_limits<double>::epsilon() * std::abs(bound);
  const double up = std::ceil(below / step.step) * step.step - step.error;
  return std::max(bound, up);
}

Choice improve_by_neighbourhoods(const ExtractionProblem& p, const Choice& start,
                                 const LnsOptions& options,
                                 const std::function<void(const Choice&)>& on_better) {
  const auto deadline = clock::now() + std::chrono::duration_cast<clock::duration>(
                                           std::chrono::duration<double>(options.seconds));
  ExtractionResult best = make_result(p, start);
  const size_t num_classes = p.num_classes();
  if (num_classes == 0) return best.choice;
  // Neighbours of an e-class: the children and parent e-classes of all its e-nodes.
  std::vector<std::vector<ClassIndex>> adjacent(num_classes);
  for (NodeIndex n = 0; n < p.num_nodes(); ++n)
    for (ClassIndex k : p.children(n)) {
      adjacent[p.node_class(n)].push_back(k);
      adjacent[k].push_back(p.node_class(n));
    }
  for (auto& a : adjacent) {
    std::sort(a.begin(), a.end());
    a.erase(std::unique(a.begin(), a.end()), a.end());
  }
  std::mt19937 rng(options.seed);
  double size = static_cast<double>(options.initial_size);
  std::vector<char> in_n(num_classes, 0);
  std::vector<ClassIndex> region;
  for (int round = 0; seconds_until(deadline) > 0.2; ++round) {
    if (options.max_rounds >= 0 && round >= options.max_rounds) break;
    // Seeds: the chosen e-classes, every other round weighted by their e-node's cost.
    std::vector<ClassIndex> chosen;
    std::vector<double> weight;
    for (ClassIndex c = 0; c < num_classes; ++c)
      if (best.choice[c] != kNoNode) {
        chosen.push_back(c);
        weight.push_back(std::abs(p.cost(best.choice[c])) + 1e-12);
      }
    if (chosen.empty()) break;
    ClassIndex seed =
        round % 2 ? chosen[std::discrete_distribution<size_t>(weight.begin(), weight.end())(rng)]
                  : chosen[std::uniform_int_distribution<size_t>(0, chosen.size() - 1)(rng)];
    // A breadth-first region around the seed, neighbours in random order.
    const size_t cap = std::max<size_t>(2, static_cast<size_t>(size));
    region.assign(1, seed);
    in_n[seed] = 1;
    std::vector<ClassIndex> next;
    for (size_t head = 0; head < region.size() && region.size() < cap; ++head) {
      next = adjacent[region[head]];
      std::shuffle(next.begin(), next.end(), rng);
      for (ClassIndex k : next) {
        if (region.size() >= cap) break;
        if (!in_n[k]) {
          in_n[k] = 1;
          region.push_back(k);
        }
      }
    }
    SubProblem sub = make_sub_problem(p, best.choice, in_n);
    for (ClassIndex c : region) in_n[c] = 0;
    if (sub.problem.roots().empty()) continue;
    auto sub_start = make_result(sub.problem, sub.start);
    if (sub_start.dag_cost <= 0 && sub.problem.min_cost() >= 0) continue;  // nothing to gain
    auto sub_deadline = std::min(
        deadline, clock::now() + std::chrono::duration_cast<clock::duration>(
                                     std::chrono::duration<double>(options.seconds_per_solve)));
    // In a child process: CBC has aborted (a failed assertion in Clp) and crashed on some of
    // these sub-problems, which would end the whole search. A failed solve changes nothing.
    bool proven = false;
    Choice solved = sub_start.choice;
    const size_t sub_classes = sub.problem.num_classes();
    IsolatedRun run =
        run_isolated(std::max(0.1, seconds_until(sub_deadline)) + 0.5, [&](const Report& report) {
          bool sub_proven = false;
          Choice c = solve_small(sub.problem, sub_start.choice, sub_start.dag_cost, sub_deadline,
                                 &sub_proven);
          std::string message(1, sub_proven ? 1 : 0);
          for (NodeIndex n : c) put(message, static_cast<uint32_t>(n));
          report(message);
        });
    if (run.received.size() == 1 + sub_classes * sizeof(uint32_t)) {
      proven = run.received[0] == 1;
      std::memcpy(solved.data(), run.received.data() + 1, sub_classes * sizeof(uint32_t));
    }
    // Grow the neighbourhood while CBC proves them, shrink it when it cannot.
    size = proven ? std::min(size * 1.2, static_cast<double>(options.max_size))
                  : std::max(size * 0.7, std::min(20.0, static_cast<double>(options.max_size)));
    Choice candidate = best.choice;
    std::sort(region.begin(), region.end());
    for (ClassIndex s = 0; s < sub.original_class.size(); ++s) {
      ClassIndex c = sub.original_class[s];
      if (!std::binary_search(region.begin(), region.end(), c)) continue;  // in O: unchanged
      candidate[c] = solved[s] == kNoNode ? kNoNode : sub.original_node[solved[s]];
    }
    if (!is_valid_choice(p, candidate)) continue;
    ExtractionResult found = make_result(p, candidate);
    if (found.dag_cost < best.dag_cost - 1e-12 * std::abs(best.dag_cost)) {
      best = std::move(found);
      if (on_better) on_better(best.choice);
    }
  }
  return best.choice;
}

namespace {

// The exact solve of one problem (no splitting).
ExtractionResult solve_whole(const ExtractionProblem& problem, const IlpOptions& options) {
  auto start = clock::now();
  const auto deadline = start + std::chrono::duration_cast<clock::duration>(
                                    std::chrono::duration<double>(options.time_limit_seconds));
  auto elapsed = [&] { return std::chrono::duration<double>(clock::now() - start).count(); };

  Choice warm = options.warm_start;
  if (warm.empty())
    warm = problem.min_cost() < 0 ? clipped_warm_start(problem, options.time_limit_seconds)
                                  : dag_warm_start(problem, options.time_limit_seconds);
  if (!is_valid_choice(problem, warm)) fail("ILP warm start is not a valid acyclic choice");
  ExtractionResult best = make_result(problem, warm);

  const ReducedProblem reduced = reduce_problem(problem);
  const ExtractionProblem& p = reduced.problem;
  // The warm start in the reduced problem; dominated e-nodes switched can only make it cheaper.
  ExtractionResult reduced_warm = make_result(p, reduced.reduce(problem, best.choice));
  {
    ExtractionResult expanded = make_result(problem, reduced.expand(problem, reduced_warm.choice));
    if (expanded.dag_cost < best.dag_cost) best = std::move(expanded);
  }
  if (p.roots().empty()) {  // every root folded away: nothing costs anything
    best.optimal = true;
    best.bound = best.dag_cost;
    best.seconds = elapsed();
    return best;
  }

  // What proves the best choice optimal, to a relative 1e-9 (`slack`): a lower bound that
  // reaches its cost, after rounding up to the next multiple of the costs' common step where
  // they have one (every DAG cost is such a multiple: with integer costs a bound of 5.5 means 6),
  // or CBC's own proof where its gap is within the slack.
  const CostStep step = common_cost_step(p);
  auto slack = [&] { return 1e-9 * std::abs(best.dag_cost) + 1e-12; };
  auto rounded = [&](double b) { return round_up_to_step(b, step, slack()); };
  auto on_bound = [&](double b) { return rounded(b) >= best.dag_cost - slack(); };

  auto proved_optimal = [&] {
    best.optimal = true;
    best.bound = best.dag_cost;
    best.seconds = elapsed();
    return best;
  };
  const double path_bound = critical_path_bound(p);
  if (on_bound(path_bound)) return proved_optimal();  // the warm start is on the bound
  double search_bound = -COIN_DBL_MAX;                // best_first_search's, where it stopped short
  // Best-first search, with up to a quarter of the time and 128 MiB: where it applies (costs
  // >= 0) it proves the optima whose LP bound is weak (extract/best_first.h), on the shared
  // models in milliseconds and a few MiB; where it stops short (tensat's e-graphs), its bound
  // still counts and CBC gets the rest.
  if (options.best_first) {
    BestFirstOptions search_options;
    search_options.deadline = start + (deadline - start) / 4;
    search_options.max_bytes = size_t{128} << 20;
    if (auto searched = best_first_search(p, reduced_warm.dag_cost, search_options)) {
      if (!searched->choice.empty()) {
        ExtractionResult found = make_result(problem, reduced.expand(problem, searched->choice));
        if (found.dag_cost < best.dag_cost) best = std::move(found);
      }
      if (searched->complete || on_bound(searched->bound)) return proved_optimal();
      if (options.progress && searched->bound > path_bound)
        options.progress(
            {elapsed(), best.dag_cost, std::min(rounded(searched->bound), best.dag_cost)});
      search_bound = searched->bound;
    }
  }
  // The full solve and neighbourhood search, each in a child process (two at once where the
  // machine has two cores, else the full solve with the first 75% of the time and, unless it
  // proved the optimum, the search with the rest). Each reports bounds and better acyclic
  // choices as it finds them; a truncated last report (the child killed mid-write) is ignored.
  double bound = std::max(path_bound, search_bound);  // the best proven lower bound
  bool proven = false;  // the full solve proved the best choice optimal, to CBC's gap
  Choice incumbent = reduced_warm.choice;
  double incumbent_cost = reduced_warm.dag_cost;
  const double scale = objective_scale(p, incumbent);  // the full solve's
  auto proved = [&] { return (proven && kAllowableGap / scale <= slack()) || on_bound(bound); };
  auto on_report = [&](char tag, std::string_view payload) {
    if (tag == kBoundTag) {
      double value = 0;
      get(payload, &value);
      bound = std::max(bound, value);
    } else if (tag == kSolutionTag) {
      uint32_t count = 0;
      get(payload, &count);
      Choice choice(p.num_classes(), kNoNode);
      for (uint32_t i = 0; i < count; ++i) {
        uint32_t n = 0;
        get(payload, &n);
        if (n >= p.num_nodes()) return proven = false;
        choice[p.node_class(n)] = n;
      }
      Choice expanded = reduced.expand(problem, choice);
      if (!is_valid_choice(problem, expanded)) return proven = false;
      ExtractionResult found = make_result(problem, expanded);
      if (found.dag_cost <= best.dag_cost) {
        best = std::move(found);
        incumbent = std::move(choice);
        incumbent_cost = dag_cost(p, incumbent);
      }
    } else {
      proven = true;
    }
    return true;
  };
  // Reads what the children sent since the last call (each child's reports from where it left
  // off), and tells `options.progress` when the best cost or the bound moved.
  constexpr size_t kUntrusted = std::numeric_limits<size_t>::max();
  std::vector<size_t> read_upto;
  double told_cost = best.dag_cost, told_bound = rounded(bound);
  auto read = [&](const std::vector<IsolatedRun>& runs) {
    read_upto.resize(std::max(read_upto.size(), runs.size()), 0);
    for (size_t i = 0; i < runs.size(); ++i) {
      if (read_upto[i] == kUntrusted) continue;
      auto used =
          for_each_report(std::string_view(runs[i].received).substr(read_upto[i]), on_report);
      read_upto[i] = used ? read_upto[i] + *used : kUntrusted;
    }
    if (options.progress && (best.dag_cost != told_cost || rounded(bound) != told_bound)) {
      told_cost = best.dag_cost;
      told_bound = rounded(bound);
      options.progress({elapsed(), best.dag_cost,
                        proved() ? best.dag_cost : std::min(told_bound, best.dag_cost)});
    }
    return proved();  // a proof ends the search; nothing else does before the deadline
  };
  auto full = [&](clock::time_point solve_deadline) {
    return [&, solve_deadline](const Report& report) {
      lazy_cycle_search(p, &incumbent, &incumbent_cost, scale, solve_deadline, deadline, report);
    };
  };
  auto search = [&](const Report& report) {
    LnsOptions lns;
    lns.seconds = seconds_until(deadline) - 0.3;
    improve_by_neighbourhoods(p, incumbent, lns,
                              [&](const Choice& better) { report(solution_message(better)); });
  };
  if (std::thread::hardware_concurrency() >= 2) {
    read(run_isolated(seconds_until(deadline), {full(deadline), search}, read));
  } else {
    const auto now = clock::now();
    const auto solve_deadline = now + (deadline - now) * 3 / 4;
    read(run_isolated(std::max(0.5, seconds_until(solve_deadline)), {full(solve_deadline)}, read));
    if (!proved() && seconds_until(deadline) > 1) {
      read_upto.assign(1, 0);  // the search is a new first child
      read(run_isolated(seconds_until(deadline), {search}, read));
    }
  }
  best.optimal = proved();
  best.bound = best.optimal ? best.dag_cost : std::min(rounded(bound), best.dag_cost);
  best.seconds = elapsed();
  return best;
}

// Parts smaller than this stay in their parent: a solve has a fixed cost (a child process).
constexpr size_t kMinPartNodes = 64;
constexpr double kMinPartSeconds = 1.5;

}  // namespace

ExtractionResult extract_ilp(const ExtractionProblem& problem, const IlpOptions& options) {
  if (!options.split || problem.min_cost() < 0)  // splitting needs costs >= 0
    return solve_whole(problem, options);
  const auto start = clock::now();
  const auto deadline = start + std::chrono::duration_cast<clock::duration>(
                                    std::chrono::duration<double>(options.time_limit_seconds));
  auto elapsed = [&] { return std::chrono::duration<double>(clock::now() - start).count(); };
  IlpOptions whole = options;
  if (whole.warm_start.empty())
    whole.warm_start = dag_warm_start(problem, options.time_limit_seconds);
  if (!is_valid_choice(problem, whole.warm_start))
    fail("ILP warm start is not a valid acyclic choice");
  const std::vector<ProblemPart> parts = split_at_separators(problem, kMinPartNodes);
  if (parts.size() < 2) return solve_whole(problem, whole);

  // The parts bottom-up, each from the best choice so far restricted to it and with a share of
  // the time by its size; a nested separator costs what its part's best choice costs.
  const ExtractionResult warm = make_result(problem, whole.warm_start);
  Choice combined = warm.choice;
  std::vector<double> part_cost(parts.size(), 0);
  double gap = 0;  // the sum of the parts' gaps: bounds the whole one's
  bool all_optimal = true;
  size_t nodes_left = 0;
  for (const ProblemPart& part : parts) nodes_left += part.num_nodes;
  for (size_t i = 0; i < parts.size(); ++i) {
    const ProblemPart& part = parts[i];
    std::vector<double> nested_cost;
    for (auto [c, k] : part.nested) nested_cost.push_back(part_cost[k]);
    std::vector<NodeIndex> node_of;
    std::vector<ClassIndex> class_of;
    const ExtractionProblem sub = part_problem(problem, part, nested_cost, &node_of, &class_of);
    std::unordered_map<NodeIndex, NodeIndex> local_node;
    for (NodeIndex j = 0; j < node_of.size(); ++j)
      if (node_of[j] != kNoNode) local_node[node_of[j]] = j;
    IlpOptions o;
    o.best_first = options.best_first;
    o.warm_start.assign(sub.num_classes(), kNoNode);
    for (ClassIndex j = 0; j < sub.num_classes(); ++j) {
      auto it = local_node.find(combined[class_of[j]]);
      if (sub.nodes(j).size() == 1 && node_of[sub.nodes(j)[0]] == kNoNode)  // nested
        o.warm_start[j] = sub.nodes(j)[0];
      else if (it != local_node.end())
        o.warm_start[j] = it->second;
      else if (j >= part.classes.size())
        o.warm_start[j] = sub.nodes(j)[0];  // free
    }
    if (!is_valid_choice(sub, o.warm_start)) o.warm_start.clear();  // e.g. a separator unused
    // CBC needs a second or so to prove even a small part; a part that proves returns early.
    const double left = seconds_until(deadline);
    o.time_limit_seconds = std::max({0.05, std::min(kMinPartSeconds, left),
                                     left * static_cast<double>(part.num_nodes) /
                                         static_cast<double>(std::max<size_t>(nodes_left, 1))});
    nodes_left -= part.num_nodes;
    const ExtractionResult r = solve_whole(sub, o);
    part_cost[i] = r.dag_cost;
    gap += r.dag_cost - r.bound.value_or(0);
    all_optimal = all_optimal && r.optimal;
    for (ClassIndex j = 0; j < sub.num_classes(); ++j)
      if (j < r.choice.size() && r.choice[j] != kNoNode && node_of[r.choice[j]] != kNoNode)
        combined[class_of[j]] = node_of[r.choice[j]];
    if (options.progress && is_valid_choice(problem, combined))
      options.progress({elapsed(), dag_cost(problem, combined), 0});
  }
  if (!is_valid_choice(problem, combined))
    throw Error("ILP: the parts' choices do not join into a valid choice", Error::Kind::Internal);
  ExtractionResult best = make_result(problem, combined);
  const double bound = best.dag_cost - gap;
  if (warm.dag_cost < best.dag_cost) best = warm;
  const double slack = 1e-9 * std::abs(best.dag_cost) + 1e-12;
  best.optimal = all_optimal || bound >= best.dag_cost - slack;
  best.bound = best.optimal ? best.dag_cost : std::min(bound, best.dag_cost);
  best.seconds = elapsed();
  if (options.progress) options.progress({best.seconds, best.dag_cost, *best.bound});
  return best;
}

}  // namespace eqfuse::extract
