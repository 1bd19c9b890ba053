// cost::stage_costs: each stage priced in the form the CUDA printer runs it (predictions.json and
// a Kernel node's price), against figures computed here from the profile.
#include "cost/stage_costs.h"

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

// The model with every dim of the plan bound to `size`.
cost::CostModel model_at(const cost::DeviceProfile& p, int64_t size) {
  cost::CostOptions o;
  o.default_dim = size;
  return cost::CostModel(p, o);
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
  const auto costs = cost::stage_costs(plan, forms, model_at(p, n));
  REQUIRE(costs.size() == 3);
  // cuBLASLt: its call's cost, the product's compute, and the bias its epilogue reads.
  const cost::CostModel model(p, {false, {{"n", n}}});
  const cost::NodeCost product = model.node_cost(plan.graph, plan.graph.nodes()[0]);
  const cost::NodeCost add = model.node_cost(plan.graph, plan.graph.nodes()[1]);
  CHECK(costs[0].launch_seconds == Approx(11e-6));
  CHECK(costs[0].bytes == Approx(x_bytes + w_bytes + out_bytes + 32 * 4.0));
  CHECK(costs[0].flops == Approx(product.flops + add.flops));  // the epilogue's arithmetic too
  CHECK(costs[0].seconds ==
        Approx(11e-6 + std::max(product.compute_seconds + add.compute_seconds,
                                memory_seconds(p, x_bytes + w_bytes + out_bytes + 128))));
  CHECK(costs[1].seconds == 0);  // computed where the product stores
  CHECK(costs[1].bound == cost::Bound::Free);
  CHECK(costs[2].seconds == Approx(p.launch_overhead + memory_seconds(p, 2 * out_bytes)));

  // Without cuBLASLt the Add is a kernel of its own, reading the product and the bias.
  codegen::PlanOptions no_lt;
  no_lt.cublaslt = false;
  const codegen::KernelPlan plain = codegen::make_plan(g, no_lt);
  const auto plain_costs =
      cost::stage_costs(plain, codegen::stage_forms(plain, codegen::Target::Cuda), model_at(p, n));
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
  const auto costs = cost::stage_costs(plan, forms, model_at(p, batch));
  // Two products of 64 x 64 x 32 per head, 4 heads, 64 batches.
  const double flops = 2 * (2.0 * 64 * 64 * 32) * 4 * batch;
  CHECK(costs[0].flops > flops);  // and the scale and the softmax it computes between them
  CHECK(costs[0].compute_seconds == Approx(flops / (p.fp32 * 0.05)));
  CHECK(costs[0].bound == cost::Bound::Compute);
  CHECK(costs[0].bytes == Approx(4 * (64 * 4 * 64 * 32 * 4.0)));  // q, k, v and the output
}

TEST_CASE("stage costs: a Kernel node is priced as the stages generated code runs it") {
  // LayerNorm then a product in one kernel: generated code stores the normalized rows, then
  // calls cuBLAS on them; the same two stages as the unfused graph's plan.
  auto build = [](bool fused) {
    GraphBuilder b;
    ValueId x = b.input("x", DType::f32, {Dim(512), Dim(256)});
    ValueId scale = b.input("scale", DType::f32, {Dim(256)});
    ValueId bias = b.input("bias", DType::f32, {Dim(256)});
    ValueId w = b.input("w", DType::f32, {Dim(256), Dim(1024)});
    if (fused)
      b.output(
          b.op("Kernel", {x, scale, bias, w},
               {{"body", ir::AttrValue("(MatMul (LayerNormalization :axis -1 ?0 ?1 ?2) ?3)")}}));
    else
      b.output(b.op("MatMul",
                    {b.op("LayerNormalization", {x, scale, bias}, {{"axis", int64_t(-1)}}), w}));
    return std::move(b).finish();
  };
  cost::DeviceProfile p = cost::DeviceProfile::load_builtin("h200");
  p.library_call_overhead = 11e-6;
  const ir::Graph fused = build(true), plain = build(false);
  const codegen::KernelPlan plan = codegen::make_plan(plain);
  const auto stages =
      cost::stage_costs(plan, codegen::stage_forms(plan, codegen::Target::Cuda), model_at(p, 1));
  REQUIRE(stages.size() == 2);
  const cost::NodeCost kernel = model_at(p, 1).node_cost(fused, fused.nodes().back());
  CHECK(kernel.seconds == Approx(stages[0].seconds + stages[1].seconds));
  CHECK(kernel.launch_seconds == Approx(p.launch_overhead + 11e-6));
  // The normalized rows are written once and read once.
  const double rows = 512 * 256 * 4.0;
  CHECK(kernel.bytes ==
        Approx(2 * rows + 2 * 256 * 4.0 + rows + 256 * 1024 * 4.0 + 512 * 1024 * 4.0));

  // Under bf16 every f32 tensor of the body is stored at 16 bits, its inputs and output too.
  cost::CostOptions bf16;
  bf16.precision = DType::bf16;
  CHECK(cost::CostModel(p, bf16).node_cost(fused, fused.nodes().back()).bytes ==
        Approx(kernel.bytes / 2));
}

