// `eqfuse cost MODEL --device NAME [--tf32] [--precision f32|f16|bf16] [--dim NAME=SIZE ...]
// [--json]`: the predicted time of each node of a model on a GPU, what bounds it (compute,
// memory, launch, or free when codegen folds it away), and the total, from the analytic cost
// model (cost/cost_model.h); --precision prices f32 tensors stored at 16 bits, as
// `compile --precision` generates them.
#include <fmt/format.h>

#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "codegen/plan.h"
#include "cost/cost_model.h"
#include "frontend/onnx_import.h"
#include "support/error.h"
#include "tools/command.h"
#include "tools/random_inputs.h"

namespace eqfuse::tools {
namespace {

struct CostArgs {
  std::string model;
  std::string device;
  bool tf32 = false;
  std::string precision = "f32";
  std::vector<std::string> binds;
  bool json = false;
};

int run_cost(const CostArgs& args) {
  cost::CostOptions options;
  options.allow_tf32 = args.tf32;
  options.precision = codegen::parse_precision(args.precision);
  options.dim_bindings = parse_dim_options(args.binds);
  cost::CostModel model(cost::DeviceProfile::load(args.device), options);
  ir::Graph graph = frontend::import_onnx(args.model);
  cost::GraphCost total = model.graph_cost(graph);

  if (args.json) {
    nlohmann::json nodes = nlohmann::json::array();
    for (const auto& n : total.nodes) {
      nodes.push_back({{"name", n.name},
                       {"op", n.op},
                       {"ms", n.cost.ms()},
                       {"bound", cost::bound_name(n.cost.bound)},
                       {"flops", n.cost.flops},
                       {"bytes", n.cost.bytes}});
    }
    nlohmann::json j = {{"model", args.model},     {"device", model.profile().name},
                        {"allow_tf32", args.tf32}, {"precision", args.precision},
                        {"total_ms", total.ms()},  {"nodes", nodes}};
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << fmt::format("{:<40} {:<20} {:>12} {:>8}\n", "node", "op", "ms", "bound");
  std::map<std::string_view, std::pair<int, double>> by_bound;
  for (const auto& n : total.nodes) {
    std::cout << fmt::format("{:<40} {:<20} {:>12.6f} {:>8}\n", n.name, n.op, n.cost.ms(),
                             cost::bound_name(n.cost.bound));
    auto& [count, ms] = by_bound[cost::bound_name(n.cost.bound)];
    ++count;
    ms += n.cost.ms();
  }
  std::cout << fmt::format(
      "\ndevice {} ({}){}{}\n", model.profile().name, model.profile().description,
      args.tf32 ? ", TF32 allowed" : "",
      args.precision == "f32" ? "" : ", f32 tensors stored at " + args.precision);
  for (const auto& [bound, entry] : by_bound)
    std::cout << fmt::format("{:<8} {:>5} nodes {:>12.6f} ms\n", bound, entry.first, entry.second);
  std::cout << fmt::format("total    {:>5} nodes {:>12.6f} ms\n", total.nodes.size(), total.ms());
  return 0;
}

RegisterCommand cost_command{
    {"cost", "Predict the GPU time of each node of a model", [](CLI::App& app) {
       auto args = std::make_shared<CostArgs>();
       app.add_option("model", args->model, "ONNX model file")->required();
       app.add_option("--device", args->device,
                      "builtin device (a6000, a100, h100, h200) or a profile JSON file")
           ->required();
       app.add_flag("--tf32", args->tf32, "let f32 contractions use TF32 tensor cores");
       app.add_option("--precision", args->precision,
                      "f32 (default), f16 or bf16: price f32 tensors stored at 16 bits, as "
                      "`compile --precision` generates them");
       app.add_option("--dim", args->binds,
                      "NAME=SIZE: the size of a symbolic dim (repeatable; others default to 1)");
       app.add_flag("--json", args->json, "one JSON document on stdout");
       app.footer(
           "Examples:\n  eqfuse cost examples/models/mlp/model.onnx --device h200\n  eqfuse cost "
           "model.onnx --device a100 --dim batch=64 --json");
       return CommandMain([args] { return run_cost(*args); });
     }}};

}  // namespace
}  // namespace eqfuse::tools
