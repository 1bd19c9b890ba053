#include "extract/ilp.h"

#include <fcntl.h>
#include <unistd.h>

#include <CbcModel.hpp>
#include <CbcSolver.hpp>
#include <CoinPackedMatrix.hpp>
#include <OsiClpSolverInterface.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>

#include "extract/dag.h"
#include "extract/greedy.h"
#include "support/error.h"

namespace eqfuse::extract {
namespace {

// CBC writes banners and progress to stdout whatever its log level; `--json` promises that
// stdout holds one JSON document, so the solve runs with file descriptor 1 sent to /dev/null.
class StdoutSilencer {
 public:
  StdoutSilencer() {
    std::fflush(stdout);
    saved_ = dup(STDOUT_FILENO);
    int null_fd = open("/dev/null", O_WRONLY);
    if (saved_ >= 0 && null_fd >= 0) dup2(null_fd, STDOUT_FILENO);
    if (null_fd >= 0) close(null_fd);
  }
  ~StdoutSilencer() {
    std::fflush(stdout);
    if (saved_ >= 0) {
      dup2(saved_, STDOUT_FILENO);
      close(saved_);
    }
  }
  StdoutSilencer(const StdoutSilencer&) = delete;
  StdoutSilencer& operator=(const StdoutSilencer&) = delete;

 private:
  int saved_ = -1;
};

// Tarjan's strongly connected components over the e-class graph (iterative).
std::vector<uint32_t> class_components(const std::vector<std::vector<ClassIndex>>& edges,
                                       uint32_t* num_components) {
  const uint32_t n = static_cast<uint32_t>(edges.size());
  constexpr uint32_t kUnseen = UINT32_MAX;
  std::vector<uint32_t> index(n, kUnseen), low(n, 0), comp(n, kUnseen);
  std::vector<char> on_stack(n, 0);
  std::vector<ClassIndex> stack;
  std::vector<std::pair<ClassIndex, uint32_t>> call;
  uint32_t next_index = 0, count = 0;
  for (ClassIndex s = 0; s < n; ++s) {
    if (index[s] != kUnseen) continue;
    call.push_back({s, 0});
    index[s] = low[s] = next_index++;
    stack.push_back(s);
    on_stack[s] = 1;
    while (!call.empty()) {
      auto [v, i] = call.back();
      if (i < edges[v].size()) {
        ++call.back().second;
        ClassIndex w = edges[v][i];
        if (index[w] == kUnseen) {
          index[w] = low[w] = next_index++;
          stack.push_back(w);
          on_stack[w] = 1;
          call.push_back({w, 0});
        } else if (on_stack[w]) {
          low[v] = std::min(low[v], index[w]);
        }
        continue;
      }
      call.pop_back();
      if (!call.empty()) low[call.back().first] = std::min(low[call.back().first], low[v]);
      if (low[v] == index[v]) {
        ClassIndex w;
        do {
          w = stack.back();
          stack.pop_back();
          on_stack[w] = 0;
          comp[w] = count;
        } while (w != v);
        ++count;
      }
    }
  }
  *num_components = count;
  return comp;
}

}  // namespace

ExtractionResult extract_ilp(const ExtractionProblem& problem, const IlpOptions& options) {
  using clock = std::chrono::steady_clock;
  auto start = clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(clock::now() - start).count(); };

  Choice warm = options.warm_start;
  if (warm.empty()) warm = extract_dag(problem).choice;
  if (!is_valid_choice(problem, warm)) fail("ILP warm start is not a valid acyclic choice");
  ExtractionResult best = make_result(problem, warm);

  // Keep what an acyclic choice can use: e-nodes with a finite term (no self-loop), in e-classes
  // reachable from the roots through such e-nodes.
  const TreeCosts finite = tree_costs(problem);
  const size_t num_classes = problem.num_classes();
  auto usable = [&](NodeIndex n) {
    for (ClassIndex k : problem.children(n))
      if (finite.choice[k] == kNoNode || k == problem.node_class(n)) return false;
    return true;
  };
  std::vector<char> kept_class(num_classes, 0);
  std::vector<ClassIndex> todo(problem.roots().begin(), problem.roots().end());
  for (ClassIndex r : todo) kept_class[r] = 1;
  while (!todo.empty()) {
    ClassIndex c = todo.back();
    todo.pop_back();
    for (NodeIndex n : problem.nodes(c))
      if (usable(n))
        for (ClassIndex k : problem.children(n))
          if (!kept_class[k]) {
            kept_class[k] = 1;
            todo.push_back(k);
          }
  }
  std::vector<int> column_of_node(problem.num_nodes(), -1);
  std::vector<NodeIndex> node_of_column;
  std::vector<std::vector<ClassIndex>> class_edges(num_classes);
  for (ClassIndex c = 0; c < num_classes; ++c) {
    if (!kept_class[c]) continue;
    for (NodeIndex n : problem.nodes(c)) {
      if (!usable(n)) continue;
      column_of_node[n] = static_cast<int>(node_of_column.size());
      node_of_column.push_back(n);
      for (ClassIndex k : problem.children(n)) class_edges[c].push_back(k);
    }
  }
  for (auto& e : class_edges) {
    std::sort(e.begin(), e.end());
    e.erase(std::unique(e.begin(), e.end()), e.end());
  }
  uint32_t num_components = 0;
  std::vector<uint32_t> component = class_components(class_edges, &num_components);
  std::vector<uint32_t> component_size(num_components, 0);
  for (ClassIndex c = 0; c < num_classes; ++c)
    if (kept_class[c]) ++component_size[component[c]];
  // An order variable for each e-class in a cyclic component.
  const int num_node_columns = static_cast<int>(node_of_column.size());
  std::vector<int> order_column(num_classes, -1);
  int num_columns = num_node_columns;
  for (ClassIndex c = 0; c < num_classes; ++c)
    if (kept_class[c] && component_size[component[c]] > 1) order_column[c] = num_columns++;

