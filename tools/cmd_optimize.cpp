// `eqfuse optimize MODEL -o OUT.onnx [--device NAME|FILE] [--dim NAME=VALUE...] [--rules FILE...]
// [--time-limit S] [--node-limit N] [--iter-limit N] [--extract dag|ilp|greedy] [--ilp-time S]
// [--dag-work N] [--phases algebra,fusion] [--sequential] [--precision f32|f16|bf16]
// [--report FILE.json] [--json] [--no-verify] [--progress] [--explain]`: optimizes a model
// (optimizer/optimize.h) and writes the result as ONNX. Prints a summary (kernels and predicted
// ms before and after, stop reason, extraction, verification); --json puts the report on stdout
// as one JSON object; --explain prints why each kernel and rewritten node is there (the rules
// behind it, optimizer/explain.h). Exit 0 done, 1 a rule not proved or verification failed, 2 bad
// input or usage, 3 unsupported.
#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "codegen/plan.h"
#include "frontend/onnx_export.h"
#include "frontend/onnx_import.h"
#include "optimizer/optimize.h"
#include "optimizer/report_json.h"
#include "support/error.h"
#include "tools/command.h"
#include "tools/progress_line.h"
#include "tools/random_inputs.h"

namespace eqfuse::tools {
namespace {

struct OptimizeArgs {
  std::string model, out, report, extract = "dag", phases = "algebra,fusion", precision = "f32";
  bool sequential = false;
  std::vector<std::string> dims;
  bool json = false, no_verify = false, progress = false, explain = false;
  optimizer::OptimizeOptions options;
};

std::string join(const std::vector<std::string>& items, const char* sep) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : sep) + s;
  return out;
}

// Why each kernel and rewritten node of the result is there: the rules behind it.
void print_explanations(const optimizer::Explanations& why) {
  std::cout << "why:\n";
  for (const optimizer::NodeExplanation& k : why.kernels) {
    std::vector<std::string> ops;
    for (const optimizer::FusedOp& op : k.fused_ops)
      ops.push_back(op.rule.empty() ? op.op : op.op + "[" + op.rule + "]");
    std::cout << fmt::format("  {} -> {} ({}, {:.4f} ms): fuses {} op{} ({} from the model): {}\n",
                             k.node, k.output, k.kind, k.predicted_ms, k.fused_ops.size(),
                             k.fused_ops.size() == 1 ? "" : "s", k.ops_from_input(),
                             join(ops, " "));
    std::cout << "      rules: "
              << (k.rules.empty() ? "none (the model's own ops, fused)" : join(k.rules, " -> "))
              << "\n";
  }
  for (const optimizer::NodeExplanation& r : why.rewritten)
    std::cout << fmt::format("  {} -> {} ({}, {:.4f} ms): made by {}\n", r.node, r.output, r.op,
                             r.predicted_ms, join(r.rules, " -> "));
  for (const optimizer::Replacement& r : why.replaced)
    std::cout << fmt::format("  {} ({}) of the model is now {}: by {}\n", r.node, r.op, r.now,
                             join(r.rules, " -> "));
  if (why.kernels.empty() && why.rewritten.empty() && why.replaced.empty())
    std::cout << "  no node of the result was made by a rule or by fusion\n";
}

