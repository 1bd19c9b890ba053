// The cost model against roofline figures computed by hand from each device's published
// figures (tests/cost/published_figures.h), for GEMM, convolution, elementwise, reduction,
// layout, opaque and fused kernels on every shipped profile.
#include "cost/cost_model.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <string>

#include "cost/shape_binding.h"
#include "ir/builder.h"
#include "tests/cost/published_figures.h"
#include "tests/cost/test_ops.h"

using namespace eqfuse;
using cost::Bound;
using cost::CostModel;
using cost::DeviceProfile;
using ir::DType;
using test::one_node;
using test::PublishedFigures;
using test::test_ops;
using test::type;

namespace {

// launch + max(FLOPs / (peak x eff x wave), bytes / (bandwidth x eff_bw)), in seconds.
double roofline(const PublishedFigures& f, double flops, double peak_tflops, double eff,
                double wave, double bytes) {
  double compute = flops / (peak_tflops * 1e12 * eff * wave);
  double memory = bytes / (f.bandwidth_gbps * 1e9 * f.eff_bandwidth);
  return f.launch_us * 1e-6 + std::max(compute, memory);
}

double wave_of(long tiles, int sms) {
  long waves = (tiles + sms - 1) / sms;
  return static_cast<double>(tiles) / static_cast<double>(waves * sms);
}

CostModel model_for(const PublishedFigures& f, bool tf32 = false) {
  cost::CostOptions options;
  options.allow_tf32 = tf32;
  return CostModel(DeviceProfile::load_builtin(f.name), options);
}

}  // namespace

TEST_CASE("large f16 GEMM is compute-bound at the tensor-core peak, wave-quantized", "[cost]") {
  for (const auto& f : test::published_figures()) {
    INFO(f.name);
    auto g = one_node(&test_ops().matmul, "MatMul",
                      {type(DType::f16, {8192, 8192}), type(DType::f16, {8192, 8192})},
                      {type(DType::f16, {8192, 8192})});
    cost::NodeCost c = model_for(f).node_cost(g->graph, g->node());
    double flops = 2.0 * 8192 * 8192 * 8192;
    double bytes = 3.0 * 8192 * 8192 * 2;
    double wave = wave_of(64 * 64, f.sms);  // 128x128 tiles
    CHECK(c.flops == Approx(flops));
    CHECK(c.bytes == Approx(bytes));
    CHECK(c.seconds == Approx(roofline(f, flops, f.fp16_tflops, f.eff_contraction, wave, bytes)));
    CHECK(c.bound == Bound::Compute);
  }
}

TEST_CASE("skinny f16 GEMM (matrix-vector) is memory-bound", "[cost]") {
  for (const auto& f : test::published_figures()) {
    INFO(f.name);
    auto g = one_node(&test_ops().matmul, "MatMul",
                      {type(DType::f16, {1, 8192}), type(DType::f16, {8192, 8192})},
                      {type(DType::f16, {1, 8192})});
    cost::NodeCost c = model_for(f).node_cost(g->graph, g->node());
    double flops = 2.0 * 8192 * 8192;
    double bytes = (8192.0 + 8192.0 * 8192 + 8192) * 2;
    double wave = wave_of(1 * 64, f.sms);
    CHECK(c.seconds == Approx(roofline(f, flops, f.fp16_tflops, f.eff_contraction, wave, bytes)));
    CHECK(c.bound == Bound::Memory);
  }
}

TEST_CASE("f32 GEMM uses the FP32 peak unless TF32 is allowed", "[cost]") {
  for (const auto& f : test::published_figures()) {
    INFO(f.name);
    auto g = one_node(&test_ops().matmul, "MatMul",
                      {type(DType::f32, {4096, 4096}), type(DType::f32, {4096, 4096})},
                      {type(DType::f32, {4096, 4096})});
    double flops = 2.0 * 4096 * 4096 * 4096;
    double bytes = 3.0 * 4096 * 4096 * 4;
    double wave = wave_of(32 * 32, f.sms);
    cost::NodeCost fp32 = model_for(f).node_cost(g->graph, g->node());
    cost::NodeCost tf32 = model_for(f, true).node_cost(g->graph, g->node());
    CHECK(fp32.seconds ==
          Approx(roofline(f, flops, f.fp32_tflops, f.eff_contraction, wave, bytes)));
    CHECK(tf32.seconds ==
          Approx(roofline(f, flops, f.tf32_tflops, f.eff_contraction, wave, bytes)));
    CHECK(tf32.seconds < fp32.seconds);
  }
}

