// Every model in ../shared/models optimizes with the default options, and every one with
// weights gives an output that matches its test_data_set_0 (rtol 1e-3, atol 1e-4) after a round
// trip through ONNX, as `eqfuse run OUT.onnx --test-data ...` would check it; each has fewer
// launching ops than ONNX Runtime's own optimized graph (CPU provider, level "extended", counted
// by the same rule: bench/ort_kernels.sh); and the CUDA generated for it launches at most its
// target of kernels and library calls.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>

#include "codegen/plan.h"
#include "codegen/printer.h"
#include "frontend/onnx_export.h"
#include "frontend/onnx_import.h"
#include "frontend/test_data.h"
#include "ir/interpreter.h"
#include "optimizer/optimize.h"
#include "tests/test_data.h"

using namespace eqfuse;
namespace fs = std::filesystem;

namespace {

// What the generated CUDA launches: the plan's stages that run kernels of their own or a library
// call, not those computed where another stage stores or written by their producers.
size_t generated_launches(const ir::Graph& graph) {
  const codegen::KernelPlan plan = codegen::make_plan(graph);
  size_t n = 0;
  for (const codegen::StageForm& f : codegen::stage_forms(plan, codegen::Target::Cuda))
    n += f.runs != codegen::StageForm::Runs::Elsewhere;
  return n;
}

}  // namespace

TEST_CASE("every shared model optimizes, and its output matches its test data",
          "[optimizer][models]") {
  fs::path models = test::shared_dir() / "models";
  // EQFUSE_ONLY_MODELS=a,b restricts the run to those models (for debugging one).
  const char* only = std::getenv("EQFUSE_ONLY_MODELS");
  std::string only_list = only ? only : "";
  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(models))
    if (fs::exists(e.path() / "model.onnx") &&
        (!only || only_list.find(e.path().filename().string()) != std::string::npos))
      dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end());
  REQUIRE(dirs.size() >= (only ? 1 : 10));
  const std::map<std::string, size_t> ort_kernels = {
      {"pointwise_chain", 17}, {"mlp_block", 4}, {"attention_block", 11}, {"bert_tiny", 32},
      {"bert_tiny_op13", 32},  {"gpt_tiny", 37}, {"vit_tiny", 38},        {"squeezenet1_1", 38},
      {"mobilenet_v2", 64},    {"resnet18", 39}};
  // The optimizer issue's targets: launching ops after optimize, at most. They took a kernel
  // for one launch; priced as the stages generated code runs (cost/stage_costs.h), extraction
  // picks more ops that launch fewer kernels where that is cheaper, and for squeezenet1_1 and
  // vit_tiny, whose targets these were not, the generated launches below are the target.
  const std::map<std::string, size_t> targets = {
      {"pointwise_chain", 1}, {"mlp_block", 3}, {"attention_block", 3}, {"bert_tiny", 17},
      {"bert_tiny_op13", 17}, {"gpt_tiny", 17}, {"mobilenet_v2", 54},   {"resnet18", 23}};
  // Kernels and library calls the generated CUDA launches, at most: what the stage-priced
  // extraction gives (bench/compare_extraction.py compares it with pricing a kernel as one
  // launch).
  const std::map<std::string, size_t> launch_targets = {
      {"pointwise_chain", 1}, {"mlp_block", 4}, {"attention_block", 4}, {"bert_tiny", 24},
      {"bert_tiny_op13", 31}, {"gpt_tiny", 25}, {"vit_tiny", 28},       {"squeezenet1_1", 33},
      {"mobilenet_v2", 55},   {"resnet18", 24}};
  fs::path tmp = fs::temp_directory_path() / "eqfuse-shared-models-optimized";
  fs::create_directories(tmp);
  for (const fs::path& dir : dirs) {
    std::string name = dir.filename().string();
    INFO(name);
    ir::Graph g = frontend::import_onnx(dir / "model.onnx");
    optimizer::OptimizeResult r = optimizer::optimize(g);
    CHECK(r.report.stop_reason != "time_limit");
    CHECK(r.report.predicted_ms_after <= r.report.predicted_ms_before * (1 + 1e-9));
    std::cout << name << ": kernels " << r.report.kernels_before << " -> " << r.report.kernels_after
              << ", predicted " << r.report.predicted_ms_before << " -> "
              << r.report.predicted_ms_after << " ms, verified " << r.report.verified << "\n";
    if (auto ort = ort_kernels.find(name); ort != ort_kernels.end())
      CHECK(r.report.kernels_after < ort->second);
    if (auto target = targets.find(name); target != targets.end())
      CHECK(r.report.kernels_after <= target->second);
    if (auto target = launch_targets.find(name); target != launch_targets.end()) {
      const size_t launches = generated_launches(r.graph);
      std::cout << name << ": the generated CUDA launches " << launches << "\n";
      CHECK(launches <= target->second);
    }
    fs::path data = dir / "test_data_set_0";
    if (!fs::exists(data) || r.report.verified == "skipped") continue;  // structure only
    CHECK(r.report.verified == "passed");
    fs::path out = tmp / (name + ".onnx");
    frontend::export_onnx(r.graph, out);
    ir::Graph back = frontend::import_onnx(out);
    frontend::TestDataSet set = frontend::read_test_data_set(data);
    std::vector<ir::Tensor> got =
        ir::Interpreter(back).run(frontend::bind_inputs(back, set.inputs));
    REQUIRE(got.size() == set.outputs.size());
    for (size_t k = 0; k < got.size(); ++k) {
      frontend::Comparison c = frontend::compare_tensors(got[k], set.outputs[k].tensor, 1e-3, 1e-4);
      INFO("output " << k);
      CHECK(c.match);
    }
  }
  fs::remove_all(tmp);
}

