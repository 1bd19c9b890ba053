// Compiling a model to the C++ twin and running it: what `eqfuse run --backend cpu` does, and
// what `eqfuse compile --target cpu` writes as a standalone tree. The optimized graph's kernel
// plan is printed as C++, built with the system compiler (cached by source hash), loaded and run
// on the model's test data, and compared with the expected outputs (rtol 1e-3, atol 1e-4) and
// with the interpreter. The same plan is written as a source tree that needs only a C++
// compiler. Built and run by the tests (example_compile_twin) on the bundled MLP block.
//
//   compile_twin MODEL_DIR TREE_DIR
#include <chrono>
#include <cstdio>
#include <filesystem>

#include "codegen/cpu_backend.h"
#include "codegen/source_tree.h"
#include "frontend/onnx_import.h"
#include "frontend/test_data.h"
#include "ir/interpreter.h"
#include "optimizer/optimize.h"
#include "support/error.h"

using namespace eqfuse;
namespace fs = std::filesystem;

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s MODEL_DIR TREE_DIR\n", argv[0]);
    return 2;
  }
  fs::path dir = argv[1], tree = argv[2];
  try {
    ir::Graph original = frontend::import_onnx(dir / "model.onnx");
    optimizer::OptimizeResult opt = optimizer::optimize(original, {});

    codegen::CpuBuildInfo info;
    std::unique_ptr<codegen::CpuModule> twin = codegen::CpuModule::build(opt.graph, &info);
    std::printf("C++ twin: %zu stages, %s %s (%.1f s)\n", twin->plan().stages.size(),
                info.cached ? "found in the cache at" : "built at", info.library.c_str(),
                info.compile_seconds);

    frontend::TestDataSet data = frontend::read_test_data_set(dir / "test_data_set_0");
    std::vector<ir::Tensor> inputs = frontend::bind_inputs(original, data.inputs);
    auto t0 = std::chrono::steady_clock::now();
    std::vector<ir::Tensor> got = twin->run(inputs);
    auto t1 = std::chrono::steady_clock::now();
    std::vector<ir::Tensor> reference = ir::Interpreter(original).run(inputs);
    auto t2 = std::chrono::steady_clock::now();
    auto ms = [](auto a, auto b) {
      return std::chrono::duration<double, std::milli>(b - a).count();
    };
    std::printf("one run: twin %.2f ms, interpreter %.2f ms\n", ms(t0, t1), ms(t1, t2));

    bool ok = got.size() == data.outputs.size();
    for (size_t k = 0; ok && k < got.size(); ++k) {
      frontend::Comparison expected =
          frontend::compare_tensors(got[k], data.outputs[k].tensor, 1e-3, 1e-4);
      frontend::Comparison interp = frontend::compare_tensors(got[k], reference[k], 1e-3, 1e-4);
      std::printf("output %zu: test data %s (%s); interpreter %s\n", k,
                  expected.match ? "matches" : "DIFFERS", expected.str().c_str(),
                  interp.match ? "matches" : "DIFFERS");
      ok = expected.match && interp.match;
    }

    codegen::TreeReport written =
        codegen::write_source_tree(twin->plan(), tree, {codegen::Target::Cpu});
    std::printf("wrote %s: %zu kernels, %zu stages, %llu bytes of source (build it with cmake)\n",
                tree.string().c_str(), written.kernels, written.stages,
                static_cast<unsigned long long>(written.source_bytes));
    return ok && fs::exists(tree / "kernels.cpp") && fs::exists(tree / "CMakeLists.txt") ? 0 : 1;
  } catch (const Error& e) {
    std::fprintf(stderr, "compile_twin: %s\n", e.what());
    return e.exit_code();
  }
}
