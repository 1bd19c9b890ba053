// The cost model over the real op table (graphs built with ir::GraphBuilder): the work counts of
// the table's entries flow into the roofline, folded layout ops are free, a Gather pays for its
// rows rather than its whole table, and whole graphs obey the physical limits.
#include <algorithm>
#include <catch2/catch.hpp>

#include "cost/cost_model.h"
#include "ir/builder.h"
#include "tests/cost/published_figures.h"

using namespace eqfuse;
using ir::Dim;
using ir::DType;

namespace {

double roofline(const test::PublishedFigures& f, double flops, double peak_tflops, double eff,
                double wave, double bytes) {
  double compute = flops / (peak_tflops * 1e12 * eff * wave);
  double memory = bytes / (f.bandwidth_gbps * 1e9 * f.eff_bandwidth);
  return f.launch_us * 1e-6 + std::max(compute, memory);
}

const ir::Node& node_named(const ir::Graph& g, const std::string& op) {
  for (const ir::Node& n : g.nodes())
    if (n.op_type == op) return n;
  FAIL("no " << op << " node");
  throw;
}

}  // namespace

TEST_CASE("op table: MatMul and Conv costs follow their work counts", "[cost]") {
  ir::GraphBuilder b("block");
  ir::ValueId x = b.input("x", DType::f16, {Dim(8), Dim(64), Dim(56), Dim(56)});
  ir::ValueId w = b.weight("w", ir::Tensor(DType::f16, {128, 64, 3, 3}));
  ir::ValueId y = b.op("Conv", {x, w}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  ir::ValueId r = b.op("Relu", {y});
  ir::ValueId flat =
      b.op("Reshape", {r, b.constant(ir::Tensor::from_doubles(DType::i64, {2}, {8, -1}))});
  ir::ValueId a = b.input("a", DType::f16, {Dim(4096), Dim(4096)});
  ir::ValueId m = b.op("MatMul", {a, a});
  b.output(flat);
  b.output(m);
  ir::Graph g = std::move(b).finish();

  for (const auto& f : test::published_figures()) {
    INFO(f.name);
    cost::CostModel model(cost::DeviceProfile::load_builtin(f.name));
    cost::NodeCost conv = model.node_cost(g, node_named(g, "Conv"));
    CHECK(conv.flops == Approx(2.0 * (8 * 128 * 56 * 56) * (64 * 9)));
    CHECK(conv.seconds ==
          Approx(roofline(f, conv.flops, f.fp16_tflops, f.eff_contraction,
                          128.0 * 25088 / (((392 + f.sms - 1) / f.sms) * f.sms * 128 * 64),
                          conv.bytes)));  // 392 tiles of 128x64 (cost/kernel_forms.h)
    cost::NodeCost mm = model.node_cost(g, node_named(g, "MatMul"));
    double flops = 2.0 * 4096 * 4096 * 4096;
    CHECK(mm.flops == Approx(flops));
    CHECK(mm.bytes == Approx(3.0 * 4096 * 4096 * 2));
    double wave = 1024.0 / (((1024 + f.sms - 1) / f.sms) * f.sms);
    CHECK(mm.seconds ==
          Approx(roofline(f, flops, f.fp16_tflops, f.eff_contraction, wave, mm.bytes)));
    CHECK(model.node_cost(g, node_named(g, "Reshape")).bound == cost::Bound::Free);

    cost::GraphCost total = model.graph_cost(g);
    double sum = 0;
    for (const auto& n : total.nodes) {
      sum += n.cost.seconds;
      CHECK(n.cost.seconds >= n.cost.bytes / (f.bandwidth_gbps * 1e9));
    }
    CHECK(total.seconds == Approx(sum));
  }
}

TEST_CASE("op table: a Gather pays for the rows it reads, not the whole table", "[cost]") {
  ir::GraphBuilder b("embed");
  ir::ValueId table = b.input("table", DType::f32, {Dim(50000), Dim(1024)});
  ir::ValueId ids = b.input("ids", DType::i64, {Dim(16)});
  b.output(b.op("Gather", {table, ids}));
  ir::Graph g = std::move(b).finish();
  cost::CostModel model(cost::DeviceProfile::load_builtin("h200"));
  cost::NodeCost c = model.node_cost(g, node_named(g, "Gather"));
  CHECK(c.bytes < 50000.0 * 1024 * 4 / 100);
  CHECK(c.bytes >= 2.0 * 16 * 1024 * 4);
}
