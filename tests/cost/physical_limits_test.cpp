// Property: no predicted time beats the device's physical limits. For random nodes of every
// class, dtype and shape on every profile, time >= FLOPs / peak (the chosen peak, and the
// device's largest) and time >= bytes / bandwidth, and every kernel pays its launch.
#include <algorithm>
#include <catch2/catch.hpp>
#include <random>

#include "cost/cost_model.h"
#include "tests/cost/published_figures.h"
#include "tests/cost/test_ops.h"

using namespace eqfuse;
using test::type;

namespace {

void check_limits(const cost::DeviceProfile& p, const cost::NodeCost& c) {
  double max_peak = std::max(
      {p.fp64, p.fp64_tensor, p.fp32, p.tf32_tensor, p.fp16_tensor, p.bf16_tensor, p.int8_tensor});
  CHECK(c.seconds >= c.bytes / p.memory_bandwidth);
  CHECK(c.seconds >= c.flops / max_peak);
  if (c.flops > 0) CHECK(c.seconds >= c.flops / c.peak);
  if (c.bound != cost::Bound::Free) CHECK(c.seconds >= p.launch_overhead);
}

}  // namespace

TEST_CASE("no node beats the device's physical limits", "[cost][property]") {
  std::mt19937_64 rng(20261129);
  auto dim = [&](int64_t hi) { return std::uniform_int_distribution<int64_t>(1, hi)(rng); };
  const ir::DType dtypes[] = {ir::DType::f32, ir::DType::f16, ir::DType::bf16, ir::DType::f64,
                              ir::DType::i8};
  for (const auto& f : test::published_figures()) {
    INFO(f.name);
    for (bool tf32 : {false, true}) {
      cost::CostOptions options;
      options.allow_tf32 = tf32;
      cost::CostModel model(cost::DeviceProfile::load_builtin(f.name), options);
      const cost::DeviceProfile& p = model.profile();
      for (int i = 0; i < 300; ++i) {
        ir::DType dt = dtypes[rng() % 5];
        int64_t b = dim(16), m = dim(4096), k = dim(4096), n = dim(4096);
        std::unique_ptr<test::OneNodeGraph> g;
        switch (rng() % 5) {
          case 0:
            g = test::one_node(&test::test_ops().matmul, "MatMul",
                               {type(dt, {b, m, k}), type(dt, {b, k, n})}, {type(dt, {b, m, n})});
            break;
          case 1: {
            int64_t c = dim(256), co = dim(256), h = dim(64), r = 1 + 2 * (rng() % 3);
            g = test::one_node(&test::test_ops().conv, "Conv",
                               {type(dt, {b, c, h, h}), type(dt, {co, c, r, r})},
                               {type(dt, {b, co, h, h})});
            break;
          }
          case 2:
            g = test::one_node(&test::test_ops().relu, "Relu", {type(dt, {b, m, n})},
                               {type(dt, {b, m, n})});
            break;
          case 3:
            g = test::one_node(&test::test_ops().reduce_sum, "ReduceSum", {type(dt, {b, m, n})},
                               {type(dt, {b, m, 1})});
            break;
          default:
            g = test::one_node(&test::test_ops().transpose, "Transpose", {type(dt, {b, m, n})},
                               {type(dt, {b, n, m})});
            break;
        }
        check_limits(p, model.node_cost(g->graph, g->node()));
        double flops = std::uniform_real_distribution<double>(0, 1e13)(rng);
        double bytes = std::uniform_real_distribution<double>(0, 1e10)(rng);
        auto fusion = static_cast<ir::FusionClass>(rng() % 6);
        check_limits(p, model.fused_kernel_cost({flops, bytes / 2, bytes / 2, fusion, dt}));
      }
    }
  }
}
