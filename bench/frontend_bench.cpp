// Import time and interpreter time of real models (../shared/models resnet18 and bert_tiny,
// inputs from their test_data_set_0). Models that are absent are skipped with a message.
//   build/bench/frontend_bench
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "frontend/onnx_import.h"
#include "frontend/test_data.h"
#include "ir/interpreter.h"

namespace {

namespace fs = std::filesystem;
using namespace eqfuse;

fs::path model_dir(const std::string& name) {
  const char* env = std::getenv("EQFUSE_SHARED");
  fs::path shared = env ? fs::path(env) : fs::path(EQFUSE_SHARED_DIR);
  return shared / "models" / name;
}

void BM_Import(benchmark::State& state, const std::string& name) {
  fs::path file = model_dir(name) / "model.onnx";
  if (!fs::exists(file)) {
    state.SkipWithError(("model not found: " + file.string()).c_str());
    return;
  }
  size_t nodes = 0;
  for (auto _ : state) {
    ir::Graph g = frontend::import_onnx(file);
    nodes = g.nodes().size();
    benchmark::DoNotOptimize(nodes);
  }
  state.counters["nodes"] = static_cast<double>(nodes);
}

void BM_Interpreter(benchmark::State& state, const std::string& name) {
  fs::path dir = model_dir(name);
  if (!fs::exists(dir / "test_data_set_0")) {
    state.SkipWithError(("model or test data not found: " + dir.string()).c_str());
    return;
  }
  ir::Graph g = frontend::import_onnx(dir / "model.onnx");
  auto data = frontend::read_test_data_set(dir / "test_data_set_0");
  std::vector<ir::Tensor> inputs = frontend::bind_inputs(g, data.inputs);
  ir::Interpreter interpreter(g);
  for (auto _ : state) {
    auto outputs = interpreter.run(inputs);
    benchmark::DoNotOptimize(outputs);
  }
}

BENCHMARK_CAPTURE(BM_Import, resnet18, std::string("resnet18"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Import, bert_tiny, std::string("bert_tiny"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Import, resnet50_structure, std::string("resnet50"))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Import, bert_base_structure, std::string("bert_base"))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Interpreter, resnet18, std::string("resnet18"))
    ->Unit(benchmark::kMillisecond)
    ->MinTime(2.0);
BENCHMARK_CAPTURE(BM_Interpreter, bert_tiny, std::string("bert_tiny"))
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
