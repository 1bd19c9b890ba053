#include "codegen/decompose.h"

#include <fmt/format.h>

#include <optional>
#include <set>
#include <string>

#include "ir/op_table.h"
#include "ir/rebuild.h"

namespace eqfuse::codegen {

namespace {

using ir::AttrList;
using ir::DType;
using ir::GraphRebuild;
using ir::kNoValue;
using ir::Node;
using ir::NodeId;
using ir::Tensor;
using ir::ValueId;

ValueId i64_constant(GraphRebuild& r, const std::string& base, const std::vector<int64_t>& values) {
  Tensor t(DType::i64, {int64_t(values.size())});
  for (size_t i = 0; i < values.size(); ++i) t.set(int64_t(i), double(values[i]));
  return r.constant(base, std::move(t));
}

std::optional<int64_t> split_axis(const ir::Graph& g, const Node& n) {
  if (n.op_type != "Split" || n.outputs.size() < 2 || n.inputs.empty()) return std::nullopt;
  const ir::Shape& in = g.value(n.inputs[0]).type.shape;
  if (!in.has_rank()) return std::nullopt;
  int64_t axis = n.attrs.get_int("axis", 0);
  if (axis < 0) axis += int64_t(in.rank());
  if (axis < 0 || axis >= int64_t(in.rank())) return std::nullopt;
  for (ValueId o : n.outputs) {
    const ir::Shape& s = g.value(o).type.shape;
    if (!s.has_rank() || s.rank() != in.rank() || !s[size_t(axis)].is_static()) return std::nullopt;
  }
  return axis;
}

void split_into_slices(GraphRebuild& r, const Node& n, int64_t axis) {
  const ir::Graph& g = r.source();
  const ValueId x = r(n.inputs[0]);
  int64_t offset = 0;
  for (ValueId o : n.outputs) {
    const int64_t size = g.value(o).type.shape[size_t(axis)].value();
    Node slice;
    slice.name = n.name;
    slice.op_type = "Slice";
    slice.def = ir::find_op("Slice");
    const std::string& part = g.value(o).name;
    slice.inputs = {x, i64_constant(r, part + "_starts", {offset}),
                    i64_constant(r, part + "_ends", {offset + size}),
                    i64_constant(r, part + "_axes", {axis})};
    r.emit(std::move(slice), {o});
    offset += size;
  }
}

// (x - mean) · 1/sqrt(var + eps) over `axes` (kept as dims of 1), computed in the stash type and
// returned in dtype `out`; the statistics stand for the node's outputs `mean_as` and `inv_as`
// where those are given.
ValueId normalize(GraphRebuild& r, const std::string& name, ValueId x, DType stash, DType out,
                  const std::vector<int64_t>& axes, double eps, ValueId mean_as = kNoValue,
                  ValueId inv_as = kNoValue) {
  auto cast = [&](ValueId v, DType to, const char* what) {
    return r.graph().value(v).type.dtype == to
               ? v
               : r.op("Cast", {v}, {{"to", int64_t{ir::onnx_dtype_code(to)}}}, name + what);
  };
  x = cast(x, stash, "_stash");
  const AttrList over = {{"axes", axes}, {"keepdims", int64_t{1}}};
  const ValueId mean = r.op("ReduceMean", {x}, over, name + "_mean", mean_as);
  const ValueId d = r.op("Sub", {x, mean}, {}, name + "_centered");
  const ValueId var =
      r.op("ReduceMean", {r.op("Mul", {d, d}, {}, name + "_squared")}, over, name + "_variance");
  Tensor e(stash, {});
  e.set(0, eps);
  const ValueId shifted =
      r.op("Add", {var, r.constant(name + "_epsilon", std::move(e))}, {}, name + "_shifted");
  const ValueId inv = r.op("Reciprocal", {r.op("Sqrt", {shifted}, {}, name + "_deviation")}, {},
                           name + "_inv_deviation", inv_as);
  return cast(r.op("Mul", {d, inv}, {}, name + "_normalized"), out, "_cast");
}

bool read(const std::vector<std::vector<NodeId>>& consumers, const std::set<ValueId>& outputs,
          const Node& n, size_t k) {
  return k < n.outputs.size() && (!consumers[n.outputs[k]].empty() || outputs.count(n.outputs[k]));
}

bool layer_norm_with_statistics(GraphRebuild& r, const Node& n,
                                const std::vector<std::vector<NodeId>>& consumers,
                                const std::set<ValueId>& outputs) {
  const ir::Graph& g = r.source();
  if (n.op_type != "LayerNormalization" ||
      !(read(consumers, outputs, n, 1) || read(consumers, outputs, n, 2)))
    return false;
  const ir::TensorType& x = g.value(n.inputs[0]).type;
  if (!x.shape.has_rank()) return false;
  const int64_t rank = int64_t(x.shape.rank());
  int64_t axis = n.attrs.get_int("axis", -1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return false;
  std::vector<int64_t> axes;
  for (int64_t a = axis; a < rank; ++a) axes.push_back(a);
  const DType stash = n.attrs.get_int("stash_type", 1) == 11 ? DType::f64 : DType::f32;
  auto as = [&](size_t k) { return read(consumers, outputs, n, k) ? n.outputs[k] : kNoValue; };
  ValueId y = normalize(r, n.name, r(n.inputs[0]), stash, x.dtype, axes,
                        n.attrs.get_float("epsilon", 1e-5), as(1), as(2));
  const bool bias = n.inputs.size() > 2 && n.inputs[2] != kNoValue;
  y = r.op("Mul", {y, r(n.inputs[1])}, {}, n.name + "_scaled", bias ? kNoValue : n.outputs[0]);
  if (bias) r.op("Add", {y, r(n.inputs[2])}, {}, n.name, n.outputs[0]);
  return true;
}

bool instance_norm(GraphRebuild& r, const Node& n) {
  const ir::Graph& g = r.source();
  if (n.op_type != "InstanceNormalization" || n.inputs.size() != 3) return false;
  const ir::TensorType& x = g.value(n.inputs[0]).type;
  if (!x.shape.has_rank() || x.shape.rank() < 3 || !ir::is_floating(x.dtype)) return false;
  std::vector<int64_t> axes, channel_shape = {-1};
  for (int64_t a = 2; a < int64_t(x.shape.rank()); ++a) {
    axes.push_back(a);
    channel_shape.push_back(1);
  }
  // Statistics of 16-bit planes in f32, as LayerNormalization's stash (the interpreter's are in
  // double); the normalized plane is rounded back before the scale and bias.
  const DType stash = x.dtype == DType::f64 ? DType::f64 : DType::f32;
  const ValueId normalized = normalize(r, n.name, r(n.inputs[0]), stash, x.dtype, axes,
                                       n.attrs.get_float("epsilon", 1e-5));
  // The per-channel vectors [C] as [C, 1, ...], broadcasting over each plane.
  auto per_channel = [&](size_t k, const char* what) {
    return r.op("Reshape", {r(n.inputs[k]), i64_constant(r, n.name + "_channels", channel_shape)},
                {}, n.name + what);
  };
  const ValueId scaled =
      r.op("Mul", {normalized, per_channel(1, "_scale")}, {}, n.name + "_scaled");
  r.op("Add", {scaled, per_channel(2, "_bias")}, {}, n.name, n.outputs[0]);
  return true;
}

}  // namespace

ir::Graph decompose_for_codegen(const ir::Graph& graph, std::vector<NodeId>& origin) {
  const auto consumers = graph.consumers();
  const std::set<ValueId> outputs(graph.outputs().begin(), graph.outputs().end());
  auto expand = [&](const Node& n, NodeId, GraphRebuild& r) {
    if (auto axis = split_axis(graph, n)) {
      split_into_slices(r, n, *axis);
      return true;
    }
    return layer_norm_with_statistics(r, n, consumers, outputs) || instance_norm(r, n);
  };
  std::vector<NodeId> local;
  ir::Graph out = ir::rebuild_graph(graph, expand, &local);
  for (NodeId& o : local) o = origin.at(o);
  origin = std::move(local);
  return out;
}

}  // namespace eqfuse::codegen
