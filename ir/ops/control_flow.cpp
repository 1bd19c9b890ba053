// Op group "control flow": If, Loop and Scan (opset 11+ / 9+ semantics). Their bodies are
// subgraphs the frontend imports (Node::subgraphs): a body's inputs are its formal inputs
// followed by the names it reads from enclosing scopes, which the interpreter binds by name
// where the node runs (OpContext::scope). The optimizer treats these ops as opaque.
#include <algorithm>

#include "ir/interpreter.h"
#include "ir/ops/structured_common.h"

namespace eqfuse::ir {

using namespace structured;

namespace {

const Subgraph& body_of(const OpContext& ctx, const std::string& attr) {
  for (const Subgraph& s : ctx.node.subgraphs) {
    if (s.attr == attr && s.graph) return s;
  }
  ctx.fail("subgraph attribute '" + attr + "' is missing or was not imported");
}

std::vector<TensorType> output_types(const Graph& g) {
  std::vector<TensorType> out;
  for (ValueId v : g.outputs()) out.push_back(g.value(v).type);
  return out;
}

// The type both branches agree on: equal dims stay, others become unknown.
TensorType join(const TensorType& a, const TensorType& b) {
  if (a.shape.has_rank() && b.shape.has_rank() && a.shape.rank() == b.shape.rank()) {
    Shape s = a.shape;
    for (size_t i = 0; i < s.rank(); ++i)
      if (!(a.shape[i] == b.shape[i])) s[i] = Dim::unknown();
    return {a.dtype, s};
  }
  return {a.dtype, Shape::unranked()};
}

// Runs a body on its formal inputs, reading what it captures from the node's scope.
std::vector<Tensor> run_body(const OpContext& ctx, const Subgraph& body,
                             const std::vector<const Tensor*>& formal) {
  if (!ctx.scope && body.graph->inputs().size() > body.formal_inputs)
    ctx.fail("the body reads values of an enclosing graph; it runs only in the interpreter");
  if (formal.size() != body.formal_inputs)
    ctx.fail("the body takes " + std::to_string(body.formal_inputs) + " inputs, got " +
             std::to_string(formal.size()));
  return run_subgraph(*body.graph, formal, ctx.scope ? *ctx.scope : ScopeLookup{});
}

Tensor stack(const OpContext& ctx, const std::vector<Tensor>& parts, size_t axis,
             const TensorType& declared) {
  if (parts.empty()) {
    std::vector<int64_t> dims{0};
    if (declared.shape.has_rank())
      for (const Dim& d : declared.shape.dims()) dims.push_back(d.is_static() ? d.value() : 0);
    return Tensor(declared.dtype, dims);
  }
  const Tensor& p0 = parts[0];
  if (axis > p0.rank()) ctx.fail("scan output axis is out of range");
  std::vector<int64_t> out_dims = p0.dims();
  out_dims.insert(out_dims.begin() + int64_t(axis), int64_t(parts.size()));
  Tensor out(p0.dtype(), out_dims);
  int64_t outer = 1, inner = 1;
  for (size_t i = 0; i < axis; ++i) outer *= p0.dims()[i];
  for (size_t i = axis; i < p0.rank(); ++i) inner *= p0.dims()[i];
  const size_t es = dtype_size(p0.dtype());
  auto n = int64_t(parts.size());
  for (int64_t k = 0; k < n; ++k) {
    const Tensor& p = parts[size_t(k)];
    if (p.dims() != p0.dims() || p.dtype() != p0.dtype())
      ctx.fail("scan outputs differ in shape between iterations");
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(out.raw() + size_t((o * n + k) * inner) * es, p.raw() + size_t(o * inner) * es,
                  size_t(inner) * es);
  }
  return out;
}

// ---- If ---------------------------------------------------------------------------------

void add_if(OpTableBuilder& table) {
  OpDef d;
  d.name = "If";
  d.min_inputs = d.max_inputs = 1;
  d.max_outputs = -1;
  d.attrs = {{"then_branch", AttrKind::Opaque, std::nullopt, true},
             {"else_branch", AttrKind::Opaque, std::nullopt, true}};
  d.infer = [](const OpContext& ctx) {
    auto a = output_types(*body_of(ctx, "then_branch").graph);
    auto b = output_types(*body_of(ctx, "else_branch").graph);
    if (a.size() != b.size()) ctx.fail("the branches have different numbers of outputs");
    for (size_t i = 0; i < a.size(); ++i) {
      if (a[i].dtype != b[i].dtype) ctx.fail("the branches' outputs differ in dtype");
      a[i] = join(a[i], b[i]);
    }
    return a;
  };
  d.work = [](const OpContext&, const std::vector<TensorType>&) { return OpWork{}; };
  d.kernel = [](const OpContext& ctx) {
    const Tensor& c = value_of(ctx, 0);
    if (c.numel() != 1) ctx.fail("cond must hold one element");
    return run_body(ctx, body_of(ctx, c.get(0) != 0 ? "then_branch" : "else_branch"), {});
  };
  table.add(std::move(d));
}

// ---- Loop -------------------------------------------------------------------------------

void add_loop(OpTableBuilder& table) {
  OpDef d;
  d.name = "Loop";
  d.min_inputs = 0;  // M and cond are both optional, but their places are not
  d.max_inputs = -1;
  d.max_outputs = -1;
  d.attrs = {{"body", AttrKind::Opaque, std::nullopt, true}};
  d.infer = [](const OpContext& ctx) {
    const Graph& body = *body_of(ctx, "body").graph;
    // Trailing omitted inputs are dropped at import: Loop(M) with no cond and no state.
    size_t carried = ctx.num_inputs() > 2 ? ctx.num_inputs() - 2 : 0;
    auto outs = output_types(body);
    if (outs.size() < carried + 1) ctx.fail("the body has too few outputs");
    std::vector<TensorType> result;
    for (size_t i = 0; i < carried; ++i) result.push_back(ctx.input_type(2 + i));
    Dim trips = Dim::unknown();
    if (const Tensor* m = ctx.input_value(0); m && !ctx.has_input(1))
      trips = Dim(m->to_int64s()[0]);
    for (size_t k = carried + 1; k < outs.size(); ++k) {
      TensorType t = outs[k];
      if (t.shape.has_rank()) t.shape.dims().insert(t.shape.dims().begin(), trips);
      result.push_back(t);
    }
    return result;
  };
  d.work = [](const OpContext&, const std::vector<TensorType>&) { return OpWork{}; };
  d.kernel = [](const OpContext& ctx) {
    const Subgraph& body = body_of(ctx, "body");
    // Trailing omitted inputs are dropped at import: Loop(M) with no cond and no state.
    size_t carried = ctx.num_inputs() > 2 ? ctx.num_inputs() - 2 : 0;
    std::optional<int64_t> max_trips;
    if (const Tensor* m = ctx.input_value(0)) max_trips = m->to_int64s().at(0);
    bool cond = true;
    if (const Tensor* c = ctx.input_value(1)) cond = c->get(0) != 0;
    std::vector<Tensor> state;
    for (size_t i = 0; i < carried; ++i) state.push_back(value_of(ctx, 2 + i));
    auto outs_types = output_types(*body.graph);
    size_t scans = outs_types.size() - 1 - carried;
    std::vector<std::vector<Tensor>> scanned(scans);
    for (int64_t i = 0; (!max_trips || i < *max_trips) && cond; ++i) {
      Tensor iter = Tensor::from_vector<int64_t>(DType::i64, {}, {i});
      Tensor c(DType::boolean, {});
      c.set(0, cond ? 1 : 0);
      std::vector<const Tensor*> formal{&iter, &c};
      for (const Tensor& s : state) formal.push_back(&s);
      std::vector<Tensor> out = run_body(ctx, body, formal);
      cond = out.at(0).get(0) != 0;
      for (size_t k = 0; k < carried; ++k) state[k] = std::move(out[1 + k]);
      for (size_t k = 0; k < scans; ++k) scanned[k].push_back(std::move(out[1 + carried + k]));
    }
    std::vector<Tensor> result = std::move(state);
    for (size_t k = 0; k < scans; ++k)
      result.push_back(stack(ctx, scanned[k], 0, outs_types[1 + carried + k]));
    return result;
  };
  table.add(std::move(d));
}

// ---- Scan -------------------------------------------------------------------------------

struct ScanLayout {
  size_t states, scan_inputs;
  std::vector<int64_t> in_axes, in_dirs, out_axes, out_dirs;
};

ScanLayout scan_layout(const OpContext& ctx, size_t scan_outputs) {
  ScanLayout l;
  auto m = ctx.attr_int("num_scan_inputs");
  if (m < 1 || size_t(m) > ctx.num_inputs()) ctx.fail("num_scan_inputs is out of range");
  l.scan_inputs = size_t(m);
  l.states = ctx.num_inputs() - l.scan_inputs;
  auto list = [&](const char* name, size_t n) {
    auto v = ctx.has_attr(name) ? ctx.attr_ints(name) : std::vector<int64_t>(n, 0);
    if (v.size() != n) ctx.fail(std::string(name) + " needs " + std::to_string(n) + " entries");
    return v;
  };
  l.in_axes = list("scan_input_axes", l.scan_inputs);
  l.in_dirs = list("scan_input_directions", l.scan_inputs);
  l.out_axes = list("scan_output_axes", scan_outputs);
  l.out_dirs = list("scan_output_directions", scan_outputs);
  return l;
}

void add_scan(OpTableBuilder& table) {
  OpDef d;
  d.name = "Scan";
  d.min_inputs = 1;
  d.max_inputs = -1;
  d.max_outputs = -1;
  d.attrs = {{"body", AttrKind::Opaque, std::nullopt, true},
             {"num_scan_inputs", AttrKind::Int, std::nullopt, true},
             {"scan_input_axes", AttrKind::Ints, std::nullopt},
             {"scan_input_directions", AttrKind::Ints, std::nullopt},
             {"scan_output_axes", AttrKind::Ints, std::nullopt},
             {"scan_output_directions", AttrKind::Ints, std::nullopt}};
  d.infer = [](const OpContext& ctx) {
    auto outs = output_types(*body_of(ctx, "body").graph);
    size_t m = size_t(std::max<int64_t>(0, ctx.attr_int("num_scan_inputs")));
    if (m > ctx.num_inputs()) ctx.fail("num_scan_inputs is out of range");
    size_t states = ctx.num_inputs() - m;
    if (outs.size() < states) ctx.fail("the body has too few outputs");
    ScanLayout l = scan_layout(ctx, outs.size() - states);
    Dim seq = Dim::unknown();
    const Shape& s0 = ctx.input_type(states).shape;
    if (s0.has_rank())
      seq = s0[size_t(axis_in(ctx, l.in_axes[0], int64_t(s0.rank()), "scan_input_axes entry"))];
    std::vector<TensorType> result;
    for (size_t i = 0; i < states; ++i) result.push_back(ctx.input_type(i));
    for (size_t k = states; k < outs.size(); ++k) {
      TensorType t = outs[k];
      if (t.shape.has_rank()) {
        int64_t a = axis_in(ctx, l.out_axes[k - states], int64_t(t.shape.rank()) + 1,
                            "scan_output_axes entry");
        t.shape.dims().insert(t.shape.dims().begin() + a, seq);
      }
      result.push_back(t);
    }
    return result;
  };
  d.work = [](const OpContext&, const std::vector<TensorType>&) { return OpWork{}; };
  d.kernel = [](const OpContext& ctx) {
    const Subgraph& body = body_of(ctx, "body");
    auto outs_types = output_types(*body.graph);
    size_t m = size_t(std::max<int64_t>(0, ctx.attr_int("num_scan_inputs")));
    size_t states_n = ctx.num_inputs() - m;
    ScanLayout l = scan_layout(ctx, outs_types.size() - states_n);
    std::vector<Tensor> state;
    for (size_t i = 0; i < states_n; ++i) state.push_back(value_of(ctx, i));
    // Each scan input with its scan axis moved to the front, so a slice is a contiguous block.
    std::vector<Tensor> seqs;
    int64_t len = -1;
    for (size_t j = 0; j < m; ++j) {
      const Tensor& x = value_of(ctx, states_n + j);
      auto a = size_t(axis_in(ctx, l.in_axes[j], int64_t(x.rank()), "scan_input_axes entry"));
      std::vector<int64_t> perm{int64_t(a)};
      for (size_t i = 0; i < x.rank(); ++i)
        if (i != a) perm.push_back(int64_t(i));
      auto st = strides_of(x.dims());
      std::vector<int64_t> dims, strides;
      for (int64_t p : perm) {
        dims.push_back(x.dims()[size_t(p)]);
        strides.push_back(st[size_t(p)]);
      }
      if (len >= 0 && dims[0] != len) ctx.fail("scan inputs differ in length");
      len = dims[0];
      seqs.push_back(strided_copy(x, 0, strides, dims));
    }
    size_t outs_n = outs_types.size() - states_n;
    std::vector<std::vector<Tensor>> scanned(outs_n);
    for (int64_t t = 0; t < len; ++t) {
      std::vector<Tensor> slices;
      for (size_t j = 0; j < m; ++j) {
        const Tensor& s = seqs[j];
        int64_t at = l.in_dirs[j] ? len - 1 - t : t;
        std::vector<int64_t> dims(s.dims().begin() + 1, s.dims().end());
        Tensor slice(s.dtype(), dims);
        size_t bytes = size_t(slice.numel()) * dtype_size(s.dtype());
        std::memcpy(slice.raw(), s.raw() + size_t(at) * bytes, bytes);
        slices.push_back(std::move(slice));
      }
      std::vector<const Tensor*> formal;
      for (const Tensor& x : state) formal.push_back(&x);
      for (const Tensor& x : slices) formal.push_back(&x);
      std::vector<Tensor> out = run_body(ctx, body, formal);
      for (size_t i = 0; i < states_n; ++i) state[i] = std::move(out[i]);
      for (size_t k = 0; k < outs_n; ++k) scanned[k].push_back(std::move(out[states_n + k]));
    }
    std::vector<Tensor> result = std::move(state);
    for (size_t k = 0; k < outs_n; ++k) {
      if (l.out_dirs[k]) std::reverse(scanned[k].begin(), scanned[k].end());
      int64_t rank = scanned[k].empty() ? 0 : int64_t(scanned[k][0].rank());
      auto a = size_t(axis_in(ctx, l.out_axes[k], rank + 1, "scan_output_axes entry"));
      result.push_back(stack(ctx, scanned[k], a, outs_types[states_n + k]));
    }
    return result;
  };
  table.add(std::move(d));
}

}  // namespace

void register_control_flow_ops(OpTableBuilder& table) {
  add_if(table);
  add_loop(table);
  add_scan(table);
}

}  // namespace eqfuse::ir
