#include "extract/ilp.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CbcModel.hpp>
#include <CbcSolver.hpp>
#include <CoinPackedMatrix.hpp>
#include <OsiClpSolverInterface.hpp>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

#include "extract/dag.h"
#include "extract/greedy.h"
#include "support/error.h"

namespace eqfuse::extract {
namespace {

constexpr int32_t kLpRecord = 0x45514C50;     // then the LP bound (double)
constexpr int32_t kFinalRecord = 0x45514642;  // then solution?, proven, bound, chosen columns

struct CbcOutcome {
  bool finished = false;  // CBC ran to its end (optimal or its own time limit) in time
  bool proven = false;
  double bound = 0;
  std::vector<char> chosen;        // per e-node column; empty when CBC found no solution
  std::optional<double> lp_bound;  // the LP relaxation's optimum, a bound even if CBC is cut off
};

// Runs CBC in a child process. CBC overruns its own time limit by minutes on large e-graphs
// (root LP, cuts, preprocessing), has crashed in CglPreProcess::postProcess when stopped
// there, and prints banners to stdout whatever its log level; a child process can be killed
// at the deadline, cannot take eqfuse down, and writes nothing to our stdout (`--json`
// promises exactly one JSON document there). The child reports over a pipe.
CbcOutcome solve_isolated(const OsiClpSolverInterface& solver,
                          const std::vector<std::string>& names,
                          const std::vector<double>& start_values, int num_node_columns,
                          double seconds) {
  using clock = std::chrono::steady_clock;
  const auto deadline = clock::now() + std::chrono::duration<double>(seconds);
  int fds[2];
  if (pipe(fds) != 0) throw Error("ILP: pipe failed", Error::Kind::Internal);
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) throw Error("ILP: fork failed", Error::Kind::Internal);
  if (pid == 0) {
    close(fds[0]);
    int null_fd = open("/dev/null", O_WRONLY);
    dup2(null_fd, STDOUT_FILENO);
    dup2(null_fd, STDERR_FILENO);
    // First the LP relaxation, so that a bound comes back even if CBC is killed later.
    auto send = [&](const std::string& message) {
      for (size_t done = 0; done < message.size();) {
        ssize_t w = write(fds[1], message.data() + done, message.size() - done);
        if (w <= 0) _exit(1);
        done += static_cast<size_t>(w);
      }
    };
    {
      OsiClpSolverInterface relaxation(solver);
      relaxation.messageHandler()->setLogLevel(0);
      relaxation.getModelPtr()->setMaximumSeconds(seconds * 0.3);
      relaxation.initialSolve();
      if (relaxation.isProvenOptimal()) {
        std::string message(sizeof(int32_t) + sizeof(double), '\0');
        const int32_t magic = kLpRecord;
        const double value = relaxation.getObjValue();
        std::memcpy(message.data(), &magic, sizeof magic);
        std::memcpy(message.data() + sizeof magic, &value, sizeof value);
        send(message);
      }
    }
    CbcModel model(solver);
    CbcMain0(model);
    model.setLogLevel(0);
    model.messageHandler()->setLogLevel(0);
    std::vector<const char*> start_names;
    for (const auto& s : names) start_names.push_back(s.c_str());
    model.setMIPStart(static_cast<int>(names.size()), start_names.data(), start_values.data());
    // CBC's own limit leaves it time to stop and report before the parent's deadline.
    std::string limit = std::to_string(std::max(0.2, seconds * 0.8 - 0.2));
    const char* argv[] = {"eqfuse", "-log",        "0",      "-slog", "0",
                          "-sec",   limit.c_str(), "-solve", "-quit"};
    CbcMain1(static_cast<int>(std::size(argv)), argv, model);
    std::string message(sizeof(int32_t) * 3 + sizeof(double), '\0');
    const double* solution = model.bestSolution();
    int32_t header[3] = {kFinalRecord, solution ? 1 : 0, model.isProvenOptimal() ? 1 : 0};
    double bound = model.getBestPossibleObjValue();
    std::memcpy(message.data(), header, sizeof header);
    std::memcpy(message.data() + sizeof header, &bound, sizeof bound);
    if (solution)
      for (int col = 0; col < num_node_columns; ++col) message.push_back(solution[col] > 0.5);
    send(message);
    _exit(0);
  }
  close(fds[1]);
  std::string received;
  char buffer[65536];
  bool eof = false;
  while (!eof) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now());
    if (left.count() <= 0) break;
    pollfd p{fds[0], POLLIN, 0};
    int ready = poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) break;
    ssize_t r = read(fds[0], buffer, sizeof buffer);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      eof = true;
    } else {
      received.append(buffer, static_cast<size_t>(r));
    }
  }
  close(fds[0]);
  if (!eof) kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);

  CbcOutcome out;
  if (received.size() >= sizeof(int32_t) + sizeof(double)) {
    int32_t magic;
    std::memcpy(&magic, received.data(), sizeof magic);
    if (magic == kLpRecord) {
      double value;
      std::memcpy(&value, received.data() + sizeof magic, sizeof value);
      out.lp_bound = value;
      received.erase(0, sizeof magic + sizeof value);
    }
  }
  const size_t header_size = sizeof(int32_t) * 3 + sizeof(double);
  if (!eof || !WIFEXITED(status) || WEXITSTATUS(status) != 0 || received.size() < header_size)
    return out;
  int32_t header[3];
  std::memcpy(header, received.data(), sizeof header);
  if (header[0] != kFinalRecord) return out;
  out.finished = true;
  out.proven = header[2] != 0;
  std::memcpy(&out.bound, received.data() + sizeof header, sizeof(double));
  if (header[1] && received.size() == header_size + static_cast<size_t>(num_node_columns))
    out.chosen.assign(received.begin() + header_size, received.end());
  else
    out.proven = false;
  return out;
}

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
  // Rows in compressed form; CoinPackedMatrix::appendRow reallocates on every call.
  std::vector<CoinBigIndex> row_start;
  std::vector<int> row_length, elements_index;
  std::vector<double> elements, row_lower, row_upper;
  std::vector<int> idx;
  std::vector<double> val;
  auto add_row = [&](double lo, double hi) {
    row_start.push_back(static_cast<CoinBigIndex>(elements.size()));
    row_length.push_back(static_cast<int>(idx.size()));
    elements_index.insert(elements_index.end(), idx.begin(), idx.end());
    elements.insert(elements.end(), val.begin(), val.end());
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

  const int num_rows = static_cast<int>(row_start.size());
  row_start.push_back(
      static_cast<CoinBigIndex>(elements.size()));  // CoinPackedMatrix reads major + 1 starts
  CoinPackedMatrix matrix(false, num_columns, num_rows, static_cast<CoinBigIndex>(elements.size()),
                          elements.data(), elements_index.data(), row_start.data(),
                          row_length.data());
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

  const double remaining = std::max(0.5, options.time_limit_seconds - elapsed());
  CbcOutcome outcome = solve_isolated(solver, names, start_values, num_node_columns, remaining);
  bool proven = outcome.finished && outcome.proven;
  std::vector<char>& values = outcome.chosen;

  if (!values.empty()) {
    Choice choice(num_classes, kNoNode);
    for (int col = 0; col < num_node_columns; ++col)
      if (values[col]) choice[problem.node_class(node_of_column[col])] = node_of_column[col];
    if (is_valid_choice(problem, choice)) {
      ExtractionResult found = make_result(problem, choice);
      if (found.dag_cost <= best.dag_cost) best = std::move(found);
    } else {
      proven = false;  // never claim optimality for a choice we could not use
    }
  }
  best.optimal = proven;
  if (proven)
    best.bound = best.dag_cost;
  else if (outcome.finished)
    best.bound = std::min(outcome.bound, best.dag_cost);
  else if (outcome.lp_bound)
    best.bound = std::min(*outcome.lp_bound, best.dag_cost);
  best.seconds = elapsed();
  return best;
}

}  // namespace eqfuse::extract
