#include "ir/shape_values.h"

#include <algorithm>

namespace eqfuse::ir {

namespace {

using Values = std::vector<SymInt>;

bool any_known(const Values& v) {
  return std::any_of(v.begin(), v.end(), [](const SymInt& x) { return x.is_known(); });
}

// Elementwise binary op on rank <= 1 values with ONNX broadcasting of a one-element side.
template <typename F>
std::optional<Values> broadcast(const Values& a, const Values& b, F f) {
  if (a.size() != b.size() && a.size() != 1 && b.size() != 1) return std::nullopt;
  size_t n = std::max(a.size(), b.size());
  Values out;
  for (size_t i = 0; i < n; ++i)
    out.push_back(f(a[a.size() == 1 ? 0 : i], b[b.size() == 1 ? 0 : i]));
  return out;
}

// 1 or 0 where decidable: sizes are >= 0, so a symbolic size never equals a negative constant.
SymInt equal(const SymInt& a, const SymInt& b) {
  if (!a.is_known() || !b.is_known()) return SymInt::unknown();
  if (a == b) return SymInt(1);
  SymInt d = a - b;
  if (d.constant()) return SymInt(*d.constant() == 0 ? 1 : 0);
  if (surely_greater(a, b) || surely_greater(b, a)) return SymInt(0);
  auto neg = [](const SymInt& x) { return x.constant() && *x.constant() < 0; };
  if (neg(a) || neg(b)) return SymInt(0);
  return SymInt::unknown();
}

int64_t trunc_div(int64_t a, int64_t b) {
  return a / b;
}

std::optional<Values> compute(const OpContext& ctx, const TensorType& out) {
  const std::string& op = ctx.node.op_type;
  auto in = [&](size_t i) { return ctx.sym_ints_input(i); };
  if (op == "Shape") {
    const Shape& s = ctx.input_type(0).shape;
    if (!s.has_rank()) return std::nullopt;
    auto rank = int64_t(s.rank());
    auto clamp = [&](int64_t a) { return std::clamp<int64_t>(a < 0 ? a + rank : a, 0, rank); };
    int64_t start = clamp(ctx.attr_int("start"));
    int64_t end = ctx.has_attr("end") ? clamp(ctx.attr_int("end")) : rank;
    Values v;
    for (int64_t i = start; i < end; ++i) v.push_back(s[size_t(i)].sym());
    return v;
  }
  if (op == "Size") {
    const Shape& s = ctx.input_type(0).shape;
    if (!s.has_rank()) return std::nullopt;
    SymInt n(1);
    for (const Dim& d : s.dims()) n = n * d.sym();
    return Values{n};
  }
  if (op == "Identity" || op == "Reshape" || op == "Squeeze" || op == "Unsqueeze" ||
      op == "Flatten" || (op == "Cast" && is_integral(out.dtype))) {
    return in(0);
  }
  if (op == "Gather") {
    auto data = in(0);
    const Tensor* idx = ctx.input_value(1);
    const Shape& ds = ctx.input_type(0).shape;
    if (!data || !idx || !ds.has_rank() || ds.rank() != 1) return std::nullopt;
    auto n = int64_t(data->size());
    Values v;
    for (int64_t i : idx->to_int64s()) {
      if (i < 0) i += n;
      if (i < 0 || i >= n) ctx.fail("index " + std::to_string(i) + " is out of range");
      v.push_back((*data)[size_t(i)]);
    }
    return v;
  }
  if (op == "Concat") {
    Values v;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      const Shape& s = ctx.input_type(i).shape;
      if (!s.has_rank() || s.rank() != 1) return std::nullopt;
      auto part = in(i);
      if (!part) {
        if (!s[0].is_static()) return std::nullopt;
        part = Values(size_t(s[0].value()), SymInt::unknown());
      }
      v.insert(v.end(), part->begin(), part->end());
    }
    return v;
  }
  if (op == "Slice") {
    auto data = in(0);
    auto starts = ctx.ints_attr_or_input("starts", 1), ends = ctx.ints_attr_or_input("ends", 2);
    auto steps = ctx.ints_attr_or_input("steps", 4);
    if (!data || !starts || !ends || starts->size() != 1 || ends->size() != 1) return std::nullopt;
    int64_t step = steps && steps->size() == 1 ? (*steps)[0] : 1;
    if (step == 0) return std::nullopt;
    auto n = int64_t(data->size());
    int64_t b = (*starts)[0], e = (*ends)[0];
    if (b < 0) b += n;
    if (e < 0) e += n;
    Values v;
    if (step > 0) {
      b = std::clamp<int64_t>(b, 0, n);
      e = std::clamp<int64_t>(e, 0, n);
      for (int64_t i = b; i < e; i += step) v.push_back((*data)[size_t(i)]);
    } else {
      b = std::clamp<int64_t>(b, 0, n - 1);
      e = std::clamp<int64_t>(e, -1, n - 1);
      for (int64_t i = b; i > e; i += step) v.push_back((*data)[size_t(i)]);
    }
    return v;
  }
  if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Mod" || op == "Max" ||
      op == "Min" || op == "Equal") {
    if (ctx.num_inputs() != 2) return std::nullopt;
    auto a = in(0), b = in(1);
    if (!a || !b) return std::nullopt;
    return broadcast(*a, *b, [&](const SymInt& x, const SymInt& y) -> SymInt {
      if (op == "Add") return x + y;
      if (op == "Sub") return x - y;
      if (op == "Mul") return x * y;
      if (op == "Max") return sym_max(x, y);
      if (op == "Min") return sym_min(x, y);
      if (op == "Equal") return equal(x, y);
      if (x.constant() && y.constant()) {
        int64_t p = *x.constant(), q = *y.constant();
        if (q == 0) return SymInt::unknown();
        return op == "Div" ? SymInt(trunc_div(p, q)) : mod(SymInt(p), SymInt(q));
      }
      return op == "Div" ? floor_div(x, y) : mod(x, y);
    });
  }
  if (op == "Where") {
    auto c = in(0), a = in(1), b = in(2);
    if (!c || !a || !b) return std::nullopt;
    size_t n = std::max({c->size(), a->size(), b->size()});
    auto at = [&](const Values& v, size_t i) -> const SymInt& { return v[v.size() == 1 ? 0 : i]; };
    for (const Values* v : {&*c, &*a, &*b})
      if (v->size() != n && v->size() != 1) return std::nullopt;
    Values v;
    for (size_t i = 0; i < n; ++i) {
      auto k = at(*c, i).constant();
      v.push_back(!k ? SymInt::unknown() : *k ? at(*a, i) : at(*b, i));
    }
    return v;
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::vector<SymInt>> infer_shape_value(const OpContext& ctx, const TensorType& out) {
  if (!is_integral(out.dtype) && out.dtype != DType::boolean) return std::nullopt;
  auto n = out.shape.numel();
  if (!n || *n > kMaxShapeValueElements || out.shape.rank() > 1) return std::nullopt;
  if (ctx.node.outputs.size() > 1) return std::nullopt;
  auto v = compute(ctx, out);
  if (!v || int64_t(v->size()) != *n || !any_known(*v)) return std::nullopt;
  return v;
}

std::optional<std::vector<SymInt>> infer_shape_value(const Graph& graph, const Node& node,
                                                     const TensorType& out) {
  if (!node.def) return std::nullopt;
  return infer_shape_value(make_context(graph, node), out);
}

std::optional<std::vector<int64_t>> constant_elements(const std::vector<SymInt>& values) {
  std::vector<int64_t> out;
  for (const SymInt& v : values) {
    auto c = v.constant();
    if (!c) return std::nullopt;
    out.push_back(*c);
  }
  return out;
}

namespace {

size_t known_dims(const TensorType& t) {
  if (!t.shape.has_rank()) return 0;
  size_t n = 1;
  for (const Dim& d : t.shape.dims()) n += d.is_static() || d.sym().is_known() ? 1 : 0;
  return n;
}

}  // namespace

void refine_types(Graph& graph, bool strict) {
  for (size_t i = 0; i < graph.nodes().size(); ++i) {
    const Node& n = graph.node(NodeId(i));
    if (strict && n.is_opaque())
      throw Error(n.op_type + " '" + n.name + "' is opaque: its output types cannot be inferred");
    if (n.is_opaque() || !n.subgraphs.empty()) continue;
    std::vector<TensorType> types;
    try {
      types = infer_output_types(graph, n);
    } catch (const Error&) {
      if (strict) throw;
      continue;  // keep the types the graph has
    }
    for (size_t k = 0; k < types.size() && k < n.outputs.size(); ++k) {
      Value& v = graph.value(n.outputs[k]);
      if (strict || (known_dims(types[k]) >= known_dims(v.type) && types[k].dtype == v.type.dtype))
        v.type = types[k];
    }
    if (types.size() == 1)
      if (auto sym = infer_shape_value(graph, graph.node(NodeId(i)), types[0]))
        graph.value(n.outputs[0]).sym_value =
            std::make_shared<const std::vector<SymInt>>(std::move(*sym));
  }
}

}  // namespace eqfuse::ir
