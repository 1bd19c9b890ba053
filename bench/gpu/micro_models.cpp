// Writes the bandwidth micro-models of the GPU benchmark (bench/gpu/prepare.sh): graphs whose
// one kernel should run at copy bandwidth, with the element count a run-time dim `n` so the
// GPU run picks tensors of at least 256 MiB.
//   pointwise_silu:    y = x * sigmoid(x)                    x: f32[n]
//   pointwise_add3:    y = (a + b) * c                       a, b, c: f32[n]
//   softmax_rows:      y = softmax(x, axis=-1)               x: f32[n, 1024]
//   layernorm_rows:    y = layernorm(x) * g + b              x: f32[n, 1024]
//   softmax_long_rows: y = softmax(x, axis=-1)               x: f32[n, 8192] (a block per row)
//   reduce_rows:       y = reduce_mean(x, axis=-1)           x: f32[n, 1024] (a warp per row)
//   reduce_long_rows:  y = reduce_sum(x, axis=-1)            x: f32[n, 8192] (a block per row)
//   usage: gpu_micro_models OUT_DIR
#include <filesystem>
#include <iostream>
#include <tuple>

#include "frontend/onnx_export.h"
#include "ir/builder.h"

using namespace eqfuse;
using ir::Dim;
using ir::DType;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: gpu_micro_models OUT_DIR\n";
    return 2;
  }
  std::filesystem::path out = argv[1];
  auto write = [&](const std::string& name, ir::GraphBuilder&& b) {
    std::filesystem::create_directories(out / name);
    frontend::export_onnx(std::move(b).finish(), out / name / "model.onnx");
  };
  {
    ir::GraphBuilder b("pointwise_silu");
    auto x = b.input("x", DType::f32, {Dim::symbol("n")});
    b.output(b.op("Mul", {x, b.op("Sigmoid", {x})}));
    write("pointwise_silu", std::move(b));
  }
  {
    ir::GraphBuilder b("pointwise_add3");
    auto a = b.input("a", DType::f32, {Dim::symbol("n")});
    auto c = b.input("b", DType::f32, {Dim::symbol("n")});
    auto d = b.input("c", DType::f32, {Dim::symbol("n")});
    b.output(b.op("Mul", {b.op("Add", {a, c}), d}));
    write("pointwise_add3", std::move(b));
  }
  {
    ir::GraphBuilder b("softmax_rows");
    auto x = b.input("x", DType::f32, {Dim::symbol("n"), Dim(1024)});
    b.output(b.op("Softmax", {x}, {{"axis", int64_t{-1}}}));
    write("softmax_rows", std::move(b));
  }
  {
    ir::GraphBuilder b("layernorm_rows");
    auto x = b.input("x", DType::f32, {Dim::symbol("n"), Dim(1024)});
    ir::Tensor g(DType::f32, {1024}), bias(DType::f32, {1024});
    for (int64_t i = 0; i < 1024; ++i) g.set(i, 1.0 + 0.001 * double(i)), bias.set(i, 0.01);
    b.output(b.op("LayerNormalization", {x, b.weight("g", g), b.weight("bias", bias)},
                  {{"axis", int64_t{-1}}, {"epsilon", 1e-5}}));
    write("layernorm_rows", std::move(b));
  }
  {
    ir::GraphBuilder b("softmax_long_rows");
    auto x = b.input("x", DType::f32, {Dim::symbol("n"), Dim(8192)});
    b.output(b.op("Softmax", {x}, {{"axis", int64_t{-1}}}));
    write("softmax_long_rows", std::move(b));
  }
  for (auto [name, op, cols] : {std::tuple{"reduce_rows", "ReduceMean", 1024},
                                std::tuple{"reduce_long_rows", "ReduceSum", 8192}}) {
    ir::GraphBuilder b(name);
    auto x = b.input("x", DType::f32, {Dim::symbol("n"), Dim(cols)});
    b.output(b.op(op, {x}, {{"axes", std::vector<int64_t>{-1}}, {"keepdims", int64_t{0}}}));
    write(name, std::move(b));
  }
  return 0;
}
