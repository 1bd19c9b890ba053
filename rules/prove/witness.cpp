#include "rules/prove/witness.h"

#include <algorithm>
#include <cmath>

#include "ir/interpreter.h"
#include "support/error.h"

namespace eqfuse::rules::prove {

namespace {

ir::TensorType widened(ir::TensorType t) {
  if (ir::is_floating(t.dtype)) t.dtype = ir::DType::f64;
  return t;
}

bool agree(double a, double b, double rtol) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  if (std::isinf(a) || std::isinf(b)) return a == b;
  return std::abs(a - b) <= rtol * (1 + std::max(std::abs(a), std::abs(b)));
}

// Where a kernel cannot run in float64 and the graph runs as it is: float32 rounding.
constexpr double kFloat32Rtol = 1e-4;

}  // namespace

ir::Graph as_float64(const ir::Graph& graph) {
  ir::Graph out;
  out.name = graph.name;
  out.opsets = graph.opsets;
  std::vector<ir::ValueId> map(graph.values().size(), ir::kNoValue);
  for (ir::ValueId id : graph.inputs())
    map[id] = out.add_input(graph.value(id).name, widened(graph.value(id).type));
  auto mapped = [&](ir::ValueId id) {
    if (id == ir::kNoValue) return id;
    if (map[id] == ir::kNoValue) {
      const ir::Value& v = graph.value(id);
      if (!v.is_weight()) fail("as_float64: value '" + v.name + "' is used before defined");
      const ir::Tensor& t = *graph.weight_data(id);
      map[id] = out.add_weight(v.name, ir::is_floating(t.dtype()) ? t.cast(ir::DType::f64) : t);
    }
    return map[id];
  };
  for (const ir::Node& node : graph.nodes()) {
    ir::Node copy = node;
    for (ir::ValueId& in : copy.inputs) in = mapped(in);
    for (ir::ValueId& o : copy.outputs) {
      const ir::Value& v = graph.value(o);
      ir::ValueId id = out.add_value(v.name, widened(v.type));
      map[o] = id;
      o = id;
    }
    out.add_node(std::move(copy));
  }
  for (ir::ValueId o : graph.outputs()) out.add_output(mapped(o));
  return out;
}

std::optional<Mismatch> compare_sides(const ir::Graph& graph, size_t num_lhs,
                                      const std::vector<ir::Tensor>& inputs, double rtol) {
  std::vector<ir::Tensor> outs;
  try {
    ir::Graph wide = as_float64(graph);
    outs = ir::Interpreter(wide).run(inputs);
  } catch (const Error&) {
    rtol = std::max(rtol, kFloat32Rtol);
    // Some kernels want float32 operands (a Constant node yields f32): run the graph as it is.
    std::vector<ir::Tensor> narrow;
    for (size_t i = 0; i < inputs.size(); ++i)
      narrow.push_back(inputs[i].cast(graph.value(graph.inputs()[i]).type.dtype));
    outs = ir::Interpreter(graph).run(narrow);
  }
  for (size_t k = 0; k < num_lhs; ++k) {
    const ir::Tensor& l = outs.at(k);
    const ir::Tensor& r = outs.at(k + num_lhs);
    if (l.numel() != r.numel()) return Mismatch{k, -1, 0, 0};
    for (int64_t e = 0; e < l.numel(); ++e)
      if (!agree(l.get(e), r.get(e), rtol)) return Mismatch{k, e, l.get(e), r.get(e)};
  }
  return std::nullopt;
}

std::vector<ir::Tensor> random_inputs(const ir::Graph& graph,
                                      const std::vector<std::string>& nonzero,
                                      std::mt19937_64& rng) {
  std::vector<ir::Tensor> inputs;
  std::uniform_real_distribution<double> u(-2, 2);
  for (ir::ValueId id : graph.inputs()) {
    const ir::Value& v = graph.value(id);
    ir::TensorType t = widened(v.type);
    ir::Tensor x(t.dtype, t.shape.static_dims());
    bool nz = std::find(nonzero.begin(), nonzero.end(), v.name) != nonzero.end();
    for (int64_t i = 0; i < x.numel(); ++i) {
      double r = u(rng);
      if (nz && std::abs(r) < 0.5) r = r < 0 ? r - 0.5 : r + 0.5;
      if (!ir::is_floating(t.dtype)) r = std::floor(std::abs(r));
      x.set(i, r);
    }
    inputs.push_back(std::move(x));
  }
  return inputs;
}

std::optional<NumericFailure> numeric_check(const ir::Graph& graph, size_t num_lhs,
                                            const std::vector<std::string>& nonzero, int trials,
                                            uint64_t seed, double rtol) {
  std::mt19937_64 rng(seed);
  for (int t = 0; t < trials; ++t) {
    std::vector<ir::Tensor> inputs = random_inputs(graph, nonzero, rng);
    if (auto m = compare_sides(graph, num_lhs, inputs, rtol)) return NumericFailure{*m, inputs};
  }
  return std::nullopt;
}

}  // namespace eqfuse::rules::prove