void print_summary(const optimizer::OptimizeReport& r, const std::string& out) {
  std::cout << fmt::format("{:<22} {:>10} {:>10}\n", "", "before", "after");
  std::cout << fmt::format("{:<22} {:>10} {:>10}\n", "kernels", r.kernels_before, r.kernels_after);
  std::cout << fmt::format("{:<22} {:>10.4f} {:>10.4f}\n",
                           r.precision == "f32" ? "predicted ms" : "predicted ms at " + r.precision,
                           r.predicted_ms_before, r.predicted_ms_after);
  std::cout << fmt::format("rules: {} proved ({} from the cache, {:.2f} s)\n", r.rules,
                           r.rules_from_cache, r.proof_seconds);
  std::cout << fmt::format(
      "saturation: {} iterations, {} e-nodes, {} e-classes, stop: {} ({:.2f} s)\n", r.iterations,
      r.enodes, r.eclasses, r.stop_reason, r.saturation_seconds);
  if (r.fusion.rounds)
    std::cout << fmt::format(
        "fusion: {} rounds, {} kernel e-nodes ({} -> {} e-nodes), {} refused, stop: {} ({:.2f} "
        "s)\n",
        r.fusion.rounds, r.fusion.kernels_added, r.fusion.enodes_before, r.fusion.enodes_after,
        r.fusion.refused.size(), r.fusion.stop_reason, r.fusion.seconds);
  if (!r.kernel_kinds.empty()) {
    std::cout << "fused kernels:";
    for (const auto& [kind, n] : r.kernel_kinds) std::cout << fmt::format(" {} {}", kind, n);
    std::cout << "\n";
  }
  std::string bound =
      r.extraction.bound_ms ? fmt::format(", bound {:.4f}", *r.extraction.bound_ms) : "";
  // A search cut short says which limit stopped it; only a time limit makes the output depend
  // on the machine.
  const std::string& why = r.extraction.stop_reason;
  std::string stop = why.empty() || why == "converged" || why == "optimal" ? "" : ", stop: " + why;
  std::cout << fmt::format("extraction: {}, cost {:.4f} ms{}{}{} ({:.2f} s)\n", r.extraction.method,
                           r.extraction.cost_ms, bound, r.extraction.optimal ? ", optimal" : "",
                           stop, r.extraction.seconds);
  if (!r.top_rules.empty()) {
    std::cout << "rules applied most:";
    for (size_t i = 0; i < r.top_rules.size() && i < 5; ++i)
      std::cout << fmt::format(" {} ({})", r.top_rules[i].first, r.top_rules[i].second);
    std::cout << "\n";
  }
  std::cout << "launching ops after:";
  for (const auto& [op, n] : r.ops_after) std::cout << fmt::format(" {} {}", op, n);
  std::cout << "\n";
  if (r.shape_specs_made_constant)
    std::cout << fmt::format("reshapes of computed shapes made constant: {}\n",
                             r.shape_specs_made_constant);
  if (r.weights_folded)
    std::cout << fmt::format("weight-only nodes folded: {}\n", r.weights_folded);
  if (!r.folding_note.empty()) std::cout << r.folding_note << "\n";
  std::cout << fmt::format("verification: {} ({})\n", r.verified, r.verify_note);
  std::cout << fmt::format("wrote {} in {:.2f} s\n", out, r.seconds);
}

int run_optimize(OptimizeArgs& args) {
  auto method = optimizer::parse_extract_method(args.extract);
  if (!method) fail("--extract '" + args.extract + "': expected dag, ilp or greedy");
  args.options.extraction.method = *method;
  args.options.dim_bindings = parse_dim_options(args.dims);
  args.options.precision = codegen::parse_precision(args.precision);
  args.options.verify = !args.no_verify;
  std::vector<std::string> phases;
  for (size_t at = 0; at <= args.phases.size();) {
    size_t comma = std::min(args.phases.find(',', at), args.phases.size());
    phases.push_back(args.phases.substr(at, comma - at));
    at = comma + 1;
  }
  optimizer::set_phases(args.options, phases);
  args.options.sequential = args.sequential;
  ir::Graph graph = frontend::import_onnx(args.model);
  ProgressLine line(args.progress);
  optimizer::ProgressFn progress;
  if (line.enabled() && (args.progress || !args.json))
    progress = [&line](const std::string& phase, const std::string& what) {
      line.update(fmt::format("[{}] {}", phase, what));
    };
  optimizer::OptimizeResult result = optimizer::optimize(graph, args.options, progress);
  line.clear();
  frontend::export_onnx(result.graph, args.out);
  nlohmann::json j = optimizer::report_json(result.report);
  j["output"] = args.out;
  if (!args.report.empty()) {
    std::ofstream f(args.report);
    if (!f) fail("cannot write the report to '" + args.report + "'");
    f << j.dump(1) << "\n";
  }
  if (args.json)
    std::cout << j.dump(1) << "\n";
  else
    print_summary(result.report, args.out);
  if (args.explain && !args.json) print_explanations(result.report.explained);
  return 0;
}

