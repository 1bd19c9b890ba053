// codegen::stage_forms: how the printer runs each stage, as plan.json names it and the cost
// model's per-stage predictions price it (cost/stage_costs.h).
#include <catch2/catch.hpp>
#include <cmath>

#include "codegen/plan.h"
#include "codegen/printer.h"
#include "ir/builder.h"

using namespace eqfuse;
using codegen::StageForm;
using ir::Dim;
using ir::DType;
using ir::GraphBuilder;
using ir::ValueId;

namespace {

std::vector<std::string> names(const std::vector<StageForm>& forms) {
  std::vector<std::string> out;
  for (const StageForm& f : forms) out.push_back(f.name);
  return out;
}

// relu(x·W + bias) as three plain ops: a product, its bias and a ReLU.
ir::Graph product_bias_relu() {
  GraphBuilder b;
  ValueId x = b.input("x", DType::f32, {Dim::symbol("n"), Dim(64)});
  ValueId w = b.input("w", DType::f32, {Dim(64), Dim(32)});
  ValueId bias = b.input("bias", DType::f32, {Dim(32)});
  b.output(b.op("Relu", {b.op("Add", {b.op("MatMul", {x, w}), bias})}));
  return std::move(b).finish();
}

}  // namespace

TEST_CASE("stage forms: a library product, its epilogue and the stage after it") {
  const ir::Graph g = product_bias_relu();
  const codegen::KernelPlan plan = codegen::make_plan(g);
  REQUIRE(plan.stages.size() == 3);
  // CUDA: cuBLASLt computes the bias in its epilogue; the Add stage runs there, not alone.
  std::vector<StageForm> cuda = codegen::stage_forms(plan, codegen::Target::Cuda);
  CHECK(names(cuda) == std::vector<std::string>{"cublaslt", "epilogue", "pointwise"});
  CHECK(cuda[0].runs == StageForm::Runs::Library);
  CHECK(cuda[0].kernels == 0);
  CHECK(cuda[1].runs == StageForm::Runs::Elsewhere);
  CHECK(cuda[1].by == std::optional<size_t>(0));
  CHECK(cuda[2].runs == StageForm::Runs::Kernels);
  CHECK(cuda[2].kernels == 1);
  // Without cuBLASLt: cuBLAS, then the Add as a kernel of its own; the printed unit agrees.
  codegen::PlanOptions no_lt;
  no_lt.cublaslt = false;
  const codegen::KernelPlan plain = codegen::make_plan(g, no_lt);
  CHECK(names(codegen::stage_forms(plain, codegen::Target::Cuda)) ==
        std::vector<std::string>{"cublas", "pointwise", "pointwise"});
  CHECK(codegen::print_kernels(plain, codegen::Target::Cuda).find("cublasLt") == std::string::npos);
  CHECK(codegen::print_kernels(plan, codegen::Target::Cuda).find("cublasLt") != std::string::npos);
  // The twin: its own loops (CBLAS where built with it) store through the Add.
  std::vector<StageForm> cpu = codegen::stage_forms(plan, codegen::Target::Cpu);
  CHECK(names(cpu) == std::vector<std::string>{"cblas or loops", "epilogue or loops", "loops"});
}

TEST_CASE("stage forms: rows, attention, convolution tiles and direct loops, Concat slices") {
  GraphBuilder b;
  const Dim n = Dim::symbol("n");
  ValueId q = b.input("q", DType::f32, {n, Dim(2), Dim(16), Dim(8)});
  ValueId k = b.input("k", DType::f32, {n, Dim(2), Dim(16), Dim(8)});
  ValueId v = b.input("v", DType::f32, {n, Dim(2), Dim(16), Dim(8)});
  ValueId scale = b.constant(ir::Tensor::from_vector<float>(DType::f32, {}, {0.35f}));
  b.output(b.op("Kernel", {q, k, scale, v},
                {{"body", ir::AttrValue("(MatMul (Softmax :axis -1 (Mul (MatMul ?0 (Transpose "
                                        ":perm (0 1 3 2) ?1)) ?2)) ?3)")}}));
  ValueId x = b.input("x", DType::f32, {n, Dim(64), Dim(9), Dim(9)});
  ValueId w = b.input("w", DType::f32, {Dim(64), Dim(64), Dim(3), Dim(3)});
  ValueId dw = b.input("dw", DType::f32, {Dim(64), Dim(1), Dim(3), Dim(3)});
  const std::vector<int64_t> pads = {1, 1, 1, 1};
  ValueId conv = b.op("Conv", {x, w}, {{"pads", pads}});
  ValueId depthwise = b.op("Conv", {x, dw}, {{"group", int64_t{64}}, {"pads", pads}});
  b.output(b.op("Concat", {conv, depthwise}, {{"axis", int64_t{1}}}));
  b.output(b.op("Softmax", {x}, {{"axis", int64_t{-1}}}));
  const ir::Graph g = std::move(b).finish();

  const codegen::KernelPlan plan = codegen::make_plan(g);
  std::vector<std::string> cuda = names(codegen::stage_forms(plan, codegen::Target::Cuda));
  std::vector<std::string> want = {"attention", "conv tiles or cudnn", "conv direct or cudnn",
                                   "producers", "warp rows"};
  std::sort(cuda.begin(), cuda.end());
  std::sort(want.begin(), want.end());
  CHECK(cuda == want);
  // At 16 bits, attention runs on tensor cores, and on the FP32 units where the GPU has none.
  codegen::PlanOptions bf16;
  bf16.precision = DType::bf16;
  std::vector<std::string> mma =
      names(codegen::stage_forms(codegen::make_plan(g, bf16), codegen::Target::Cuda));
  CHECK(std::count(mma.begin(), mma.end(), "attention mma") == 1);
  bf16.tensor_cores = false;
  std::vector<std::string> old =
      names(codegen::stage_forms(codegen::make_plan(g, bf16), codegen::Target::Cuda));
  CHECK(std::count(old.begin(), old.end(), "attention") == 1);
}
