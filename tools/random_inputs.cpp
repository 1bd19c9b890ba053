#include "tools/random_inputs.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <random>

#include "frontend/test_data.h"
#include "support/error.h"
#include "tools/model_summary.h"

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

std::map<std::string, int64_t> parse_dim_options(const std::vector<std::string>& specs) {
  std::map<std::string, int64_t> out;
  for (const std::string& spec : specs) {
    size_t eq = spec.rfind('=');
    bool ok = eq != std::string::npos && eq > 0 && eq + 1 < spec.size();
    int64_t size = 0;
    if (ok) {
      try {
        size_t used = 0;
        size = std::stoll(spec.substr(eq + 1), &used);
        ok = used == spec.size() - eq - 1 && size > 0;
      } catch (const std::exception&) {
        ok = false;
      }
    }
    if (!ok)
      throw Error(fmt::format("--dim '{}': expected NAME=SIZE, SIZE a positive integer", spec));
    auto [it, inserted] = out.emplace(spec.substr(0, eq), size);
    if (!inserted && it->second != size)
      throw Error(
          fmt::format("--dim '{}': {} is already bound to {}", spec, it->first, it->second));
  }
  return out;
}

std::map<std::string, int64_t> dim_hints_from_test_data(const ir::Graph& graph,
                                                        const std::filesystem::path& model) {
  std::map<std::string, int64_t> hints;
  std::error_code ec;
  std::filesystem::path dir = model.parent_path();
  if (dir.empty()) dir = ".";
  std::vector<std::filesystem::path> sets;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (e.is_directory(ec) && e.path().filename().string().rfind("test_data_set_", 0) == 0)
      sets.push_back(e.path());
  }
  std::sort(sets.begin(), sets.end());
  for (const auto& set : sets) {
    try {
      frontend::TestDataSet data = frontend::read_test_data_set(set);
      std::vector<ir::Tensor> inputs = frontend::bind_inputs(graph, data.inputs);
      std::map<std::string, int64_t> found;
      for (size_t i = 0; i < inputs.size(); ++i) {
        const ir::Shape& s = graph.value(graph.inputs()[i]).type.shape;
        if (!s.has_rank() || s.rank() != inputs[i].rank()) continue;
        for (size_t k = 0; k < s.rank(); ++k) {
          if (!s[k].is_static() && !s[k].symbol_name().empty())
            found.emplace(s[k].symbol_name(), inputs[i].dims()[k]);
        }
      }
      if (!found.empty()) return found;
    } catch (const Error&) {
      continue;  // a test set that does not fit gives no hint
    }
  }
  return hints;
}

std::map<std::string, DimChoice> choose_dims(const ir::Graph& graph,
                                             const std::map<std::string, int64_t>& bound,
                                             const std::map<std::string, int64_t>& hints) {
  std::map<std::string, DimChoice> out;
  for (ir::ValueId id : graph.inputs()) {
    const ir::Shape& s = graph.value(id).type.shape;
    if (!s.has_rank()) continue;
    for (size_t k = 0; k < s.rank(); ++k) {
      if (s[k].is_static()) continue;
      for (const std::string& name : s[k].sym().symbols()) {
        if (out.count(name)) continue;
        if (auto it = bound.find(name); it != bound.end()) {
          out[name] = {it->second, "--dim"};
        } else if (auto h = hints.find(name); h != hints.end()) {
          out[name] = {h->second, "test data"};
        } else {
          out[name] = {k == 0 && s.rank() > 1 ? kDefaultBatchSize : kDefaultDimSize, "default"};
        }
      }
    }
  }
  for (const auto& [name, size] : bound) {
    if (!out.count(name))
      throw Error(
          fmt::format("--dim {}={}: the model's inputs have no dim named '{}'", name, size, name));
  }
  return out;
}

std::vector<ir::Tensor> random_inputs(const ir::Graph& graph, uint64_t seed,
                                      const std::map<std::string, DimChoice>& dims) {
  std::map<std::string, int64_t> sizes;
  for (const auto& [name, choice] : dims) sizes[name] = choice.size;
  std::mt19937_64 rng(seed);
  auto consumers = graph.consumers();
  std::vector<ir::Tensor> out;
  for (ir::ValueId id : graph.inputs()) {
    const ir::TensorType& type = graph.value(id).type;
    std::vector<int64_t> shape;
    if (type.shape.has_rank()) {
      for (const ir::Dim& d : type.shape.dims()) {
        auto v = d.evaluate(sizes);
        if (!v || *v < 0)
          throw Error(fmt::format("input '{}': no size for dim {} (bind it with --dim)",
                                  graph.value(id).name, d.str()));
        shape.push_back(*v);
      }
    }
    ir::Tensor t(type.dtype, shape);
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

size_t seed_missing_weights(ir::Graph& graph, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(-kSeededWeightScale, kSeededWeightScale);
  size_t filled = 0;
  for (size_t id = 0; id < graph.values().size(); ++id) {
    ir::Value& v = graph.value(ir::ValueId(id));
    if (!weight_missing(v)) continue;
    std::vector<int64_t> shape;
    for (const ir::Dim& d : v.type.shape.dims()) {
      if (!d.is_static())
        throw Error(fmt::format("weight '{}' has a symbolic dim {}", v.name, d.str()));
      shape.push_back(d.value());
    }
    ir::Tensor t(v.type.dtype, shape);
    if (ir::is_floating(v.type.dtype))
      for (int64_t i = 0; i < t.numel(); ++i) t.set(i, dist(rng));
    v.data = std::make_shared<const ir::Tensor>(std::move(t));
    v.external.reset();
    ++filled;
  }
  return filled;
}

}  // namespace eqfuse::tools