TEST_CASE("batched MatMul quantizes over batch x tiles", "[cost]") {
  for (const auto& f : test::published_figures()) {
    INFO(f.name);
    auto g = one_node(&test_ops().matmul, "MatMul",
                      {type(DType::bf16, {12, 384, 1024}), type(DType::bf16, {12, 1024, 384})},
                      {type(DType::bf16, {12, 384, 384})});
    cost::NodeCost c = model_for(f).node_cost(g->graph, g->node());
    double flops = 2.0 * 12 * 384 * 384 * 1024;
    double bytes = (12.0 * 384 * 1024 * 2 + 12.0 * 384 * 384) * 2;
    double wave = wave_of(12 * 3 * 3, f.sms);
    CHECK(c.seconds == Approx(roofline(f, flops, f.bf16_tflops, f.eff_contraction, wave, bytes)));
  }
}

// The busy fraction of `tiles` tiles of `tile_outputs` outputs each, `outputs` of them used.
double tile_busy(long tiles, long tile_outputs, double outputs, int sms) {
  long waves = (tiles + sms - 1) / sms;
  return outputs / (static_cast<double>(waves * sms) * static_cast<double>(tile_outputs));
}

TEST_CASE("convolution is priced in the tiles generated code runs it in", "[cost]") {
  for (const auto& f : test::published_figures()) {
    INFO(f.name);
    // x [8,64,56,56] * w [128,64,3,3] (pad 1) -> [8,128,56,56], f16
    auto g = one_node(&test_ops().conv, "Conv",
                      {type(DType::f16, {8, 64, 56, 56}), type(DType::f16, {128, 64, 3, 3})},
                      {type(DType::f16, {8, 128, 56, 56})});
    cost::NodeCost c = model_for(f).node_cost(g->graph, g->node());
    double flops = 2.0 * (8 * 128 * 56 * 56) * (64 * 3 * 3);
    double bytes = (8.0 * 64 * 56 * 56 + 128 * 64 * 9 + 8.0 * 128 * 56 * 56) * 2;
    // 128 channels by 8*56*56 = 25088 pixels: 392 tiles of 128x64, at least 132, so those.
    double wave = tile_busy(392, 128 * 64, 128.0 * 25088, f.sms);
    CHECK(c.flops == Approx(flops));
    CHECK(c.seconds == Approx(roofline(f, flops, f.fp16_tflops, f.eff_contraction, wave, bytes)));
  }
}

