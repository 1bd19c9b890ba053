#include "optimizer/optimize.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <memory>

#include "codegen/plan.h"
#include "cost/cost_model.h"
#include "egraph/runner.h"
#include "ir/constant_shape_specs.h"
#include "ir/kernel_body.h"
#include "optimizer/fold_weights.h"
#include "optimizer/rule_rewrites.h"
#include "optimizer/verify.h"
#include "rules/library.h"
#include "rules/parser.h"
#include "rules/prove/batch.h"
#include "support/error.h"

namespace eqfuse::optimizer {

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

bool launches_work(const std::string& op) {
  static const char* kFree[] = {"Reshape",  "Flatten", "Squeeze", "Unsqueeze",
                                "Identity", "Dropout", "Constant"};
  return std::none_of(std::begin(kFree), std::end(kFree), [&](const char* f) { return op == f; });
}

std::map<std::string, size_t> launching_ops(const ir::Graph& graph) {
  std::map<std::string, size_t> out;
  for (const ir::Node& n : graph.nodes())
    if (launches_work(n.op_type)) ++out[n.op_type];
  return out;
}

// The rules, proved: every one must be `proved` (cached proofs are reused).
rules::RuleSet proved_rules(const OptimizeOptions& options, OptimizeReport& report,
                            const ProgressFn& progress) {
  // Parsed only: proving checks each rule's types at its bindings too (a right side of the
  // wrong type is refuted, one typed nowhere invalid), and a cached proof needs no enumeration.
  rules::RuleSet set = options.rule_files.empty() ? rules::library_rules()
                                                  : rules::parse_rule_files(options.rule_files);
  auto start = Clock::now();
  std::vector<const rules::Rule*> list;
  for (const rules::Rule& r : set.rules) list.push_back(&r);
  std::unique_ptr<rules::prove::ProofCache> cache;
  if (options.use_proof_cache) cache = std::make_unique<rules::prove::ProofCache>();
  if (progress)
    progress("prove", fmt::format("proving {} rules (cached proofs reused)", list.size()));
  std::vector<rules::prove::RuleProof> proofs =
      rules::prove::prove_rules(list, {}, options.proof_jobs, cache.get());
  for (size_t i = 0; i < proofs.size(); ++i) {
    const auto& p = proofs[i];
    report.rules_from_cache += p.from_cache;
    if (p.verdict == rules::prove::Verdict::Proved) continue;
    throw Error(
        fmt::format("rule '{}' ({}) is not proved: {}{}", p.name, list[i]->where.str(),
                    rules::prove::verdict_name(p.verdict), p.reason.empty() ? "" : ": " + p.reason),
        Error::Kind::CheckFailed);
  }
  report.rules = proofs.size();
  report.proof_seconds = since(start);
  return set;
}

void saturate(TensorEGraph& teg, const rules::RuleSet& rules, const OptimizeOptions& options,
              OptimizeReport& report, const ProgressFn& progress) {
  std::vector<egraph::Rewrite> rewrites = compile_rules(rules);
  egraph::RunnerOptions run;
  run.limits.iterations = options.iterations;
  run.limits.nodes = options.nodes;
  run.limits.seconds = options.seconds;
  run.threads = options.threads;
  run.scheduler = std::make_shared<egraph::BackoffScheduler>();
  if (progress)
    run.hooks.push_back([&](egraph::EGraph& eg, const egraph::RunReport& r) {
      progress("saturate", fmt::format("iteration {}: {} e-nodes, {} e-classes, {:.2f} s",
                                       r.iterations, eg.num_nodes(), eg.num_classes(), r.seconds));
      return true;
    });
  egraph::RunReport ran = egraph::run(*teg.egraph, rewrites, run);
  report.stop_reason = egraph::stop_reason_name(ran.stop_reason);
  report.iterations = ran.iterations;
  report.enodes = ran.nodes;
  report.eclasses = ran.classes;
  report.saturation_seconds = ran.seconds;
  for (const auto& it : ran.per_iteration) report.enodes_per_iteration.push_back(it.nodes);
  for (const auto& r : ran.rules)
    if (r.applications) report.top_rules.emplace_back(r.name, r.applications);
  std::stable_sort(report.top_rules.begin(), report.top_rules.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  if (report.top_rules.size() > 10) report.top_rules.resize(10);
}

}  // namespace

void set_phases(OptimizeOptions& options, const std::vector<std::string>& phases) {
  options.algebra = options.fusion = false;
  for (const std::string& phase : phases) {
    if (phase == "algebra")
      options.algebra = true;
    else if (phase == "fusion")
      options.fusion = true;
    else
      throw Error("phases: unknown phase '" + phase + "' (expected algebra, fusion or both)");
  }
}

size_t count_launching_ops(const ir::Graph& graph) {
  size_t n = 0;
  for (const ir::Node& node : graph.nodes()) n += launches_work(node.op_type);
  return n;
}

size_t count_kernels(const ir::Graph& graph) {
  const std::vector<bool> idle = codegen::nodes_stored_by_producers(graph);
  size_t n = 0;
  for (size_t i = 0; i < graph.nodes().size(); ++i)
    n += !idle[i] && launches_work(graph.nodes()[i].op_type);
  return n;
}

OptimizeResult optimize(const ir::Graph& graph, const OptimizeOptions& options,
                        const ProgressFn& progress) {
  auto start = Clock::now();
  OptimizeResult result;
  OptimizeReport& report = result.report;
  if (options.iterations == 0 || options.nodes == 0 || !(options.seconds > 0))
    fail("optimize: the iteration, node and time limits must be positive");

  cost::CostOptions cost_options;
  cost_options.dim_bindings = options.dim_bindings;
  cost_options.precision = options.precision;
  report.precision = ir::dtype_name(options.precision);
  cost::CostModel model(cost::DeviceProfile::load(options.device), cost_options);
  report.kernels_before = count_kernels(graph);
  report.ops_before = launching_ops(graph);
  report.predicted_ms_before = model.graph_cost(graph).ms();

  // Reshapes of computed shapes (dynamic-batch exports) read constant specs: no shape chain
  // launches work, and rules and fusion see plain layout ops.
  ir::ConstantShapeSpecs specs = ir::with_constant_shape_specs(graph);
  report.shape_specs_made_constant = specs.reshapes;
  TensorEGraph teg = from_graph(specs.graph);
  if (options.algebra) {
    rules::RuleSet rules = proved_rules(options, report, progress);
    saturate(teg, rules, options, report, progress);
  } else {
    report.stop_reason = "algebra off";
  }
  std::vector<NodeChoice> focus = {original_choice(teg)};
  std::optional<EnodeCosts> costs;        // of `teg`, shared by its extractions
  std::optional<std::string> first_stop;  // where the algebra's extraction hit a limit
  if (options.fusion && options.algebra) {
    // The best graph of the algebra alone: the sequential pipeline fuses it as it is; the joint
    // one fuses its e-classes first, among all their alternatives.
    costs.emplace(teg, model);
    Extraction first = extract(teg, model, options.extraction, {}, &*costs);
    if (first.stop_reason == "work limit" || first.stop_reason == "time limit")
      first_stop = first.stop_reason;
    if (options.sequential) {
      costs.reset();  // of the e-graph replaced below
      std::vector<egraph::NodeId> made_from;
      ir::Graph algebraic = to_graph(teg, first.choice, &made_from);
      TensorEGraph next = from_graph(algebraic);
      // The rules that made the algebra's nodes stay their provenance.
      for (size_t i = 0; i < made_from.size(); ++i) {
        const ir::Node& node = algebraic.nodes()[i];
        if (node.outputs.empty()) continue;
        egraph::NodeId n = next.value_node[node.outputs[0]];
        if (n != egraph::kNoId) next.egraph->restamp_origin(n, teg.egraph->origin(made_from[i]));
      }
      teg = std::move(next);
      focus = {original_choice(teg)};
    } else {
      focus.insert(focus.begin(), first.choice);
    }
  }
  FusionOptions fusion = options.fusion_options;
  // Rule files that declare kernel kinds replace the library's (rules/library/fusion.rules).
  if (!fusion.kinds && !options.rule_files.empty()) {
    auto declared =
        std::make_shared<rules::FusionKinds>(rules::parse_rule_files(options.rule_files).fusion);
    if (!declared->empty()) fusion.kinds = std::move(declared);
  }
  const rules::FusionKinds& kinds = fusion.kinds ? *fusion.kinds : rules::library_fusion_kinds();
  if (options.fusion) {
    if (progress) progress("fuse", fmt::format("fusing over {} e-nodes", teg.egraph->num_nodes()));
    report.fusion = fuse(teg, fusion, focus);
    for (const FusionRefusal& r : report.fusion.refused)
      if (progress) progress("fuse", "refused kernel " + r.kernel + ": " + r.reason);
  }

  // Extraction.
  if (progress)
    progress("extract",
             fmt::format("{} extraction over {} e-nodes",
                         extract_method_name(options.extraction.method), teg.egraph->num_nodes()));
  // The search also starts from the graphs fusion grew its kernels on (the input, and the
  // algebra's best in the joint pipeline): their fused forms are a switch or two away.
  if (!costs) costs.emplace(teg, model);
  report.extraction = extract(teg, model, options.extraction, focus, &*costs);
  if (first_stop &&
      (report.extraction.stop_reason == "converged" || report.extraction.stop_reason == "optimal"))
    report.extraction.stop_reason = *first_stop + " (the algebra's extraction)";
  std::vector<egraph::NodeId> made_from;
  ir::Graph optimized = to_graph(teg, report.extraction.choice, &made_from);
  Provenance provenance = node_provenance(teg, optimized, made_from);
  std::vector<Replacement> replaced = replaced_nodes(teg, optimized, made_from);

  // Weight-only subgraphs, computed once now.
  FoldReport folded = fold_weight_subgraphs(optimized);
  report.weights_folded = folded.folded;
  report.folding_note = folded.note;
  optimized = std::move(folded.graph);

  report.kernels_after = count_kernels(optimized);
  report.explained = explain(optimized, provenance, model, kinds);
  report.explained.replaced = std::move(replaced);
  for (const NodeExplanation& k : report.explained.kernels) ++report.kernel_kinds[k.kind];
  report.ops_after = launching_ops(optimized);
  report.predicted_ms_after = model.graph_cost(optimized).ms();

  // Verification: the two graphs in the interpreter.
  if (options.verify) {
    if (progress) progress("verify", "running both graphs in the interpreter");
    auto vstart = Clock::now();
    VerifyOptions v;
    v.rtol = options.verify_rtol;
    v.atol = options.verify_atol;
    v.trials = options.verify_trials;
    v.dim_bindings = options.dim_bindings;
    VerifyResult check = verify_same_outputs(graph, optimized, v);
    report.verify_seconds = since(vstart);
    report.verified = check.outcome;
    report.verify_note = check.note;
    report.verify_max_abs_error = check.max_abs_error;
    if (check.outcome == "failed")
      throw Error("verification failed: " + check.note, Error::Kind::CheckFailed);
  } else {
    report.verify_note = "verification turned off";
  }
  result.graph = std::move(optimized);
  report.seconds = since(start);
  return result;
}

}  // namespace eqfuse::optimizer