TEST_CASE("dynamic-batch models optimize once and match both test sets, batch still symbolic",
          "[optimizer][models]") {
  fs::path models = test::shared_dir() / "models_dynamic";
  if (!fs::exists(models)) return;
  // The static exports' targets hold here too: computed reshape shapes become constant specs
  // (ir/constant_shape_specs.h), so no shape chain launches work.
  const std::map<std::string, size_t> targets = {{"pointwise_chain", 1},
                                                 {"mlp_block", 3},
                                                 {"attention_block", 3},
                                                 {"bert_tiny", 17},
                                                 {"gpt_tiny", 17}};
  fs::path tmp = fs::temp_directory_path() / "eqfuse-dynamic-models-optimized";
  fs::create_directories(tmp);
  size_t seen = 0;
  for (const auto& e : fs::directory_iterator(models)) {
    if (!fs::exists(e.path() / "model.onnx")) continue;
    std::string name = e.path().filename().string();
    INFO(name);
    ++seen;
    ir::Graph g = frontend::import_onnx(e.path() / "model.onnx");
    optimizer::OptimizeResult r = optimizer::optimize(g);
    CHECK(r.report.verified == "passed");
    CHECK(r.report.kernels_after < r.report.kernels_before);
    std::cout << name << " (dynamic batch): kernels " << r.report.kernels_before << " -> "
              << r.report.kernels_after << "\n";
    if (auto target = targets.find(name); target != targets.end())
      CHECK(r.report.kernels_after <= target->second);
    if (name == "squeezenet1_1") CHECK(generated_launches(r.graph) <= 33);  // as above
    fs::path out = tmp / (name + ".onnx");
    frontend::export_onnx(r.graph, out);
    ir::Graph back = frontend::import_onnx(out);
    CHECK(back.value(back.inputs()[0]).type.shape[0].symbol_name() == "batch");
    for (const char* set_name : {"test_data_set_0", "test_data_set_1"}) {
      INFO(set_name);
      frontend::TestDataSet set = frontend::read_test_data_set(e.path() / set_name);
      std::vector<ir::Tensor> got =
          ir::Interpreter(back).run(frontend::bind_inputs(back, set.inputs));
      REQUIRE(got.size() == set.outputs.size());
      for (size_t k = 0; k < got.size(); ++k)
        CHECK(frontend::compare_tensors(got[k], set.outputs[k].tensor, 1e-3, 1e-4).match);
    }
  }
  CHECK(seen == 6);
  fs::remove_all(tmp);
}