TEST_CASE("a small convolution takes the small tiles; a depthwise one has none", "[cost]") {
  for (const auto& f : test::published_figures()) {
    INFO(f.name);
    // 512 channels of 7x7 at batch 1: 4 tiles of 128x64 are too few to fill the GPU, so the
    // run takes 16 of 32x64, each 49 of 64 pixels used, at that tile's relative efficiency
    // (0.57 of the 128x64 tile's).
    auto small = one_node(&test_ops().conv, "Conv",
                          {type(DType::f32, {1, 512, 7, 7}), type(DType::f32, {512, 512, 3, 3})},
                          {type(DType::f32, {1, 512, 7, 7})});
    cost::NodeCost c = model_for(f).node_cost(small->graph, small->node());
    double flops = 2.0 * (512 * 49) * (512 * 9);
    double bytes = (512.0 * 49 * 2 + 512 * 512 * 9) * 4;
    double wave = tile_busy(16, 32 * 64, 512.0 * 49, f.sms) * 0.57;
    CHECK(c.seconds == Approx(roofline(f, flops, f.fp32_tflops, f.eff_contraction, wave, bytes)));
    // k of 3 channels by 3x3 taps = 27 runs in two slices of 16: 5 of 32 idle. 32 channels of
    // 112x112 at batch 1: 196 tiles of 32x64, all full.
    auto stem = one_node(&test_ops().conv, "Conv",
                         {type(DType::f32, {1, 3, 112, 112}), type(DType::f32, {32, 3, 3, 3})},
                         {type(DType::f32, {1, 32, 112, 112})});
    cost::NodeCost st = model_for(f).node_cost(stem->graph, stem->node());
    CHECK(st.compute_seconds ==
          Approx(2.0 * (32 * 112 * 112) * 27 /
                 (f.fp32_tflops * 1e12 * f.eff_contraction *
                  tile_busy(196, 32 * 64, 32.0 * 112 * 112, f.sms) * 27 / 32 * 0.57)));
    // Depthwise (one channel a group): one output per thread, no tiles, the input read once
    // per tap.
    ir::Attributes attrs;
    attrs.set("group", int64_t{96});
    auto depthwise = one_node(&test_ops().conv, "Conv",
                              {type(DType::f32, {1, 96, 56, 56}), type(DType::f32, {96, 1, 3, 3})},
                              {type(DType::f32, {1, 96, 56, 56})}, attrs);
    cost::NodeCost d = model_for(f).node_cost(depthwise->graph, depthwise->node());
    double dflops = 2.0 * (96 * 56 * 56) * 9;
    double dbytes = (96.0 * 56 * 56 * (9 + 1) + 96 * 9) * 4;
    CHECK(d.seconds == Approx(roofline(f, dflops, f.fp32_tflops, f.eff_contraction, 1, dbytes)));
    // At stride 2 an output covers 9 inputs, an input 9 / 4 outputs.
    ir::Attributes strided = attrs;
    strided.set("strides", std::vector<int64_t>{2, 2});
    auto down = one_node(&test_ops().conv, "Conv",
                         {type(DType::f32, {1, 96, 112, 112}), type(DType::f32, {96, 1, 3, 3})},
                         {type(DType::f32, {1, 96, 56, 56})}, strided);
    cost::NodeCost s2 = model_for(f).node_cost(down->graph, down->node());
    CHECK(s2.bytes == Approx((96.0 * 112 * 112 * 9 / 4 + 96 * 56 * 56 + 96 * 9) * 4));
    CHECK(s2.reread_bytes == Approx(96.0 * 112 * 112 * (9.0 / 4 - 1) * 4));
  }
}

TEST_CASE("a fused kernel keeps its depthwise convolution's rereads", "[cost]") {
  ir::GraphBuilder b("dw");
  ir::ValueId x = b.input("x", DType::f32, {ir::Dim(1), ir::Dim(96), ir::Dim(56), ir::Dim(56)});
  ir::ValueId w = b.weight("w", ir::Tensor(DType::f32, {96, 1, 3, 3}));
  b.output(b.op("Kernel", {x, w},
                {{"body", std::string("(Relu (Conv :group 96 :pads (1 1 1 1) ?0 ?1))")}}));
  ir::Graph g = std::move(b).finish();
  CostModel model(DeviceProfile::load_builtin("h200"));
  cost::NodeCost k = model.node_cost(g, g.nodes().back());
  const double own = (96.0 * 56 * 56 * 2 + 96 * 9) * 4;    // x, w and the output
  CHECK(k.bytes == Approx(own + 96.0 * 56 * 56 * 8 * 4));  // and x read 8 times more
  // A profile whose rereads mostly hit the caches: a quarter of them reach memory.
  DeviceProfile cached = DeviceProfile::load_builtin("h200");
  cached.conv_reread_fraction = 0.25;
  cost::NodeCost kc = CostModel(cached).node_cost(g, g.nodes().back());
  CHECK(kc.reread_bytes == Approx(96.0 * 56 * 56 * 2 * 4));
  CHECK(kc.bytes == Approx(own + 96.0 * 56 * 56 * 2 * 4));
  CHECK(kc.seconds < k.seconds);
}

