// The library API in one page: build a graph in C++, run it in the reference interpreter,
// predict its GPU time, optimize it, write it as ONNX and read it back. Built and run by the
// tests (example_quickstart), so this example stays true.
#include <cstdio>
#include <filesystem>

#include "cost/cost_model.h"
#include "frontend/onnx_export.h"
#include "frontend/onnx_import.h"
#include "ir/builder.h"
#include "ir/interpreter.h"
#include "ir/printer.h"
#include "optimizer/optimize.h"

using namespace eqfuse;

int main(int argc, char** argv) {
  // y = relu(x @ w + b), with a symbolic batch dimension.
  ir::GraphBuilder b("quickstart");
  ir::ValueId x = b.input("x", ir::DType::f32, {ir::Dim::symbol("batch"), ir::Dim(4)});
  ir::ValueId w =
      b.weight("w", ir::Tensor::from_doubles(ir::DType::f32, {4, 2}, {1, -1, 2, 0, 0, 1, -1, 3}));
  ir::ValueId bias = b.weight("b", ir::Tensor::from_doubles(ir::DType::f32, {2}, {0.5, -4}));
  ir::ValueId y = b.op("Relu", {b.op("Add", {b.op("MatMul", {x, w}), bias})});
  b.output(y);
  ir::Graph graph = std::move(b).finish();
  std::printf("%s\n", ir::print_graph(graph).c_str());

  // The interpreter binds `batch` to 1 here.
  ir::Tensor input = ir::Tensor::from_doubles(ir::DType::f32, {1, 4}, {1, 2, 3, 4});
  ir::Tensor out = ir::Interpreter(graph).run({input}).at(0);
  std::printf("y = %s\n", out.str().c_str());

  // Predicted time on an H200 (symbolic dims bind to 1 unless told otherwise).
  cost::CostModel model(cost::DeviceProfile::load_builtin("h200"));
  std::printf("predicted on h200: %.4f ms\n", model.graph_cost(graph).ms());

  // Optimize: proved rewrites, the cheapest graph under the cost model, verified in the
  // interpreter (a mismatch would throw).
  optimizer::OptimizeOptions options;
  options.device = "h200";
  optimizer::OptimizeResult opt = optimizer::optimize(graph, options);
  std::printf("optimized: %zu -> %zu kernels, %.4f -> %.4f ms predicted, verified %s\n",
              opt.report.kernels_before, opt.report.kernels_after, opt.report.predicted_ms_before,
              opt.report.predicted_ms_after, opt.report.verified.c_str());

  // Write as ONNX and read back: same result.
  std::filesystem::path file =
      argc > 1 ? std::filesystem::path(argv[1])
               : std::filesystem::temp_directory_path() / "eqfuse_quickstart.onnx";
  frontend::export_onnx(opt.graph, file);
  ir::Graph back = frontend::import_onnx(file);
  bool same = ir::Interpreter(back).run({input}).at(0).same_bits(out);
  std::printf("round trip through %s: %s\n", file.string().c_str(), same ? "same" : "DIFFERENT");
  return same ? 0 : 1;
}
