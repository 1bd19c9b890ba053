// `eqfuse extract FILE.json --method greedy|dag|ilp`: picks one term out of a serialized e-graph
// (egraph-serialize JSON) and reports its DAG and tree cost; `--out` writes the choice; `--whole`
// keeps the ILP from splitting the problem and `--cbc-only` from searching best-first (ablations).
#include <fmt/format.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "egraph/serialized_egraph.h"
#include "extract/dag.h"
#include "extract/greedy.h"
#include "extract/ilp.h"
#include "support/error.h"
#include "tools/command.h"

namespace eqfuse::tools {
namespace {

struct ExtractArgs {
  std::string file;
  std::string method = "dag";
  double time_limit = 60;
  uint64_t dag_work = extract::DagOptions{}.work_limit;
  bool json = false;
  bool progress = false;
  bool whole = false;
  bool cbc_only = false;
  std::string out;
};

int run_extract(const ExtractArgs& args) {
  using namespace eqfuse::extract;
  try {
    egraph::SerializedEGraph egraph = egraph::read_serialized_egraph(args.file);
    SerializedProblem sp = make_problem(egraph);
    // Only the ILP takes negative costs (extract/greedy.h says why); name the file's e-node.
    if (args.method != "ilp" && sp.problem.min_cost() < 0)
      for (NodeIndex n = 0; n < sp.problem.num_nodes(); ++n)
        if (sp.problem.cost(n) < 0)
          fail(fmt::format(
              "e-node {} costs {}: --method {} needs non-negative costs (its bottom-up tree "
              "costs need not settle on a cycle, nor stay acyclic, with negative ones); "
              "--method ilp handles negative costs exactly",
              sp.node_ids[n], sp.problem.cost(n), args.method));
    ExtractionResult result;
    if (args.method == "greedy") {
      result = extract_greedy(sp.problem);
    } else if (args.method == "dag") {
      DagOptions options;
      options.time_limit_seconds = args.time_limit;
      options.work_limit = args.dag_work;
      result = extract_dag(sp.problem, options);
    } else if (args.method == "ilp") {
      IlpOptions options;
      options.time_limit_seconds = args.time_limit;
      options.split = !args.whole;
      options.best_first = !args.cbc_only;
      if (args.progress || isatty(STDERR_FILENO))
        options.progress = [](const IlpProgress& p) {
          std::cerr << fmt::format("eqfuse extract: ilp {:6.1f} s  best {:.6f}  bound {:.6f}\n",
                                   p.seconds, p.best_cost, p.bound);
        };
      result = extract_ilp(sp.problem, options);
    } else {
      fail("unknown method '" + args.method + "' (greedy, dag or ilp)");
    }
    if (!args.out.empty()) {
      nlohmann::json choice = nlohmann::json::object();
      for (ClassIndex c = 0; c < result.choice.size(); ++c)
        if (result.choice[c] != kNoNode) choice[sp.class_ids[c]] = sp.node_ids[result.choice[c]];
      std::ofstream out(args.out);
      out << choice.dump(1) << "\n";
      if (!out) fail(args.out + ": cannot write the choice");
    }
    if (args.json) {
      nlohmann::json j = {{"file", args.file},
                          {"method", args.method},
                          {"dag_cost", result.dag_cost},
                          {"tree_cost", result.tree_cost},
                          {"seconds", result.seconds},
                          {"optimal", result.optimal},
                          {"bound", nullptr}};
      if (!result.stop_reason.empty()) j["stop_reason"] = result.stop_reason;
      if (result.bound) j["bound"] = *result.bound;
      std::cout << j.dump(2) << "\n";
    } else {
      std::cout << "method     " << args.method << "\n"
                << "dag cost   " << result.dag_cost << "\n"
                << "tree cost  " << result.tree_cost << "\n"
                << "seconds    " << result.seconds << "\n"
                << "optimal    " << (result.optimal ? "yes" : "no") << "\n";
      if (!result.stop_reason.empty()) std::cout << "stop       " << result.stop_reason << "\n";
      if (result.bound) std::cout << "bound      " << *result.bound << "\n";
    }
    return 0;
  } catch (const Error& e) {
    std::cerr << "eqfuse extract: " << e.what() << "\n";
    return e.exit_code();
  }
}

RegisterCommand extract_command{
    {"extract", "Extract the cheapest term from a serialized e-graph (egraph-serialize JSON)",
     [](CLI::App& app) {
       auto args = std::make_shared<ExtractArgs>();
       app.add_option("file", args->file, "e-graph file (egraph-serialize JSON)")->required();
       app.add_option("--method", args->method, "greedy | dag | ilp")
           ->check(CLI::IsMember({"greedy", "dag", "ilp"}));
       app.add_option("--time-limit", args->time_limit,
                      "seconds (default 60); for dag a safety net behind --dag-work")
           ->check(CLI::Range(0.001, 1e6));
       app.add_option("--dag-work", args->dag_work,
                      fmt::format("dag: the search's budget in its own steps, so that its choice "
                                  "does not depend on the machine (default {})",
                                  args->dag_work));
       app.add_flag("--json", args->json, "one JSON object on stdout");
       app.add_flag("--progress", args->progress,
                    "ILP: a line on stderr when the best cost or the bound moves (the default "
                    "when stderr is a terminal)");
       app.add_flag("--whole", args->whole,
                    "ILP: solve the problem in one piece, without splitting it at separator "
                    "e-classes (to measure what the split gives)");
       app.add_flag("--cbc-only", args->cbc_only,
                    "ILP: leave the whole search to CBC, without the best-first search that "
                    "runs first (to measure what that search gives)");
       app.add_option("--out", args->out, "write the choice {eclass id: node id} here");
       app.footer(
           "Examples:\n  eqfuse extract eg.json --method dag\n  eqfuse extract eg.json --method "
           "ilp --time-limit 30 --out choice.json");
       return CommandMain([args] { return run_extract(*args); });
     }}};

}  // namespace
}  // namespace eqfuse::tools