TEST_CASE("a small library GEMM is priced in tiles small enough to give the SMs work", "[cost]") {
  for (const auto& f : test::published_figures()) {
    INFO(f.name);
    // 256 x 256: 4 tiles of 128x128, 8 of 128x64, 16 of 64x64, all fewer than the SMs: the
    // smallest. With k = 256, one slice of k: 16 tiles.
    auto g = one_node(&test_ops().matmul, "MatMul",
                      {type(DType::f16, {256, 256}), type(DType::f16, {256, 256})},
                      {type(DType::f16, {256, 256})});
    cost::NodeCost c = model_for(f).node_cost(g->graph, g->node());
    CHECK(c.compute_seconds ==
          Approx(2.0 * 256 * 256 * 256 / (f.fp16_tflops * 1e12 * f.eff_contraction * 16 / f.sms)));
    // k = 4096 splits in 16 slices of 256, as far as the SMs take them: 16 x min(16, SMs / 16)
    // tiles.
    auto deep = one_node(&test_ops().matmul, "MatMul",
                         {type(DType::f16, {256, 4096}), type(DType::f16, {4096, 256})},
                         {type(DType::f16, {256, 256})});
    const long tiles = 16 * std::min<long>(16, f.sms / 16);
    CHECK(model_for(f).node_cost(deep->graph, deep->node()).compute_seconds ==
          Approx(2.0 * 256 * 256 * 4096 /
                 (f.fp16_tflops * 1e12 * f.eff_contraction * wave_of(tiles, f.sms))));
  }
}

TEST_CASE("a profile's convolution efficiency prices Conv, not the other contractions", "[cost]") {
  DeviceProfile p = DeviceProfile::load_builtin("h200");
  CHECK(p.efficiency.convolution == Approx(p.efficiency.contraction));  // absent: contraction's
  const double contraction = p.efficiency.contraction;
  p.efficiency.convolution = contraction / 4;
  CostModel model(p);
  auto conv = one_node(&test_ops().conv, "Conv",
                       {type(DType::f32, {8, 64, 56, 56}), type(DType::f32, {128, 64, 3, 3})},
                       {type(DType::f32, {8, 128, 56, 56})});
  cost::NodeCost c = model.node_cost(conv->graph, conv->node());
  REQUIRE(c.bound == Bound::Compute);
  CHECK(c.compute_seconds == Approx(CostModel(DeviceProfile::load_builtin("h200"))
                                        .node_cost(conv->graph, conv->node())
                                        .compute_seconds *
                                    4));
  auto gemm = one_node(&test_ops().matmul, "MatMul",
                       {type(DType::f32, {2048, 2048}), type(DType::f32, {2048, 2048})},
                       {type(DType::f32, {2048, 2048})});
  CHECK(model.node_cost(gemm->graph, gemm->node()).compute_seconds ==
        Approx(CostModel(DeviceProfile::load_builtin("h200"))
                   .node_cost(gemm->graph, gemm->node())
                   .compute_seconds));
}

TEST_CASE("grouped convolution quantizes one GEMM per group", "[cost]") {
  for (const auto& f : test::published_figures()) {
    INFO(f.name);
    ir::Attributes attrs;
    attrs.set("group", int64_t{4});
    auto g = one_node(&test_ops().conv, "Conv",
                      {type(DType::f32, {1, 256, 14, 14}), type(DType::f32, {256, 64, 3, 3})},
                      {type(DType::f32, {1, 256, 14, 14})}, attrs);
    cost::NodeCost c = model_for(f).node_cost(g->graph, g->node());
    double flops = 2.0 * (256 * 14 * 14) * (64 * 9);
    double bytes = (256.0 * 196 + 256 * 64 * 9 + 256.0 * 196) * 4;
    // 64 channels a group: 4 tiles of 64x64 (196 pixels) are too few, so 32x64 tiles, 2 by 4
    // in each of the 4 groups, at 0.57 of the 128x64 tile's efficiency.
    double wave = tile_busy(4 * 2 * 4, 32 * 64, 4.0 * 64 * 196, f.sms) * 0.57;
    CHECK(c.seconds == Approx(roofline(f, flops, f.fp32_tflops, f.eff_contraction, wave, bytes)));
  }
}

