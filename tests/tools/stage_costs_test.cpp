// tools::stage_costs: each stage priced in the form the CUDA printer runs it (predictions.json),
// against figures computed here from the profile.
#include "tools/stage_costs.h"

#include <algorithm>
#include <catch2/catch.hpp>

#include "ir/builder.h"

using namespace eqfuse;
using ir::Dim;
using ir::DType;
using ir::GraphBuilder;
using ir::ValueId;

namespace {

double memory_seconds(const cost::DeviceProfile& p, double bytes) {
  return bytes / (p.memory_bandwidth * p.efficiency.bandwidth);
}

}  // namespace

TEST_CASE("stage costs: a library call, the epilogue it computes, a launch per kernel") {
  GraphBuilder b;
  ValueId x = b.input("x", DType::f32, {Dim::symbol("n"), Dim(64)});
  ValueId w = b.input("w", DType::f32, {Dim(64), Dim(32)});
  ValueId bias = b.input("bias", DType::f32, {Dim(32)});
  b.output(b.op("Relu", {b.op("Add", {b.op("MatMul", {x, w}), bias})}));
  const ir::Graph g = std::move(b).finish();
  cost::DeviceProfile p = cost::DeviceProfile::load_builtin("h200");
  p.library_call_overhead = 11e-6;
  const int64_t n = 4096;
  const double x_bytes = n * 64 * 4.0, w_bytes = 64 * 32 * 4.0, out_bytes = n * 32 * 4.0;

  const codegen::KernelPlan plan = codegen::make_plan(g);
  const auto forms = codegen::stage_forms(plan, codegen::Target::Cuda);
  const auto costs = tools::stage_costs(plan, forms, p, n);
  REQUIRE(costs.size() == 3);
  // cuBLASLt: its call's cost, the product's compute, and the bias its epilogue reads.
  const cost::NodeCost product =
      cost::CostModel(p, {false, {{"n", n}}}).node_cost(plan.graph, plan.graph.nodes()[0]);
  CHECK(costs[0].launch_seconds == Approx(11e-6));
  CHECK(costs[0].bytes == Approx(x_bytes + w_bytes + out_bytes + 32 * 4.0));
  CHECK(costs[0].seconds ==
        Approx(11e-6 + std::max(product.compute_seconds,
                                memory_seconds(p, x_bytes + w_bytes + out_bytes + 128))));
  CHECK(costs[1].seconds == 0);  // computed where the product stores
  CHECK(costs[1].bound == cost::Bound::Free);
  CHECK(costs[2].seconds == Approx(p.launch_overhead + memory_seconds(p, 2 * out_bytes)));

  // Without cuBLASLt the Add is a kernel of its own, reading the product and the bias.
  codegen::PlanOptions no_lt;
  no_lt.cublaslt = false;
  const codegen::KernelPlan plain = codegen::make_plan(g, no_lt);
  const auto plain_costs =
      tools::stage_costs(plain, codegen::stage_forms(plain, codegen::Target::Cuda), p, n);
  CHECK(plain_costs[0].bytes == Approx(x_bytes + w_bytes + out_bytes));
  CHECK(plain_costs[1].seconds ==
        Approx(p.launch_overhead + memory_seconds(p, 2 * out_bytes + 128)));
}

TEST_CASE("stage costs: attention at the profile's attention efficiency") {
  GraphBuilder b;
  const Dim n = Dim::symbol("n");
  ValueId q = b.input("q", DType::f32, {n, Dim(4), Dim(64), Dim(32)});
  ValueId k = b.input("k", DType::f32, {n, Dim(4), Dim(64), Dim(32)});
  ValueId v = b.input("v", DType::f32, {n, Dim(4), Dim(64), Dim(32)});
  ValueId scale = b.constant(ir::Tensor::from_vector<float>(DType::f32, {}, {0.18f}));
  b.output(b.op("Kernel", {q, k, scale, v},
                {{"body", ir::AttrValue("(MatMul (Softmax :axis -1 (Mul (MatMul ?0 (Transpose "
                                        ":perm (0 1 3 2) ?1)) ?2)) ?3)")}}));
  const ir::Graph g = std::move(b).finish();
  cost::DeviceProfile p = cost::DeviceProfile::load_builtin("h200");
  p.efficiency.attention = 0.05;
  const codegen::KernelPlan plan = codegen::make_plan(g);
  const auto forms = codegen::stage_forms(plan, codegen::Target::Cuda);
  REQUIRE(forms.size() == 1);
  REQUIRE(forms[0].name == "attention");
  const int64_t batch = 64;
  const auto costs = tools::stage_costs(plan, forms, p, batch);
  // Two products of 64 x 64 x 32 per head, 4 heads, 64 batches.
  const double flops = 2 * (2.0 * 64 * 64 * 32) * 4 * batch;
  CHECK(costs[0].flops == Approx(flops));
  CHECK(costs[0].compute_seconds == Approx(flops / (p.fp32 * 0.05)));
  CHECK(costs[0].bound == cost::Bound::Compute);
  CHECK(costs[0].bytes == Approx(4 * (64 * 4 * 64 * 32 * 4.0)));  // q, k, v and the output
}
