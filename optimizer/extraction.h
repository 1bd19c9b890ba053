#pragma once
// Extraction for the tensor e-graph: the e-graph becomes an extract::ExtractionProblem whose
// e-node costs come from cost::CostModel (each e-node costed as the op it is, at the types the
// TensorAnalysis gives its class and children), one of the extractors chooses, and the choice
// comes back as the NodeChoice that to_graph (optimizer/tensor_egraph.h) rebuilds a graph from.
// Kept here, not in extract/, because extract/ knows nothing of tensors and costs.
#include <optional>
#include <string>
#include <vector>

#include "cost/cost_model.h"
#include "extract/choice.h"
#include "extract/dag.h"
#include "optimizer/tensor_egraph.h"

namespace eqfuse::optimizer {

enum class ExtractMethod { Greedy, Dag, Ilp };
const char* extract_method_name(ExtractMethod m);  // "greedy", "dag", "ilp"
std::optional<ExtractMethod> parse_extract_method(std::string_view name);

struct ExtractOptions {
  ExtractMethod method = ExtractMethod::Dag;
  // The DAG-aware local search's budget: its own steps (extract/dag.h), so the output does not
  // depend on the machine or its load, and a time limit as a safety net.
  uint64_t dag_work = extract::DagOptions{}.work_limit;
  double dag_seconds = extract::DagOptions{}.time_limit_seconds;
  double ilp_seconds = 10;  // the ILP's time limit
  // When set, the costed problem (milliseconds) is also written there as egraph-serialize JSON
  // (extract/problem.h), for `eqfuse extract` and other extractors to study.
  std::string dump_path;
};

// The predicted time of e-node `n` in seconds: leaves, projections and layout ops that codegen
// folds cost nothing; an opaque (kept) node is the cost model's opaque estimate.
double enode_seconds(const TensorEGraph& teg, const cost::CostModel& model, egraph::NodeId n);

// enode_seconds of one e-graph's e-nodes, each computed once: the joint pipeline extracts from
// the same e-graph before fusion (the algebra's best) and after (which adds only kernels), and
// an e-node's cost depends only on its op and its classes' types, which neither changes.
class EnodeCosts {
 public:
  EnodeCosts(const TensorEGraph& teg, const cost::CostModel& model) : teg_(teg), model_(model) {}
  double seconds(egraph::NodeId n);

 private:
  const TensorEGraph& teg_;
  const cost::CostModel& model_;
  std::vector<double> seconds_;  // by e-node; negative where not yet computed
};

struct Extraction {
  NodeChoice choice;
  std::string method;
  double cost_ms = 0;  // predicted DAG cost of the choice (shared e-nodes counted once)
  std::optional<double> bound_ms;
  bool optimal = false;
  // Why it stopped: the DAG-aware search "converged", or at its "work limit" or "time limit";
  // the ILP "optimal" or at its "time limit"; empty for greedy.
  std::string stop_reason;
  double seconds = 0;
  size_t classes = 0, nodes = 0;  // of the problem
};

// Extracts from a clean e-graph (rebuilt). Throws Error when an output has no finite term.
// `starts` are choices the caller already has (the input graph, the algebra's best): the
// DAG-aware search (`dag`, and `ilp`'s warm start) also starts from each, since its local
// optimum depends on where it starts; what it returns is the cheapest it reached.
// `costs`, when given, must be of `teg` and `model`, and keeps its e-node costs for a later call.
Extraction extract(const TensorEGraph& teg, const cost::CostModel& model,
                   const ExtractOptions& options, const std::vector<NodeChoice>& starts = {},
                   EnodeCosts* costs = nullptr);

}  // namespace eqfuse::optimizer
