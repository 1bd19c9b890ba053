#include "optimizer/extraction.h"

#include <algorithm>
#include <chrono>
#include <set>
#include <unordered_map>

#include "egraph/serialize.h"
#include "egraph/symbol.h"
#include "extract/dag.h"
#include "extract/greedy.h"
#include "extract/ilp.h"
#include "ir/kernel_body.h"
#include "optimizer/fold_weights.h"
#include "support/error.h"

namespace eqfuse::optimizer {

const char* extract_method_name(ExtractMethod m) {
  switch (m) {
    case ExtractMethod::Greedy:
      return "greedy";
    case ExtractMethod::Dag:
      return "dag";
    case ExtractMethod::Ilp:
      return "ilp";
  }
  return "dag";
}

std::optional<ExtractMethod> parse_extract_method(std::string_view name) {
  for (ExtractMethod m : {ExtractMethod::Greedy, ExtractMethod::Dag, ExtractMethod::Ilp})
    if (name == extract_method_name(m)) return m;
  return std::nullopt;
}

namespace {

// A Concat whose parts are made by our own loops: codegen has their producers write their slices
// of its buffer where each is a pointwise or convolution stage that nothing else reads (codegen/
// plan.cpp, "Concat in place"), and the Concat does nothing. An e-node cannot see which e-nodes
// will make its parts, nor who else will read them, so it is priced so where each part is a
// distinct e-class that an elementwise op, a Conv or a kernel can make and that holds no leaf
// (a model input, which the extraction could choose, is copied), the common case of the models
// (a CNN's branches), as a kernel's Concat of its own inputs is (cost/cost_model.cpp). Else it
// is priced as the copy it is.
bool concat_in_place(const TensorEGraph& teg, egraph::NodeId n) {
  const egraph::EGraph& eg = *teg.egraph;
  std::set<egraph::EClassId> parts;
  for (egraph::EClassId child : eg.children(n)) {
    const egraph::EClassId part = eg.find(child);
    if (!parts.insert(part).second || teg.data(part).constant) return false;
    const auto nodes = eg.class_nodes(part);
    if (std::any_of(nodes.begin(), nodes.end(),
                    [&](egraph::NodeId m) { return eg.children(m).empty(); }))
      return false;
    const bool in_loops = std::any_of(nodes.begin(), nodes.end(), [&](egraph::NodeId m) {
      const auto view = teg.analysis->op_view(eg, m);
      if (!view) return false;
      const ir::Node& op = view->app.node;
      return op.op_type == "Conv" || op.op_type == ir::kKernelOp ||
             op.def->fusion == ir::FusionClass::Elementwise ||
             op.def->fusion == ir::FusionClass::Broadcast;
    });
    if (!in_loops) return false;
  }
  return true;
}

}  // namespace

double enode_seconds(const TensorEGraph& teg, const cost::CostModel& model, egraph::NodeId n) {
  const egraph::EGraph& eg = *teg.egraph;
  const TensorData& own = teg.data(eg.find(n));
  if (!own.valid) return 0;
  if (const auto* kept = teg.analysis->kept_node_of(eg, n)) {
    std::vector<ir::TensorType> inputs;
    for (egraph::EClassId c : eg.children(n))
      if (const ir::TensorType* t = teg.data(c).type()) inputs.push_back(*t);
    return model.opaque_cost(kept->node.op_type, inputs, kept->types).seconds;
  }
  std::optional<TensorAnalysis::OpView> view = teg.analysis->op_view(eg, n);
  if (!view) return 0;  // leaves, projections
  if (view->app.node.op_type == "Concat" && concat_in_place(teg, n)) return 0;
  // Computed from weights alone: folded at optimize time (optimizer/fold_weights.h).
  if (own.constant) {
    bool weight_only = foldable_op(*view->app.node.def);
    for (egraph::EClassId c : eg.children(n)) {
      const TensorData& d = teg.data(c);
      weight_only = weight_only && (d.none || d.constant);
    }
    if (weight_only && (!eg.children(n).empty() || view->app.node.op_type == "Constant")) return 0;
  }
  try {
    return model.node_cost(view->app.context(), own.types).seconds;
  } catch (const std::exception&) {
    // A node whose work the cost model cannot count: charged as an opaque op (a launch plus its
    // bytes), never as free, so extraction does not prefer what it cannot price.
    std::vector<ir::TensorType> inputs;
    for (const ir::TensorType* t : view->app.input_types)
      if (t) inputs.push_back(*t);
    return model.opaque_cost(view->app.node.op_type, inputs, own.types).seconds;
  }
}

double EnodeCosts::seconds(egraph::NodeId n) {
  if (n >= seconds_.size()) seconds_.resize(teg_.egraph->num_node_slots(), -1);
  if (seconds_[n] < 0) seconds_[n] = enode_seconds(teg_, model_, n);
  return seconds_[n];
}

namespace {

// A NodeChoice as a start for the extractor: its e-nodes on the e-classes it reaches from the
// roots, kNoNode elsewhere and below an e-class it does not choose or chose untyped.
extract::Choice start_choice(
    const TensorEGraph& teg, const extract::ExtractionProblem& problem, const NodeChoice& choice,
    const std::vector<egraph::EClassId>& class_of,
    const std::unordered_map<egraph::NodeId, extract::NodeIndex>& node_index) {
  const egraph::EGraph& eg = *teg.egraph;
  extract::Choice out(problem.num_classes(), extract::kNoNode);
  std::vector<bool> seen(problem.num_classes(), false);
  std::vector<extract::ClassIndex> stack(problem.roots().begin(), problem.roots().end());
  while (!stack.empty()) {
    extract::ClassIndex c = stack.back();
    stack.pop_back();
    if (seen[c]) continue;
    seen[c] = true;
    egraph::NodeId n = egraph::kNoId;
    try {
      n = choice(class_of[c]);
    } catch (const Error&) {
      continue;
    }
    if (n == egraph::kNoId) continue;
    auto it = node_index.find(eg.live_node(n));
    if (it == node_index.end() || problem.node_class(it->second) != c) continue;
    out[c] = it->second;
    for (extract::ClassIndex k : problem.children(it->second)) stack.push_back(k);
  }
  return out;
}

}  // namespace

Extraction extract(const TensorEGraph& teg, const cost::CostModel& model,
                   const ExtractOptions& options, const std::vector<NodeChoice>& starts,
                   EnodeCosts* costs) {
  auto start = std::chrono::steady_clock::now();
  std::optional<EnodeCosts> own;
  if (!costs) costs = &own.emplace(teg, model);
  const egraph::EGraph& eg = *teg.egraph;
  extract::ExtractionProblem problem;
  std::unordered_map<egraph::EClassId, extract::ClassIndex> index;
  std::vector<egraph::EClassId> class_of;
  for (egraph::EClassId c : eg.classes()) {
    index.emplace(c, problem.add_class());
    class_of.push_back(c);
  }
  std::vector<egraph::NodeId> node_of;
  std::vector<extract::ClassIndex> children;
  for (egraph::EClassId c : eg.classes()) {
    for (egraph::NodeId n : eg.class_nodes(c)) {
      // Only e-nodes whose class and children have types can be rebuilt into a graph; the
      // omitted-input leaf (None) has none, and a node with an omitted input before a given
      // one (Clip(x, , max), Resize(x, , scales)) needs it.
      if (!teg.data(c).valid && !teg.data(c).none) continue;
      bool typed = true;
      children.clear();
      for (egraph::EClassId child : eg.children(n)) {
        egraph::EClassId k = eg.find(child);
        const TensorData& d = teg.data(k);
        typed = typed && (d.valid || d.none);
        children.push_back(index.at(k));
      }
      if (!typed) continue;
      // Milliseconds: the ILP's tolerances suit numbers near 1 better than seconds.
      problem.add_node(index.at(c), costs->seconds(n) * 1e3, children);
      node_of.push_back(n);
    }
  }
  for (egraph::EClassId out : teg.outputs) problem.add_root(index.at(eg.find(out)));
  std::unordered_map<egraph::NodeId, extract::NodeIndex> node_index;
  for (size_t k = 0; k < node_of.size(); ++k) node_index.emplace(node_of[k], extract::NodeIndex(k));
  if (!options.dump_path.empty()) {
    std::vector<std::string> ops;
    ops.reserve(node_of.size());
    for (egraph::NodeId n : node_of) ops.push_back(egraph::node_text(eg, n));
    egraph::write_serialized_egraph(extract::to_serialized(problem, ops), options.dump_path);
  }
  extract::DagOptions dag;
  dag.work_limit = options.dag_work;
  dag.time_limit_seconds = options.dag_seconds;
  for (const NodeChoice& start : starts)
    dag.starts.push_back(start_choice(teg, problem, start, class_of, node_index));

  extract::ExtractionResult result;
  switch (options.method) {
    case ExtractMethod::Greedy:
      result = extract::extract_greedy(problem);
      break;
    case ExtractMethod::Dag: {
      result = extract::extract_dag(problem, dag);
      break;
    }
    case ExtractMethod::Ilp: {
      extract::IlpOptions ilp;
      ilp.time_limit_seconds = options.ilp_seconds;
      // A short --ilp-time bounds the warm start's search too (the ILP's own clock starts after
      // it, so the two take at most twice the limit).
      dag.time_limit_seconds = std::min(dag.time_limit_seconds, std::max(0.0, options.ilp_seconds));
      ilp.warm_start = extract::extract_dag(problem, dag).choice;
      result = extract::extract_ilp(problem, ilp);
      // Only a proof ends the ILP before its time limit.
      result.stop_reason = result.optimal ? "optimal" : "time limit";
      break;
    }
  }
  for (extract::ClassIndex r : problem.roots())
    if (r >= result.choice.size() || result.choice[r] == extract::kNoNode)
      fail("extraction: an output of the graph has no finite term");

  Extraction out;
  out.method = extract_method_name(options.method);
  out.cost_ms = result.dag_cost;
  out.bound_ms = result.bound;
  out.optimal = result.optimal;
  out.stop_reason = result.stop_reason;
  out.classes = problem.num_classes();
  out.nodes = problem.num_nodes();
  auto chosen = std::make_shared<std::unordered_map<egraph::EClassId, egraph::NodeId>>();
  for (size_t k = 0; k < result.choice.size(); ++k)
    if (result.choice[k] != extract::kNoNode) (*chosen)[class_of[k]] = node_of[result.choice[k]];
  const egraph::EGraph* graph = &eg;
  out.choice = [chosen, graph](egraph::EClassId c) {
    auto it = chosen->find(graph->find(c));
    if (it == chosen->end()) fail("extraction: no e-node chosen for an e-class the graph needs");
    return it->second;
  };
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace eqfuse::optimizer