  // Rows.
  CoinPackedMatrix matrix(false, 0, 0);
  matrix.setDimensions(0, num_columns);
  std::vector<double> row_lower, row_upper;
  std::vector<int> idx;
  std::vector<double> val;
  auto add_row = [&](double lo, double hi) {
    matrix.appendRow(static_cast<int>(idx.size()), idx.data(), val.data());
    row_lower.push_back(lo);
    row_upper.push_back(hi);
    idx.clear();
    val.clear();
  };
  const double kInf = COIN_DBL_MAX;
  std::vector<char> is_root(num_classes, 0);
  for (ClassIndex r : problem.roots()) is_root[r] = 1;
  for (ClassIndex c = 0; c < num_classes; ++c) {
    if (!kept_class[c]) continue;
    for (NodeIndex n : problem.nodes(c))
      if (column_of_node[n] >= 0) {
        idx.push_back(column_of_node[n]);
        val.push_back(1);
      }
    if (idx.empty()) fail("ILP: an e-class has no usable e-node");
    add_row(is_root[c] ? 1 : 0, 1);  // at most one e-node per e-class, one for a root
  }
  std::vector<ClassIndex> kids;
  for (int col = 0; col < num_node_columns; ++col) {
    NodeIndex n = node_of_column[col];
    ClassIndex c = problem.node_class(n);
    kids.assign(problem.children(n).begin(), problem.children(n).end());
    std::sort(kids.begin(), kids.end());
    kids.erase(std::unique(kids.begin(), kids.end()), kids.end());
    for (ClassIndex k : kids) {
      // x_n <= sum of x over e-class k
      idx.push_back(col);
      val.push_back(1);
      for (NodeIndex m : problem.nodes(k))
        if (column_of_node[m] >= 0) {
          idx.push_back(column_of_node[m]);
          val.push_back(-1);
        }
      add_row(-kInf, 0);
      if (order_column[c] >= 0 && component[k] == component[c]) {
        // x_n = 1  =>  order(c) >= order(k) + 1;  big M = component size.
        const double big_m = component_size[component[c]];
        idx = {order_column[c], order_column[k], col};
        val = {1, -1, -big_m};
        add_row(1 - big_m, kInf);
      }
    }
  }

  std::vector<double> col_lower(num_columns, 0), col_upper(num_columns, 1),
      objective(num_columns, 0);
  for (int col = 0; col < num_node_columns; ++col)
    objective[col] = problem.cost(node_of_column[col]);
  for (ClassIndex c = 0; c < num_classes; ++c)
    if (order_column[c] >= 0) col_upper[order_column[c]] = component_size[component[c]] - 1;

  // Warm start: the heuristic's e-nodes, and orders from heights in the chosen graph.
  std::vector<double> start_values(num_columns, 0);
  {
    auto bottom_up = chosen_classes_bottom_up(problem, best.choice);
    std::vector<double> height(num_classes, 0);
    for (ClassIndex c : *bottom_up) {
      NodeIndex n = best.choice[c];
      if (column_of_node[n] < 0) fail("ILP warm start uses an unusable e-node");
      start_values[column_of_node[n]] = 1;
      for (ClassIndex k : problem.children(n))
        if (order_column[c] >= 0 && component[k] == component[c])
          height[c] = std::max(height[c], height[k] + 1);
      if (order_column[c] >= 0) start_values[order_column[c]] = height[c];
    }
  }

  OsiClpSolverInterface solver;
  solver.messageHandler()->setLogLevel(0);
  solver.loadProblem(matrix, col_lower.data(), col_upper.data(), objective.data(), row_lower.data(),
                     row_upper.data());
  std::vector<std::string> names(num_columns);
  for (int col = 0; col < num_columns; ++col) {
    names[col] = "c" + std::to_string(col);
    solver.setColName(col, names[col]);
    if (col < num_node_columns) solver.setInteger(col);
  }

  const double remaining = std::max(1.0, options.time_limit_seconds - elapsed());
  const double* solution = nullptr;
  bool proven = false;
  double bound = 0;
  std::vector<double> values;
  {
    StdoutSilencer silence;
    CbcModel model(solver);
    CbcMain0(model);
    model.setLogLevel(0);
    model.messageHandler()->setLogLevel(0);
    std::vector<const char*> start_names;
    for (const auto& s : names) start_names.push_back(s.c_str());
    model.setMIPStart(num_columns, start_names.data(), start_values.data());
    std::string seconds = std::to_string(remaining);
    const char* argv[] = {"eqfuse", "-log",          "0",      "-slog", "0",
                          "-sec",   seconds.c_str(), "-solve", "-quit"};
    CbcMain1(static_cast<int>(std::size(argv)), argv, model);
    solution = model.bestSolution();
    proven = model.isProvenOptimal();
    bound = model.getBestPossibleObjValue();
    if (solution) values.assign(solution, solution + num_columns);
  }

  if (!values.empty()) {
    Choice choice(num_classes, kNoNode);
    for (int col = 0; col < num_node_columns; ++col)
      if (values[col] > 0.5) choice[problem.node_class(node_of_column[col])] = node_of_column[col];
    if (is_valid_choice(problem, choice)) {
      ExtractionResult found = make_result(problem, choice);
      if (found.dag_cost <= best.dag_cost) best = std::move(found);
    } else {
      proven = false;  // never claim optimality for a choice we could not use
    }
  }
  best.optimal = proven;
  best.bound = std::min(proven ? best.dag_cost : bound, best.dag_cost);
  best.seconds = elapsed();
  return best;
}

}  // namespace eqfuse::extract
