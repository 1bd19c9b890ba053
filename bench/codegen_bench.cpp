// One run of each shared model with weights, on its test data: the reference interpreter
// against the generated C++ twin of the optimized model (built once, outside the timing).
// Side by side in one run, so the ratio is what to read:
//   build/bench/codegen_bench --benchmark_filter=resnet18
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>

#include "codegen/cpu_backend.h"
#include "frontend/onnx_import.h"
#include "frontend/test_data.h"
#include "ir/interpreter.h"
#include "optimizer/optimize.h"

namespace {

namespace fs = std::filesystem;
using namespace eqfuse;

fs::path model_dir(const std::string& name) {
  const char* env = std::getenv("EQFUSE_SHARED");
  fs::path shared = env ? fs::path(env) : fs::path(EQFUSE_SHARED_DIR);
  return shared / "models" / name;
}

struct Loaded {
  ir::Graph original, optimized;
  std::vector<ir::Tensor> inputs;
};

const Loaded* load(benchmark::State& state, const std::string& name) {
  static std::map<std::string, Loaded> cache;
  if (auto it = cache.find(name); it != cache.end()) return &it->second;
  fs::path dir = model_dir(name);
  if (!fs::exists(dir / "test_data_set_0")) {
    state.SkipWithError(("model or test data not found: " + dir.string()).c_str());
    return nullptr;
  }
  Loaded l;
  l.original = frontend::import_onnx(dir / "model.onnx");
  optimizer::OptimizeOptions opt;
  opt.verify = false;
  l.optimized = optimizer::optimize(l.original, opt).graph;
  l.inputs = frontend::bind_inputs(l.original,
                                   frontend::read_test_data_set(dir / "test_data_set_0").inputs);
  return &cache.emplace(name, std::move(l)).first->second;
}

void BM_Interpreter(benchmark::State& state, const std::string& name) {
  const Loaded* l = load(state, name);
  if (!l) return;
  ir::Interpreter run(l->original);
  for (auto _ : state) benchmark::DoNotOptimize(run.run(l->inputs));
}

void run_twin(benchmark::State& state, const std::string& name,
              const codegen::PlanOptions& options) {
  const Loaded* l = load(state, name);
  if (!l) return;
  auto twin = codegen::CpuModule::build(l->optimized, nullptr, {}, options);
  for (auto _ : state) benchmark::DoNotOptimize(twin->run(l->inputs));
  state.counters["stages"] = double(twin->plan().stages.size());
}

void BM_CppTwin(benchmark::State& state, const std::string& name) {
  run_twin(state, name, {});
}

// The same twin with each contraction's epilogue as a pass of its own, as before the printer
// computed it where the contraction stores.
void BM_CppTwinSeparateEpilogues(benchmark::State& state, const std::string& name) {
  codegen::PlanOptions options;
  options.epilogues_in_contractions = false;
  run_twin(state, name, options);
}

// The same twin with softmax(S)·V as a MatMul, a Softmax and a MatMul stage, S and softmax(S)
// stored, as before the attention stage.
void BM_CppTwinAttentionStaged(benchmark::State& state, const std::string& name) {
  codegen::PlanOptions options;
  options.attention_stages = false;
  run_twin(state, name, options);
}

}  // namespace

#define EQFUSE_TWIN_BENCH(model)                                                                \
  BENCHMARK_CAPTURE(BM_Interpreter, model, std::string(#model))->Unit(benchmark::kMillisecond); \
  BENCHMARK_CAPTURE(BM_CppTwin, model, std::string(#model))->Unit(benchmark::kMillisecond);     \
  BENCHMARK_CAPTURE(BM_CppTwinSeparateEpilogues, model, std::string(#model))                    \
      ->Unit(benchmark::kMillisecond)

#define EQFUSE_ATTENTION_BENCH(model)                                      \
  BENCHMARK_CAPTURE(BM_CppTwinAttentionStaged, model, std::string(#model)) \
      ->Unit(benchmark::kMillisecond)

EQFUSE_TWIN_BENCH(pointwise_chain);
EQFUSE_TWIN_BENCH(mlp_block);
EQFUSE_TWIN_BENCH(attention_block);
EQFUSE_TWIN_BENCH(bert_tiny);
EQFUSE_TWIN_BENCH(bert_tiny_op13);
EQFUSE_TWIN_BENCH(gpt_tiny);
EQFUSE_TWIN_BENCH(vit_tiny);
EQFUSE_TWIN_BENCH(squeezenet1_1);
EQFUSE_TWIN_BENCH(mobilenet_v2);
EQFUSE_TWIN_BENCH(resnet18);
EQFUSE_ATTENTION_BENCH(attention_block);
EQFUSE_ATTENTION_BENCH(bert_tiny);
EQFUSE_ATTENTION_BENCH(bert_tiny_op13);
EQFUSE_ATTENTION_BENCH(gpt_tiny);
EQFUSE_ATTENTION_BENCH(vit_tiny);

BENCHMARK_MAIN();