TEST_CASE("elementwise ops are memory-bound at the bandwidth; tiny ones launch-bound", "[cost]") {
  for (const auto& f : test::published_figures()) {
    INFO(f.name);
    auto big = one_node(&test_ops().relu, "Relu", {type(DType::f32, {64, 1024, 1024})},
                        {type(DType::f32, {64, 1024, 1024})});
    cost::NodeCost c = model_for(f).node_cost(big->graph, big->node());
    double n = 64.0 * 1024 * 1024;
    CHECK(c.seconds == Approx(roofline(f, n, f.fp32_tflops, f.eff_elementwise, 1, 8 * n)));
    CHECK(c.bound == Bound::Memory);

    auto tiny =
        one_node(&test_ops().relu, "Relu", {type(DType::f32, {16})}, {type(DType::f32, {16})});
    cost::NodeCost t = model_for(f).node_cost(tiny->graph, tiny->node());
    CHECK(t.seconds == Approx(roofline(f, 16, f.fp32_tflops, f.eff_elementwise, 1, 128)));
    CHECK(t.bound == Bound::Launch);
  }
}

TEST_CASE("reductions read their input once", "[cost]") {
  for (const auto& f : test::published_figures()) {
    INFO(f.name);
    auto g = one_node(&test_ops().reduce_sum, "ReduceSum", {type(DType::f32, {4096, 4096})},
                      {type(DType::f32, {4096, 1})});
    cost::NodeCost c = model_for(f).node_cost(g->graph, g->node());
    double n = 4096.0 * 4096;
    CHECK(c.seconds == Approx(roofline(f, n, f.fp32_tflops, f.eff_reduction, 1, (n + 4096) * 4)));
    CHECK(c.bound == Bound::Memory);
  }
}

TEST_CASE("fused kernels cost one launch plus their own inputs and outputs", "[cost]") {
  for (const auto& f : test::published_figures()) {
    INFO(f.name);
    CostModel model = model_for(f);
    // Add + Mul + Relu over 16M f16 elements: two inputs, one output, 3 FLOPs per element.
    double n = 16.0 * 1024 * 1024;
    cost::NodeCost c = model.fused_kernel_cost(
        {3 * n, 2 * n * 2, n * 2, ir::FusionClass::Elementwise, DType::f16});
    CHECK(c.seconds == Approx(roofline(f, 3 * n, f.fp32_tflops, f.eff_elementwise, 1, 6 * n)));
    CHECK(c.launch_seconds == Approx(f.launch_us * 1e-6));
    // One fused kernel beats three unfused ones (three launches, intermediates through HBM).
    double unfused = 3 * f.launch_us * 1e-6 +
                     (3 * n * 2 + 3 * n * 2 + 2 * n * 2) / (f.bandwidth_gbps * 1e9 * 0.9);
    CHECK(c.seconds < unfused);
    // A GEMM with its bias and activation fused in runs at the tensor-core peak.
    double flops = 2.0 * 4096 * 4096 * 4096;
    double bytes = 3.0 * 4096 * 4096 * 2;
    cost::NodeCost gemm = model.fused_kernel_cost({flops, 2.0 * 4096 * 4096 * 2, 4096.0 * 4096 * 2,
                                                   ir::FusionClass::Contraction, DType::f16});
    CHECK(gemm.seconds == Approx(roofline(f, flops, f.fp16_tflops, f.eff_contraction, 1, bytes)));
  }
}

TEST_CASE("a kernel is priced at the shapes its constant inputs give its body", "[cost]") {
  // (Relu (Reshape ?0 ?1)) with the shape passed as a kernel input, as imports of static
  // exports leave it: the Relu runs over 4096 elements, not over one of unknown shape.
  ir::GraphBuilder b("k");
  ir::ValueId x = b.input("x", DType::f32, {ir::Dim(4096)});
  ir::ValueId shape =
      b.weight("shape", ir::Tensor::from_vector<int64_t>(DType::i64, {2}, {64, 64}));
  b.output(b.op("Kernel", {x, shape}, {{"body", std::string("(Relu (Reshape ?0 ?1))")}}));
  ir::Graph g = std::move(b).finish();
  const ir::Node& kernel = g.nodes().back();
  REQUIRE(g.value(kernel.outputs[0]).type.str() == "f32[64,64]");
  cost::NodeCost c = model_for(test::published_figures().back()).node_cost(g, kernel);
  CHECK(c.flops == Approx(4096));
}

