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
#include <queue>
#include <set>
#include <string>

#include "extract/dag.h"
#include "extract/isolated.h"
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
  return rows;
}

// The cycles of a choice (one e-node per e-class, kNoNode where unchosen) in the part reachable
// from the roots: for each e-class of each cyclic component, a shortest cycle through it.
// Each cycle lists its e-classes in order, smallest first; empty when the choice is acyclic.
std::vector<std::vector<ClassIndex>> choice_cycles(const ExtractionProblem& p,
                                                   const Choice& choice) {
  const size_t num_classes = p.num_classes();
  std::vector<std::vector<ClassIndex>> edges(num_classes);
  std::vector<char> seen(num_classes, 0);
  std::vector<ClassIndex> todo;
  for (ClassIndex r : p.roots())
    if (!seen[r]) {
      seen[r] = 1;
      todo.push_back(r);
    }
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
                             const std::vector<double>& start_values, double seconds) {
  const int num_columns = static_cast<int>(start_values.size());
  OsiClpSolverInterface solver;
  load(p, rows, objective, &solver);
  std::vector<std::string> names(num_columns);
  std::vector<const char*> name_pointers(num_columns);
  for (int col = 0; col < num_columns; ++col) {
    names[col] = "x" + std::to_string(col);
    name_pointers[col] = names[col].c_str();
    solver.setColName(col, names[col]);
    if (col < static_cast<int>(p.num_nodes())) solver.setInteger(col);
  }

  CbcModel model(solver);
  CbcMain0(model);
  model.setLogLevel(0);
  model.messageHandler()->setLogLevel(0);
  model.setMIPStart(num_columns, name_pointers.data(), start_values.data());
  std::string limit = std::to_string(std::max(0.1, seconds));
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

// A lower bound that no cycle can fool: an acyclic term costs at least its root e-node plus
// the costliest term of one child (that child's term is part of it, and cannot contain the
// root e-node), so the cheapest such "critical path" of each root bounds the DAG cost from
// below. Computed for all e-classes at once, cheapest first (Knuth's generalization of
// Dijkstra: an e-node's value is known once all its children's are).
double critical_path_bound(const ExtractionProblem& p) {
  const size_t num_classes = p.num_classes();
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

// The solver process: relaxation, cuts for the cycles of its optimum, again, until an optimum
// is acyclic or time runs out. Reports bounds and better acyclic choices as it finds them.
void lazy_cycle_search(const ExtractionProblem& p, Choice incumbent, double incumbent_cost,
                       clock::time_point deadline, const Report& report) {
  // CBC's tolerances are absolute: scale the objective so that the warm start costs 1000.
  const double scale = incumbent_cost > 0 ? 1000 / incumbent_cost : 1;
  std::vector<double> objective(p.num_nodes());
  for (NodeIndex n = 0; n < p.num_nodes(); ++n) objective[n] = p.cost(n) * scale;
  Rows rows = base_rows(p);
  std::vector<char> in_set(p.num_classes(), 0);
  double bound = 0;
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
    lp.getModelPtr()->setMaximumSeconds(
        0.3 * std::chrono::duration<double>(deadline - clock::now()).count());
    lp.initialSolve();
    if (lp.isProvenOptimal()) report_bound(lp.getObjValue() / scale);
  }
  for (;;) {
    double left = std::chrono::duration<double>(deadline - clock::now()).count();
    // CBC overruns its limit a little; leave it time to stop and report.
    double seconds = left * 0.9 - 0.3;
    if (seconds < 0.1) return;
    SolveResult solved = solve_relaxation(p, rows, objective, start_columns(p, incumbent), seconds);
    if (solved.bound > -COIN_DBL_MAX / 2) report_bound(solved.bound / scale);
    if (solved.choice.empty()) return;
    auto cycles = choice_cycles(p, solved.choice);
    if (cycles.empty()) {
      auto found = make_result(p, solved.choice);
      if (found.dag_cost < incumbent_cost) {
        incumbent = found.choice;
        incumbent_cost = found.dag_cost;
        std::string message(1, kSolutionTag);
        uint32_t count = 0;
        for (NodeIndex n : incumbent) count += n != kNoNode;
        put(message, count);
        for (NodeIndex n : incumbent)
          if (n != kNoNode) put(message, static_cast<uint32_t>(n));
        report(message);
      }
      if (solved.proven) report(std::string(1, kProvenTag));
      return;
    }
    if (!solved.proven) return;  // out of time with a cyclic best
    for (const auto& cycle : cycles) add_set_cut(p, cycle, &in_set, &rows);
  }
}

}  // namespace

ExtractionResult extract_ilp(const ExtractionProblem& problem, const IlpOptions& options) {
  auto start = clock::now();
  const auto deadline = start + std::chrono::duration_cast<clock::duration>(
                                    std::chrono::duration<double>(options.time_limit_seconds));
  auto elapsed = [&] { return std::chrono::duration<double>(clock::now() - start).count(); };

  Choice warm = options.warm_start;
  if (warm.empty()) warm = extract_dag(problem).choice;
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

  const double path_bound = critical_path_bound(p);
  if (path_bound >= best.dag_cost * (1 - 1e-9)) {  // the warm start is on the bound
    best.optimal = true;
    best.bound = best.dag_cost;
    best.seconds = elapsed();
    return best;
  }
  const double remaining = std::chrono::duration<double>(deadline - clock::now()).count();
  IsolatedRun run = run_isolated(std::max(0.5, remaining), [&](const Report& report) {
    lazy_cycle_search(p, reduced_warm.choice, reduced_warm.dag_cost, deadline, report);
  });

  // Read the reports; a truncated last one (the child killed mid-write) is ignored.
  std::optional<double> bound = path_bound;
  bool proven = false;
  std::string_view in = run.received;
  while (!in.empty()) {
    char tag = in.front();
    in.remove_prefix(1);
    if (tag == kBoundTag) {
      double value;
      if (!get(in, &value)) break;
      bound = std::max(bound.value_or(value), value);
    } else if (tag == kSolutionTag) {
      uint32_t count;
      if (!get(in, &count) || in.size() < count * sizeof(uint32_t)) break;
      Choice choice(p.num_classes(), kNoNode);
      bool ok = true;
      for (uint32_t i = 0; i < count; ++i) {
        uint32_t n = 0;
        get(in, &n);
        if (n >= p.num_nodes()) ok = false;
        if (ok) choice[p.node_class(n)] = n;
      }
      Choice expanded = reduced.expand(problem, choice);
      if (!ok || !is_valid_choice(problem, expanded)) {
        proven = false;
        break;
      }
      ExtractionResult found = make_result(problem, expanded);
      if (found.dag_cost <= best.dag_cost) best = std::move(found);
    } else if (tag == kProvenTag) {
      proven = true;
    } else {
      break;
    }
  }
  // The child proved the best choice optimal only up to CBC's tolerance; claim it only when
  // the bound agrees.
  best.optimal = proven && bound && *bound >= best.dag_cost * (1 - 1e-9) - 1e-12;
  if (best.optimal)
    best.bound = best.dag_cost;
  else if (bound)
    best.bound = std::min(*bound, best.dag_cost);
  best.seconds = elapsed();
  return best;
}

}  // namespace eqfuse::extract
