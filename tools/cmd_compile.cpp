// `eqfuse compile MODEL --out DIR [--target cuda|cpu] [--arch sm_90a] [--dim NAME=VALUE...]
// [--precision f32|f16|bf16] [--dynamic-batch] [--no-optimize] [--seed-weights] [--device NAME]
// [--json]`:
// optimizes a model (unless --no-optimize, for a model eqfuse already optimized) and writes a
// standalone source tree of its kernels (codegen/source_tree.h). Symbolic dims stay run-time
// parameters unless --dim fixes them. A lower --precision is checked before the tree is written
// (tools/precision_check.h). Exit 0 written, 1 the precision check failed, 2 bad input or usage,
// 3 an op code generation cannot compute (named).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "codegen/plan.h"
#include "codegen/printer.h"
#include "codegen/source_tree.h"
#include "cost/cost_model.h"
#include "cost/device_profile.h"
#include "cost/stage_costs.h"
#include "frontend/onnx_import.h"
#include "ir/kernel_body.h"
#include "optimizer/optimize.h"
#include "support/error.h"
#include "tools/command.h"
#include "tools/precision_check.h"
#include "tools/progress_line.h"
#include "tools/random_inputs.h"

namespace eqfuse::tools {
namespace {

namespace fs = std::filesystem;

struct CompileArgs {
  std::string model, out, target = "cuda", arch = "sm_90a", device = "h200", precision = "f32";
  std::vector<std::string> dims;
  bool no_optimize = false, json = false, dynamic_batch = false, no_cublaslt = false,
       seed_weights = false;
};

// The cost model's time for each kernel (top-level node) at batch 1 and 64 (every run-time dim
// bound to that size) at the plan's precision, so a GPU run's per-stage times (bench/gpu/run.py)
// check the model: each stage in the form the CUDA printer chose (cost/stage_costs.h), a
// kernel (a step of the plan) the sum of its stages, of which `fixed_ms` is launches and library
// calls, and beside it what the optimizer's model said of the kernel.
void write_predictions(const ir::Graph& graph, const codegen::KernelPlan& plan,
                       const std::string& device, const fs::path& file) {
  const std::vector<int64_t> sizes = {1, 64};
  const cost::DeviceProfile profile = cost::DeviceProfile::load(device);
  const std::vector<codegen::StageForm> forms = codegen::stage_forms(plan, codegen::Target::Cuda);
  std::vector<cost::GraphCost> node_costs;
  std::vector<std::vector<cost::NodeCost>> costs;
  for (int64_t b : sizes) {
    cost::CostOptions o;
    o.precision = plan.precision;
    for (const std::string& d : plan.dims) o.dim_bindings[d] = b;
    const cost::CostModel model(profile, o);
    node_costs.push_back(model.graph_cost(graph));
    costs.push_back(cost::stage_costs(plan, forms, model));
  }
  // The optimizer's figure of each graph node, by its first output (graph_cost lists nodes in
  // graph order); a step without a node (a copy the plan adds) has none.
  std::map<std::string, size_t> node_of;
  for (size_t i = 0; i < graph.nodes().size(); ++i)
    node_of[graph.value(graph.nodes()[i].outputs[0]).name] = i;
  nlohmann::json kernels = nlohmann::json::array();
  for (const codegen::Step& step : plan.steps) {
    auto node = node_of.find(step.name);
    nlohmann::json ms = nlohmann::json::object(), fixed = nlohmann::json::object(),
                   node_ms = nlohmann::json::object(), stages = nlohmann::json::array();
    for (size_t k = 0; k < sizes.size(); ++k) {
      const std::string b = std::to_string(sizes[k]);
      double total = 0, overhead = 0;
      for (size_t st : step.stages) {
        total += costs[k][st].ms();
        overhead += costs[k][st].launch_seconds * 1e3;
      }
      ms[b] = total;
      fixed[b] = overhead;
      node_ms[b] = node == node_of.end() ? 0.0 : node_costs[k].nodes[node->second].cost.ms();
    }
    for (size_t st : step.stages) {
      nlohmann::json stage_ms = nlohmann::json::object();
      for (size_t k = 0; k < sizes.size(); ++k)
        stage_ms[std::to_string(sizes[k])] = costs[k][st].ms();
      stages.push_back({{"index", st}, {"form", forms[st].name}, {"predicted_ms", stage_ms}});
    }
    kernels.push_back(
        {{"name", step.name},
         {"op", node == node_of.end() ? step.label : graph.nodes()[node->second].op_type},
         {"predicted_ms", ms},
         {"fixed_ms", fixed},
         {"stages", stages},
         {"optimizer_ms", node_ms}});
  }
  std::ofstream out(file);
  out << nlohmann::json{{"device", device}, {"kernels", kernels}}.dump(1) << "\n";
}

int run_compile(const CompileArgs& a) {
  codegen::TreeOptions tree;
  if (a.target == "cuda")
    tree.target = codegen::Target::Cuda;
  else if (a.target == "cpu")
    tree.target = codegen::Target::Cpu;
  else
    throw Error("--target " + a.target + ": expected cuda or cpu");
  tree.cuda_arch = a.arch;
  codegen::PlanOptions plan_options;
  plan_options.precision = codegen::parse_precision(a.precision);
  // Before sm_80, 16-bit tiles run on the FP32 units (no mma.sync.m16n8k16).
  if (tree.target == codegen::Target::Cuda)
    plan_options.tensor_cores = codegen::arch_has_tensor_cores(a.arch);
  plan_options.cublaslt = !a.no_cublaslt;
  plan_options.weight_blocks = tree.target == codegen::Target::Cpu;
  auto t0 = std::chrono::steady_clock::now();
  auto seconds = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  ir::Graph graph = frontend::import_onnx(a.model);
  const size_t seeded = a.seed_weights ? seed_missing_weights(graph, 0) : 0;
  if (a.dynamic_batch) codegen::make_batch_dynamic(graph);
  std::map<std::string, int64_t> sizes = parse_dim_options(a.dims);
  if (!sizes.empty()) codegen::specialize_dims(graph, sizes);
  double optimize_s = 0;
  if (!a.no_optimize) {
    optimizer::OptimizeOptions opt;
    opt.device = a.device;
    opt.precision = plan_options.precision;  // fusion is chosen at the traffic it will have
    ProgressLine line;
    graph =
        optimizer::optimize(graph, opt, [&line](const std::string& phase, const std::string& what) {
          line.update("[" + phase + "] " + what);
        }).graph;
    optimize_s = seconds();
  }
  codegen::KernelPlan plan = codegen::make_plan(graph, plan_options);
  std::optional<PrecisionCheck> check;
  if (plan_options.precision != ir::DType::f32) {
    ProgressLine line;
    check = check_precision(graph, plan_options.precision, sizes, a.model,
                            [&line](const std::string& what) { line.update(what); });
    if (check->checked && !check->match)
      throw Error(fmt::format("{}: {}; no tree written", a.model, check->str()),
                  Error::Kind::CheckFailed);
  }
  codegen::TreeReport r = codegen::write_source_tree(plan, a.out, tree);
  // The predictions are of the CUDA forms, which a twin's plan (blocked weights) does not print.
  codegen::PlanOptions for_cuda = plan_options;
  for_cuda.weight_blocks = false;
  write_predictions(graph, plan_options.weight_blocks ? codegen::make_plan(graph, for_cuda) : plan,
                    a.device, fs::path(a.out) / "predictions.json");
  double total_s = seconds();
  if (a.json) {
    nlohmann::json j = {{"model", a.model},
                        {"out", a.out},
                        {"target", a.target},
                        {"kernels", r.kernels},
                        {"stages", r.stages},
                        {"arena_slots", r.arena_slots},
                        {"arena_bytes", plan.arena.total.str()},
                        {"dims", plan.dims},
                        {"weight_bytes", r.weight_bytes},
                        {"weights_written", r.weights_written},
                        {"seeded_weights", seeded},
                        {"source_bytes", r.source_bytes},
                        {"optimize_seconds", optimize_s},
                        {"seconds", total_s}};
    j["precision"] = {{"dtype", a.precision}};
    if (check) {
      j["precision"]["checked"] = check->checked;
      if (!check->checked) j["precision"]["not_checked"] = check->not_checked;
      j["precision"]["rtol"] = check->rtol;
      j["precision"]["atol"] = check->atol;
      if (check->checked) {
        j["precision"]["max_abs_error"] = check->max_abs_error;
        j["precision"]["max_rel_error"] = check->max_rel_error;
      }
    }
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::string dims = plan.dims.empty() ? "static shapes" : "run-time dims ";
  for (size_t k = 0; k < plan.dims.size(); ++k) dims += (k ? ", " : "") + plan.dims[k];
  std::cout << fmt::format(
      "wrote {} ({}): {} kernels in {} stages, {}; arena {} bytes in {} slots; weights {:.2f} MB "
      "{}; {:.2f} s\n",
      a.out, a.target, r.kernels, r.stages, dims, plan.arena.total.str(), r.arena_slots,
      double(r.weight_bytes) / 1e6,
      !r.weights_written ? "not written (structure-only model; bench seeds them)"
      : seeded           ? fmt::format("in weights.bin ({} made up: --seed-weights)", seeded)
                         : std::string("in weights.bin"),
      total_s);
  if (check) std::cout << check->str() << "\n";
  std::cout << fmt::format("build: cmake -S {} -B {}/build && cmake --build {}/build\n", a.out,
                           a.out, a.out);
  std::cout << fmt::format("check: (cd {} && build/bench --test-data TEST_DATA_DIR)\n", a.out);
  const bool convolutions = std::any_of(plan.stages.begin(), plan.stages.end(), [](const auto& s) {
    return s.kind == codegen::StageKind::Conv;
  });
  if (a.target == "cuda" && convolutions)
    std::cout
        << "cuDNN: found by CMake beside the CUDA toolkit or at -DCUDNN_ROOT=DIR, "
           "convolutions take the fastest of cuDNN (fused with their bias, residual and ReLU "
           "where it can) and their own kernels at their first run (EQFUSE_CONV=kernels|cudnn|"
           "cudnn-unfused forces one, EQFUSE_CONV_REPORT=1 prints the choices)\n";
  return 0;
}

RegisterCommand compile_command{
    {"compile", "Optimize a model and write its kernels as a standalone CUDA or C++ source tree",
     [](CLI::App& app) {
       auto args = std::make_shared<CompileArgs>();
       app.add_option("model", args->model, "the ONNX model")->required();
       app.add_option("--out", args->out, "the folder to write")->required();
       app.add_option("--target", args->target, "cuda (default) or cpu (the C++ twin)");
       app.add_option("--arch", args->arch,
                      "CUDA architecture (default sm_90a; before sm_80, 16-bit attention and "
                      "convolutions run without tensor cores)");
       app.add_option("--dim", args->dims,
                      "NAME=VALUE: fix a symbolic dim (default: dims stay run-time parameters)");
       app.add_option("--device", args->device, "device profile for the optimizer (default h200)");
       app.add_option("--precision", args->precision,
                      "f32 (default), f16 or bf16: store weights and intermediates at 16 bits, "
                      "computing in f32 (an approximation, checked with the C++ twin)");
       app.add_flag("--no-optimize", args->no_optimize,
                    "compile the model as it is (e.g. one eqfuse optimize wrote)");
       app.add_flag("--dynamic-batch", args->dynamic_batch,
                    "make the leading dim of every input the run-time dim `batch` (for models "
                    "exported at a fixed batch)");
       app.add_flag("--no-cublaslt", args->no_cublaslt,
                    "CUDA: library products through cuBLAS and kernels, never cuBLASLt's "
                    "epilogues");
       app.add_flag("--seed-weights", args->seed_weights,
                    "a structure-only model (its weights file absent): write weights made up "
                    "from a fixed seed, planned and laid out as real ones would be (for timing)");
       app.add_flag("--json", args->json, "stdout: a summary as one JSON object");
       app.footer(
           "Examples:\n  eqfuse compile model.onnx --target cpu --out twin\n"
           "  eqfuse compile model.onnx --target cuda --arch sm_90a --out gpu --dim batch=8");
       return CommandMain([args] { return run_compile(*args); });
     }}};

}  // namespace
}  // namespace eqfuse::tools
