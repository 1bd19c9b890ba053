// optimize() time per shared model with the default options, proofs from the cache (the first
// iteration proves and caches them), verification off (it is the interpreter's time, measured
// apart by BM_Verify). Counters: e-nodes, kernels before and after. Models that are absent are
// skipped with a message.
//   build/bench/optimizer_bench
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>

#include "frontend/onnx_import.h"
#include "optimizer/optimize.h"

namespace {

namespace fs = std::filesystem;
using namespace eqfuse;

fs::path model_file(const std::string& name) {
  const char* env = std::getenv("EQFUSE_SHARED");
  fs::path shared = env ? fs::path(env) : fs::path(EQFUSE_SHARED_DIR);
  return shared / "models" / name / "model.onnx";
}

void run(benchmark::State& state, const std::string& name, bool verify) {
  fs::path file = model_file(name);
  if (!fs::exists(file)) {
    state.SkipWithError(("model not found: " + file.string()).c_str());
    return;
  }
  ir::Graph g = frontend::import_onnx(file);
  optimizer::OptimizeOptions options;
  options.verify = verify;
  optimizer::optimize(g, options);  // proves the library into the cache once
  optimizer::OptimizeReport report;
  for (auto _ : state) {
    optimizer::OptimizeResult r = optimizer::optimize(g, options);
    report = r.report;
    benchmark::DoNotOptimize(r.graph);
  }
  state.counters["enodes"] = static_cast<double>(report.enodes);
  state.counters["kernels_before"] = static_cast<double>(report.kernels_before);
  state.counters["kernels_after"] = static_cast<double>(report.kernels_after);
}

void BM_Optimize(benchmark::State& state, const std::string& name) {
  run(state, name, false);
}
void BM_OptimizeVerified(benchmark::State& state, const std::string& name) {
  run(state, name, true);
}

}  // namespace

#define EQFUSE_OPTIMIZE_BENCH(model)                                 \
  BENCHMARK_CAPTURE(BM_Optimize, model, std::string(#model))         \
      ->Unit(benchmark::kMillisecond)                                \
      ->Iterations(3);                                               \
  BENCHMARK_CAPTURE(BM_OptimizeVerified, model, std::string(#model)) \
      ->Unit(benchmark::kMillisecond)                                \
      ->Iterations(1)

EQFUSE_OPTIMIZE_BENCH(pointwise_chain);
EQFUSE_OPTIMIZE_BENCH(mlp_block);
EQFUSE_OPTIMIZE_BENCH(attention_block);
EQFUSE_OPTIMIZE_BENCH(bert_tiny);
EQFUSE_OPTIMIZE_BENCH(bert_tiny_op13);
EQFUSE_OPTIMIZE_BENCH(gpt_tiny);
EQFUSE_OPTIMIZE_BENCH(vit_tiny);
EQFUSE_OPTIMIZE_BENCH(resnet18);
EQFUSE_OPTIMIZE_BENCH(squeezenet1_1);
EQFUSE_OPTIMIZE_BENCH(mobilenet_v2);
BENCHMARK_CAPTURE(BM_Optimize, resnet50_structure, std::string("resnet50"))
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);
BENCHMARK_CAPTURE(BM_Optimize, bert_base_structure, std::string("bert_base"))
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);
BENCHMARK_CAPTURE(BM_Optimize, vit_b_16_structure, std::string("vit_b_16"))
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);

BENCHMARK_MAIN();
