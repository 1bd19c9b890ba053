// `eqfuse info MODEL [--json]`: what a model is — inputs and outputs with shapes, op histogram,
// parameter count and bytes, the ops eqfuse does not know (opaque). Works on structure-only
// models: weights are never read.
#include <fmt/format.h>

#include <chrono>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "frontend/onnx_import.h"
#include "ir/kernel_body.h"
#include "support/error.h"
#include "tools/command.h"
#include "tools/model_summary.h"

namespace eqfuse::tools {
namespace {

struct InfoOptions {
  std::string model;
  bool json = false;
};

int run_info(const InfoOptions& opt) {
  auto start = std::chrono::steady_clock::now();
  ir::Graph graph;
  try {
    graph = frontend::import_onnx(opt.model);
  } catch (const Error& e) {
    std::cerr << "eqfuse info: " << e.what() << "\n";
    if (opt.json) std::cout << nlohmann::json{{"error", e.what()}}.dump(2) << "\n";
    return 2;
  }
  double import_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();

  std::map<std::string, int> histogram;
  std::map<std::string, int> opaque;
  for (const ir::Node& n : graph.nodes()) {
    std::string op = n.domain.empty() ? n.op_type : n.domain + "." + n.op_type;
    ++histogram[op];
    if (n.is_opaque()) ++opaque[op];
  }
  // Fused kernels (ir/kernel_body.h): each with its body.
  nlohmann::json kernels = nlohmann::json::array();
  for (const ir::Node& n : graph.nodes()) {
    if (n.op_type != ir::kKernelOp || !n.domain.empty()) continue;
    nlohmann::json inputs = nlohmann::json::array();
    for (ir::ValueId v : n.inputs) inputs.push_back(graph.value(v).name);
    kernels.push_back({{"name", n.name},
                       {"body", n.attrs.get_string(ir::kKernelBodyAttr, "")},
                       {"inputs", inputs},
                       {"output", graph.value(n.outputs[0]).name},
                       {"type", graph.value(n.outputs[0]).type.str()}});
  }
  std::vector<std::string> missing = missing_weight_files(graph);
  int64_t weights = static_cast<int64_t>(graph.weights().size());

  if (opt.json) {
    nlohmann::json j;
    j["model"] = opt.model;
    j["graph"] = graph.name;
    auto values = [&](const std::vector<ir::ValueId>& ids) {
      nlohmann::json arr = nlohmann::json::array();
      for (ir::ValueId id : ids) {
        nlohmann::json v = type_json(graph.value(id).type);
        v["name"] = graph.value(id).name;
        arr.push_back(v);
      }
      return arr;
    };
    j["inputs"] = values(graph.inputs());
    j["outputs"] = values(graph.outputs());
    j["nodes"] = graph.nodes().size();
    j["ops"] = histogram;
    j["opaque_ops"] = opaque;
    j["kernels"] = kernels;
    j["parameters"] = {{"count", graph.parameter_count()},
                       {"bytes", graph.parameter_bytes()},
                       {"tensors", weights},
                       {"missing_weight_files", missing}};
    j["opsets"] = graph.opsets;
    j["import_ms"] = import_ms;
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << fmt::format("model   {}\ngraph   {} ({} nodes, imported in {:.1f} ms)\n", opt.model,
                           graph.name, graph.nodes().size(), import_ms);
  for (ir::ValueId id : graph.inputs()) {
    std::cout << fmt::format("input   {} {}\n", graph.value(id).name, graph.value(id).type.str());
  }
  for (ir::ValueId id : graph.outputs()) {
    std::cout << fmt::format("output  {} {}\n", graph.value(id).name, graph.value(id).type.str());
  }
  std::cout << fmt::format("params  {} in {} tensors, {:.2f} MB\n", graph.parameter_count(),
                           weights, static_cast<double>(graph.parameter_bytes()) / 1e6);
  for (const auto& file : missing) {
    std::cout << fmt::format(
        "weights missing: {} (structure only: inspect and optimize, not run)\n", file);
  }
  std::vector<std::pair<std::string, int>> ops(histogram.begin(), histogram.end());
  std::stable_sort(ops.begin(), ops.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::cout << "ops\n";
  for (const auto& [op, count] : ops) {
    std::cout << fmt::format("  {:<24} {:>5}{}\n", op, count, opaque.count(op) ? "  (opaque)" : "");
  }
  for (const auto& k : kernels) {
    std::string ins;
    for (const auto& i : k["inputs"]) ins += (ins.empty() ? "" : ", ") + i.get<std::string>();
    std::cout << fmt::format("kernel  {} {} = {}  [{}]\n", k["output"].get<std::string>(),
                             k["type"].get<std::string>(), k["body"].get<std::string>(), ins);
  }
  if (opaque.empty()) {
    std::cout << "opaque  none: every op is in the op table\n";
  } else {
    std::string list;
    for (const auto& [op, count] : opaque) list += (list.empty() ? "" : ", ") + op;
    std::cout << fmt::format("opaque  {} (eqfuse keeps them but cannot run or rewrite them)\n",
                             list);
  }
  return 0;
}

RegisterCommand info_command{
    {"info", "Describe a model: inputs, outputs, op histogram, parameters, opaque ops",
     [](CLI::App& app) {
       auto opt = std::make_shared<InfoOptions>();
       app.add_option("model", opt->model, "ONNX model file")->required();
       app.add_flag("--json", opt->json, "Print one JSON document on stdout");
       app.footer(
           "Examples:\n  eqfuse info examples/models/mlp/model.onnx\n  eqfuse info model.onnx "
           "--json");
       return CommandMain([opt] { return run_info(*opt); });
     }}};

}  // namespace
}  // namespace eqfuse::tools