TEST_CASE("a kernel whose body the bound shapes do not fit is priced as opaque", "[cost]") {
  // (Reshape :shape (4 -1) ?0) over [n]: n = 1, the default, is no multiple of 4.
  ir::GraphBuilder b("k");
  ir::ValueId x = b.input("x", DType::f32, {ir::Dim::symbol("n")});
  b.output(b.op("Kernel", {x}, {{"body", std::string("(Relu (Reshape :shape (4 -1) ?0))")}}));
  ir::Graph g = std::move(b).finish();
  const ir::Node& kernel = g.nodes().back();
  CostModel model = model_for(test::published_figures().back());
  cost::NodeCost c = model.node_cost(g, kernel);
  CHECK(c.seconds > 0);
  CHECK(
      c.seconds ==
      Approx(model.opaque_cost("Kernel", {type(DType::f32, {1})}, {g.value(kernel.outputs[0]).type})
                 .seconds));
  cost::CostOptions at8;
  at8.dim_bindings["n"] = 8;  // a binding the body fits: priced by its body
  CHECK(CostModel(DeviceProfile::load_builtin(test::published_figures().back().name), at8)
            .node_cost(g, kernel)
            .flops == Approx(8));
}

TEST_CASE("a 16-bit precision prices f32 tensors at 16 bits and f32 GEMMs on tensor cores",
          "[cost]") {
  const PublishedFigures& f = test::published_figures().back();
  cost::CostOptions at_bf16;
  at_bf16.precision = DType::bf16;
  CostModel f32 = model_for(f), bf16(DeviceProfile::load_builtin(f.name), at_bf16);

  auto relu = one_node(&test_ops().relu, "Relu", {type(DType::f32, {64, 1024, 1024})},
                       {type(DType::f32, {64, 1024, 1024})});
  double n = 64.0 * 1024 * 1024;
  CHECK(f32.node_cost(relu->graph, relu->node()).bytes == Approx(8 * n));
  cost::NodeCost r = bf16.node_cost(relu->graph, relu->node());
  CHECK(r.bytes == Approx(4 * n));
  CHECK(r.seconds == Approx(roofline(f, n, f.fp32_tflops, f.eff_elementwise, 1, 4 * n)));

  // A GEMM of f32 tensors stored at bf16: half the bytes, the bf16 tensor-core peak.
  auto mm = one_node(&test_ops().matmul, "MatMul",
                     {type(DType::f32, {8192, 8192}), type(DType::f32, {8192, 8192})},
                     {type(DType::f32, {8192, 8192})});
  cost::NodeCost m = bf16.node_cost(mm->graph, mm->node());
  CHECK(m.bytes == Approx(3.0 * 8192 * 8192 * 2));
  CHECK(m.peak == Approx(f.bf16_tflops * 1e12));
  CHECK(f32.node_cost(mm->graph, mm->node()).peak == Approx(f.fp32_tflops * 1e12));

  // Tensors of other types keep their size: i64 indices (a data movement op of the test table,
  // which counts every input and output).
  auto gather = one_node(&test_ops().transpose, "GatherLike",
                         {type(DType::f32, {1000, 64}), type(DType::i64, {128})},
                         {type(DType::f32, {128, 64})});
  CHECK(f32.node_cost(gather->graph, gather->node()).bytes ==
        Approx((1000.0 * 64 + 128 * 64) * 4 + 128 * 8));
  CHECK(bf16.node_cost(gather->graph, gather->node()).bytes ==
        Approx((1000.0 * 64 + 128 * 64) * 2 + 128 * 8));

  // A fused kernel's own inputs and outputs, and its body's ops, at the precision.
  ir::GraphBuilder b("k");
  ir::ValueId x = b.input("x", DType::f32, {ir::Dim(4096)});
  ir::ValueId y = b.input("y", DType::f32, {ir::Dim(4096)});
  b.output(b.op("Kernel", {x, y}, {{"body", std::string("(Relu (Add ?0 ?1))")}}));
  ir::Graph g = std::move(b).finish();
  const ir::Node& kernel = g.nodes().back();
  CHECK(f32.node_cost(g, kernel).bytes == Approx(3 * 4096 * 4));
  CHECK(bf16.node_cost(g, kernel).bytes == Approx(3 * 4096 * 2));
  CHECK(bf16.node_cost(g, kernel).flops == Approx(2 * 4096));

  cost::CostOptions bad;
  bad.precision = DType::i32;
  CHECK_THROWS_WITH(CostModel(DeviceProfile::load_builtin(f.name), bad),
                    Catch::Contains("precision i32"));
}