TEST_CASE("stage costs: a kernel's Concat of its own inputs is written by their producers") {
  // In a model's plan the kernels making a and b write the Concat's slices (codegen/plan.h);
  // the kernel alone is its convolution (ReLU where it stores), which reads the whole Concat.
  GraphBuilder b;
  ValueId a = b.input("a", DType::f32, {Dim(1), Dim(16), Dim(8), Dim(8)});
  ValueId c = b.input("c", DType::f32, {Dim(1), Dim(16), Dim(8), Dim(8)});
  ValueId w = b.input("w", DType::f32, {Dim(32), Dim(32), Dim(1), Dim(1)});
  b.output(b.op("Kernel", {a, c, w},
                {{"body", ir::AttrValue("(Relu (Conv (Concat :axis 1 ?0 ?1) ?2))")}}));
  const ir::Graph g = std::move(b).finish();
  const cost::DeviceProfile p = cost::DeviceProfile::load_builtin("h200");
  const cost::NodeCost k = model_at(p, 1).node_cost(g, g.nodes().back());
  CHECK(k.launch_seconds == Approx(p.launch_overhead));
  CHECK(k.bytes == Approx((2 * 16 * 64 + 32 * 32 + 32 * 64) * 4.0));
}

TEST_CASE("stage costs: a producer recomputed under a broadcast is priced at every element") {
  // exp(x) of one element a row, added to rows of 1000: the stage evaluates exp at each of the
  // 1000 elements of a row (it is not stored), so its arithmetic counts 1000 times.
  GraphBuilder b;
  ValueId x = b.input("x", DType::f32, {Dim::symbol("n"), Dim(1)});
  ValueId y = b.input("y", DType::f32, {Dim::symbol("n"), Dim(1000)});
  b.output(b.op("Kernel", {x, y}, {{"body", ir::AttrValue("(Add (Exp ?0) ?1)")}}));
  const ir::Graph g = std::move(b).finish();
  const cost::DeviceProfile p = cost::DeviceProfile::load_builtin("h200");
  const codegen::KernelPlan plan = codegen::make_plan(g);
  const auto costs =
      cost::stage_costs(plan, codegen::stage_forms(plan, codegen::Target::Cuda), model_at(p, 64));
  REQUIRE(costs.size() == 1);
  REQUIRE(plan.graph.nodes().size() == 2);
  const cost::CostModel model(p, {false, {{"n", 64}}});
  const cost::NodeCost exp = model.node_cost(plan.graph, plan.graph.nodes()[0]);
  const cost::NodeCost add = model.node_cost(plan.graph, plan.graph.nodes()[1]);
  REQUIRE(plan.graph.nodes()[0].op_type == "Exp");
  CHECK(exp.flops > 0);
  CHECK(costs[0].flops == Approx(add.flops + 1000 * exp.flops));
  CHECK(costs[0].compute_seconds == Approx(add.compute_seconds + 1000 * exp.compute_seconds));

  // A Concat evaluates each part at its own elements only: exp once an element.
  GraphBuilder c;
  ValueId a = c.input("a", DType::f32, {Dim::symbol("n"), Dim(1)});
  ValueId rest = c.input("rest", DType::f32, {Dim::symbol("n"), Dim(999)});
  c.output(c.op("Kernel", {a, rest}, {{"body", ir::AttrValue("(Concat :axis 1 (Exp ?0) ?1)")}}));
  const codegen::KernelPlan joined = codegen::make_plan(std::move(c).finish());
  const auto joined_costs = cost::stage_costs(
      joined, codegen::stage_forms(joined, codegen::Target::Cuda), model_at(p, 64));
  REQUIRE(joined_costs.size() == 1);
  REQUIRE(joined.graph.nodes()[0].op_type == "Exp");
  const cost::NodeCost once = model.node_cost(joined.graph, joined.graph.nodes()[0]);
  const cost::NodeCost concat = model.node_cost(joined.graph, joined.graph.nodes()[1]);
  CHECK(joined_costs[0].flops == Approx(concat.flops + once.flops));
}
