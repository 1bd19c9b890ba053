#include "tools/random_inputs.h"

#include <algorithm>
#include <optional>
#include <random>

namespace eqfuse::tools {

namespace {

// The smallest bound an integer value must respect where it is used as an index.
std::optional<int64_t> index_bound(const ir::Graph& g,
                                   const std::vector<std::vector<ir::NodeId>>& consumers,
                                   ir::ValueId v, int depth) {
  if (depth > 8) return std::nullopt;
  std::optional<int64_t> bound;
  auto take = [&](std::optional<int64_t> b) {
    if (b && *b > 0) bound = bound ? std::min(*bound, *b) : *b;
  };
  for (ir::NodeId id : consumers[v]) {
    const ir::Node& n = g.node(id);
    for (size_t p = 0; p < n.inputs.size(); ++p) {
      if (n.inputs[p] != v) continue;
      const std::string& op = n.op_type;
      if ((op == "Gather" || op == "GatherElements" || op == "GatherND") && p == 1) {
        const ir::Shape& data = g.value(n.inputs[0]).type.shape;
        if (!data.has_rank() || data.rank() == 0) continue;
        int64_t axis = op == "GatherND" ? 0 : n.attrs.get_int("axis", 0);
        if (axis < 0) axis += static_cast<int64_t>(data.rank());
        if (axis < 0 || axis >= static_cast<int64_t>(data.rank())) continue;
        const ir::Dim& d = data[static_cast<size_t>(axis)];
        if (d.is_static()) take(d.value());
      } else if (p == 0 && (op == "Cast" || op == "Reshape" || op == "Unsqueeze" ||
                            op == "Squeeze" || op == "Flatten" || op == "Identity" ||
                            op == "Expand" || op == "Transpose" || op == "Tile")) {
        for (ir::ValueId out : n.outputs) take(index_bound(g, consumers, out, depth + 1));
      }
    }
  }
  return bound;
}

}  // namespace

std::vector<ir::Tensor> random_inputs(const ir::Graph& graph, uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto consumers = graph.consumers();
  std::vector<ir::Tensor> out;
  for (ir::ValueId id : graph.inputs()) {
    const ir::TensorType& type = graph.value(id).type;
    std::vector<int64_t> dims;
    if (type.shape.has_rank()) {
      for (const ir::Dim& d : type.shape.dims()) dims.push_back(d.is_static() ? d.value() : 1);
    }
    ir::Tensor t(type.dtype, dims);
    if (ir::is_floating(type.dtype)) {
      std::uniform_real_distribution<double> dist(-1.0, 1.0);
      for (int64_t i = 0; i < t.numel(); ++i) t.set(i, dist(rng));
    } else if (type.dtype == ir::DType::boolean) {
      std::bernoulli_distribution dist(0.5);
      for (int64_t i = 0; i < t.numel(); ++i) t.set(i, dist(rng) ? 1 : 0);
    } else {
      int64_t bound = index_bound(graph, consumers, id, 0).value_or(2);
      std::uniform_int_distribution<int64_t> dist(0, bound - 1);
      for (int64_t i = 0; i < t.numel(); ++i) t.set(i, static_cast<double>(dist(rng)));
    }
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace eqfuse::tools