TEST_CASE("layout ops that codegen folds cost nothing; data movement costs its bytes", "[cost]") {
  for (const auto& f : test::published_figures()) {
    INFO(f.name);
    CostModel model = model_for(f);
    for (const char* op : {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout",
                           "Constant", "Shape"}) {
      INFO(op);
      auto opaque =
          one_node(nullptr, op, {type(DType::f32, {64, 1024})}, {type(DType::f32, {64 * 1024})});
      cost::NodeCost c = model.node_cost(opaque->graph, opaque->node());
      CHECK(c.seconds == 0);
      CHECK(c.bound == Bound::Free);
    }
    auto reshape = one_node(&test_ops().reshape, "Reshape", {type(DType::f32, {64, 1024})},
                            {type(DType::f32, {65536})});
    CHECK(model.node_cost(reshape->graph, reshape->node()).seconds == 0);

    auto transpose =
        one_node(&test_ops().transpose, "Transpose", {type(DType::f16, {32, 512, 1024})},
                 {type(DType::f16, {32, 1024, 512})});
    cost::NodeCost t = model.node_cost(transpose->graph, transpose->node());
    double bytes = 2.0 * 32 * 512 * 1024 * 2;
    CHECK(t.seconds == Approx(roofline(f, 0, f.fp32_tflops, 1, 1, bytes)));
    CHECK(t.bound == Bound::Memory);
  }
}

TEST_CASE("opaque ops are estimated as launch plus the bytes they move", "[cost]") {
  for (const auto& f : test::published_figures()) {
    INFO(f.name);
    auto g = one_node(nullptr, "NonMaxSuppression",
                      {type(DType::f32, {1, 100000, 4}), type(DType::f32, {1, 1, 100000})},
                      {type(DType::i64, {1000, 3})});
    cost::NodeCost c = model_for(f).node_cost(g->graph, g->node());
    double bytes = (400000.0 + 100000) * 4 + 3000 * 8;
    CHECK(c.seconds == Approx(roofline(f, 0, f.fp32_tflops, 1, 1, bytes)));
  }
}

TEST_CASE("symbolic dims take the given binding, else the default", "[cost]") {
  const auto& f = test::published_figures().back();
  ir::TensorType x{DType::f16, ir::Shape{ir::Dim::symbol("batch"), ir::Dim(1024)}};
  ir::TensorType y{DType::f16, ir::Shape{ir::Dim::symbol("batch"), ir::Dim(4096)}};
  auto g = one_node(&test_ops().matmul, "MatMul", {x, type(DType::f16, {1024, 4096})}, {y});

  cost::CostOptions options;
  options.dim_bindings["batch"] = 4096;
  cost::NodeCost bound =
      CostModel(DeviceProfile::load_builtin(f.name), options).node_cost(g->graph, g->node());
  double flops = 2.0 * 4096 * 4096 * 1024;
  double bytes = (4096.0 * 1024 + 1024.0 * 4096 + 4096.0 * 4096) * 2;
  CHECK(bound.seconds == Approx(roofline(f, flops, f.fp16_tflops, f.eff_contraction,
                                         wave_of(32 * 32, f.sms), bytes)));

  cost::NodeCost one = model_for(f).node_cost(g->graph, g->node());  // batch = 1
  CHECK(one.flops == Approx(2.0 * 4096 * 1024));
}

TEST_CASE("a symbolic dim is its expression of the bound symbols", "[cost]") {
  // [batch*64, 128] is 64 rows per batch entry whether batch is given or takes the default;
  // binding the expression as a whole to the default would make it 1 row, which is neither a
  // fair price nor a shape a Reshape to (64 -1 128) accepts.
  ir::TensorType x{DType::f32, ir::Shape{ir::Dim::from_sym(ir::SymInt::symbol("batch") * 64),
                                         ir::Dim(128), ir::Dim::unknown()}};
  std::map<std::string, int64_t> given = {{"batch", 4}};
  CHECK(cost::bind_type(x, {nullptr, 1}).shape.str() == "[64,128,1]");
  CHECK(cost::bind_type(x, {&given, 1}).shape.str() == "[256,128,1]");
  CHECK(cost::bind_type(x, {nullptr, 2}).shape.str() == "[128,128,2]");
}