RegisterCommand optimize_command{
    {"optimize", "Optimize a model: proved rewrites, cost-based extraction, verified output",
     [](CLI::App& app) {
       auto args = std::make_shared<OptimizeArgs>();
       app.add_option("model", args->model, "the ONNX model")->required();
       app.add_option("-o,--out", args->out, "the optimized ONNX model to write")->required();
       app.add_option("--device", args->options.device,
                      "device profile: a6000, a100, h100, h200, h200-calibrated or FILE.json "
                      "(default h200)");
       app.add_option("--dim", args->dims, "NAME=VALUE: a symbolic dim's size for the cost model");
       app.add_option("--precision", args->precision,
                      "f32 (default), f16 or bf16: price f32 tensors as `compile --precision` will "
                      "store them (the graph stays f32)");
       app.add_option("--rules", args->options.rule_files,
                      "rule files to use instead of the library (each proved before use)");
       app.add_option("--time-limit", args->options.seconds, "saturation time limit in seconds")
           ->check(CLI::PositiveNumber);
       app.add_option("--node-limit", args->options.nodes, "saturation e-node limit")
           ->check(CLI::PositiveNumber);
       app.add_option("--iter-limit", args->options.iterations, "saturation iteration limit")
           ->check(CLI::PositiveNumber);
       app.add_option("--extract", args->extract, "extraction: dag (default), ilp or greedy");
       app.add_option(
           "--dag-work", args->options.extraction.dag_work,
           fmt::format("the DAG-aware extraction's budget in its own steps, so that the output "
                       "does not depend on the machine or its load (default {}; a {} s time "
                       "limit stays as a safety net)",
                       args->options.extraction.dag_work, args->options.extraction.dag_seconds));
       app.add_option("--ilp-time", args->options.extraction.ilp_seconds,
                      "the ILP's time limit in seconds (default 10)")
           ->check(CLI::PositiveNumber);
       app.add_option("--dump-extraction", args->options.extraction.dump_path,
                      "also write the costed extraction problem (egraph-serialize JSON, ms) "
                      "for `eqfuse extract`");
       app.add_option("--phases", args->phases,
                      "which phases run: algebra, fusion or algebra,fusion (default)");
       app.add_flag("--sequential", args->sequential,
                    "extract after algebra, then fuse that graph (for comparison with the joint "
                    "default)");
       app.add_option("--report", args->report, "also write the report as JSON to this file");
       app.add_flag("--json", args->json, "stdout: the report as one JSON object");
       app.add_flag("--no-verify", args->no_verify, "skip running both graphs in the interpreter");
       app.add_flag("--progress", args->progress,
                    "progress lines on stderr (default on a terminal)");
       app.add_option("--threads", args->options.threads, "saturation search threads (default 1)")
           ->check(CLI::PositiveNumber);
       app.add_flag("--explain", args->explain,
                    "print, for each kernel and rewritten node, the rules behind it (the report's "
                    "kernels[] and rewritten[] always carry it)");
       app.footer(
           "Every rule is proved with Z3 before use (cached proofs reused); a rule that is not "
           "proved refuses the run (exit 1). Limits reached are a stop reason, not an error. "
           "Verification runs the original and optimized graphs in the interpreter on random "
           "inputs (rtol 1e-3, atol 1e-4) where the weights exist; a mismatch is exit 1.\n\n"
           "Examples:\n  eqfuse optimize examples/models/mlp/model.onnx -o out.onnx --explain\n"
           "  eqfuse optimize model.onnx -o out.onnx --device a100 --dim batch=32 --json\n"
           "  eqfuse optimize model.onnx -o out.onnx --rules my.rules --phases algebra\n"
           "  eqfuse optimize model.onnx -o out.onnx --extract ilp --ilp-time 30 --report r.json");
       return CommandMain([args] { return run_optimize(*args); });
     }}};

}  // namespace
}  // namespace eqfuse::tools