TEST_CASE("e-node costs need no graph", "[cost]") {
  const auto& f = test::published_figures().front();
  ir::Node node;
  node.op_type = "MatMul";
  node.def = &test_ops().matmul;
  ir::TensorType a = type(DType::f16, {2048, 2048}), b = type(DType::f16, {2048, 2048});
  ir::OpContext ctx{node, test_ops().matmul, {&a, &b}, {nullptr, nullptr}};
  cost::NodeCost c = model_for(f).node_cost(ctx, {type(DType::f16, {2048, 2048})});
  double flops = 2.0 * 2048 * 2048 * 2048;
  CHECK(c.seconds == Approx(roofline(f, flops, f.fp16_tflops, f.eff_contraction,
                                     wave_of(16 * 16, f.sms), 3.0 * 2048 * 2048 * 2)));
}

TEST_CASE("a graph's cost is the sum of its kernels", "[cost]") {
  const auto& f = test::published_figures()[1];
  ir::Graph g;
  ir::ValueId x = g.add_input("x", type(DType::f32, {256, 1024}));
  ir::ValueId w = g.add_input("w", type(DType::f32, {1024, 1024}));
  ir::ValueId h = g.add_value("h", type(DType::f32, {256, 1024}));
  ir::ValueId r = g.add_value("r", type(DType::f32, {256, 1024}));
  ir::ValueId y = g.add_value("y", type(DType::f32, {262144}));
  g.add_node({"mm", "MatMul", "", &test_ops().matmul, {x, w}, {h}, {}, {}});
  g.add_node({"act", "Relu", "", &test_ops().relu, {h}, {r}, {}, {}});
  g.add_node({"flat", "Reshape", "", &test_ops().reshape, {r}, {y}, {}, {}});
  g.add_output(y);
  CostModel model = model_for(f);
  cost::GraphCost total = model.graph_cost(g);
  REQUIRE(total.nodes.size() == 3);
  CHECK(total.nodes[0].name == "mm");
  CHECK(total.nodes[1].op == "Relu");
  CHECK(total.nodes[2].cost.bound == Bound::Free);
  CHECK(total.seconds == Approx(total.nodes[0].cost.seconds + total.nodes[1].cost.seconds));
  CHECK(total.ms() == Approx(total.seconds * 1e3));
}

TEST_CASE("a Concat that its parts' producers store in place costs nothing in a graph", "[cost]") {
  CostModel model = model_for(test::published_figures()[1]);
  auto concat_of = [](bool computed_parts) {
    ir::GraphBuilder b;
    ir::ValueId x = b.input("x", DType::f32, {ir::Dim(1), ir::Dim(64), ir::Dim(56), ir::Dim(56)});
    ir::ValueId y = b.input("y", DType::f32, {ir::Dim(1), ir::Dim(64), ir::Dim(56), ir::Dim(56)});
    ir::ValueId a = computed_parts ? b.op("Relu", {x}) : x;
    ir::ValueId c = computed_parts ? b.op("Sigmoid", {y}) : y;
    b.output(b.op("Neg", {b.op("Concat", {a, c}, {{"axis", int64_t{1}}})}));
    return std::move(b).finish();
  };
  // Relu and Sigmoid write their halves of the Concat's buffer; the Concat does nothing.
  cost::GraphCost in_place = model.graph_cost(concat_of(true));
  REQUIRE(in_place.nodes.size() == 4);
  CHECK(in_place.nodes[2].op == "Concat");
  CHECK(in_place.nodes[2].cost.bound == Bound::Free);
  CHECK(in_place.nodes[2].cost.seconds == 0);
  CHECK(in_place.nodes[3].cost.seconds > 0);
  // The model's inputs are copied into it: the Concat costs its bytes.
  cost::GraphCost copied = model.graph_cost(concat_of(false));
  REQUIRE(copied.nodes.size() == 2);
  CHECK(copied.nodes[0].op == "Concat");
  CHECK(copied.nodes[0].cost.seconds > 0);
  CHECK(copied.nodes[0].cost.bound != Bound::Free);
}
