// Op group "generator": ops whose output is made from attributes or from their inputs' shapes
// rather than their data (Constant, ConstantOfShape, Shape, Size, Range, EyeLike). Shape-computing
// chains built from them fold at import when the shapes they read are static.
#include <algorithm>
#include <cmath>

#include "ir/ops/structured_common.h"

namespace eqfuse::ir {

using namespace structured;

namespace {

OpWork write_work(const OpContext&, const std::vector<TensorType>& outs) {
  OpWork w;
  for (const TensorType& t : outs) w.bytes_written += type_bytes(t);
  return w;
}

Tensor constant_value(const OpContext& ctx) {
  const Attributes& a = ctx.node.attrs;
  if (const Tensor* t = a.get_tensor("value")) return *t;
  if (a.has("value_float"))
    return Tensor::from_doubles(DType::f32, {}, {ctx.attr_float("value_float")});
  if (a.has("value_floats")) {
    auto v = ctx.attr_floats("value_floats");
    return Tensor::from_doubles(DType::f32, {int64_t(v.size())}, v);
  }
  if (a.has("value_int"))
    return Tensor::from_vector<int64_t>(DType::i64, {}, {ctx.attr_int("value_int")});
  if (a.has("value_ints")) {
    auto v = ctx.attr_ints("value_ints");
    return Tensor::from_vector<int64_t>(DType::i64, {int64_t(v.size())}, v);
  }
  if (a.has("value_string") || a.has("value_strings") || a.has("sparse_value"))
    unsupported(ctx, "string and sparse constants are not supported");
  ctx.fail("needs one of the attributes value, value_float(s), value_int(s)");
}

void add_constant(OpTableBuilder& table) {
  OpDef d;
  d.name = "Constant";
  d.min_inputs = d.max_inputs = 0;
  d.attrs = {{"value", AttrKind::Tensor, std::nullopt},
             {"value_float", AttrKind::Float, std::nullopt},
             {"value_floats", AttrKind::Floats, std::nullopt},
             {"value_int", AttrKind::Int, std::nullopt},
             {"value_ints", AttrKind::Ints, std::nullopt}};
  d.fusion = FusionClass::Layout;
  d.infer = [](const OpContext& ctx) {
    return std::vector<TensorType>{constant_value(ctx).type()};
  };
  d.work = write_work;
  d.kernel = [](const OpContext& ctx) { return std::vector<Tensor>{constant_value(ctx)}; };
  table.add(std::move(d));
}

Tensor fill_value(const OpContext& ctx) {
  if (const Tensor* t = ctx.node.attrs.get_tensor("value")) {
    if (t->numel() != 1) ctx.fail("value must hold one element");
    return *t;
  }
  return Tensor(DType::f32, {1});
}

void add_constant_of_shape(OpTableBuilder& table) {
  OpDef d;
  d.name = "ConstantOfShape";
  d.attrs = {{"value", AttrKind::Tensor, std::nullopt}};
  d.fusion = FusionClass::Layout;
  d.infer = [](const OpContext& ctx) {
    DType t = fill_value(ctx).dtype();
    if (const Tensor* s = ctx.input_value(0)) {
      auto dims = s->to_int64s();
      for (int64_t x : dims)
        if (x < 0) ctx.fail("shape entries must be non-negative");
      return std::vector<TensorType>{{t, Shape::from_dims(dims)}};
    }
    if (auto sym = ctx.sym_ints_input(0)) {  // a shape computed from symbolic dims
      std::vector<Dim> dims;
      for (const SymInt& x : *sym) {
        if (x.constant() && *x.constant() < 0) ctx.fail("shape entries must be non-negative");
        dims.push_back(Dim::from_sym(x));
      }
      return std::vector<TensorType>{{t, Shape(dims)}};
    }
    const Shape& ss = ctx.input_type(0).shape;
    if (ss.has_rank() && ss.rank() == 1 && ss[0].is_static())
      return std::vector<TensorType>{{t, unknown_dims(size_t(ss[0].value()))}};
    return std::vector<TensorType>{{t, Shape::unranked()}};
  };
  d.work = write_work;
  d.kernel = [](const OpContext& ctx) {
    Tensor v = fill_value(ctx);
    auto dims = value_of(ctx, 0).to_int64s();
    for (int64_t x : dims)
      if (x < 0) ctx.fail("shape entries must be non-negative");
    Tensor out(v.dtype(), dims);
    for (int64_t i = 0; i < out.numel(); ++i) copy_element(v, 0, out, i);
    return std::vector<Tensor>{std::move(out)};
  };
  table.add(std::move(d));
}

// [start, end) of Shape's dims after ONNX clamping.
std::pair<int64_t, int64_t> shape_range(const OpContext& ctx, int64_t rank) {
  int64_t start = ctx.attr_int("start");
  int64_t end = ctx.has_attr("end") ? ctx.attr_int("end") : rank;
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, 0, rank);
  return {start, std::max(start, end)};
}

void add_shape_size(OpTableBuilder& table) {
  {
    OpDef d;
    d.name = "Shape";
    d.attrs = {{"start", AttrKind::Int, AttrValue(int64_t{0})},
               {"end", AttrKind::Int, std::nullopt}};
    d.fusion = FusionClass::Layout;
    d.infer = [](const OpContext& ctx) {
      const Shape& s = ctx.input_type(0).shape;
      if (!s.has_rank()) return std::vector<TensorType>{{DType::i64, unknown_dims(1)}};
      auto [b, e] = shape_range(ctx, int64_t(s.rank()));
      return std::vector<TensorType>{{DType::i64, Shape({Dim(e - b)})}};
    };
    d.work = write_work;
    d.kernel = [](const OpContext& ctx) {
      const Tensor& x = value_of(ctx, 0);
      auto [b, e] = shape_range(ctx, int64_t(x.rank()));
      std::vector<int64_t> dims(x.dims().begin() + b, x.dims().begin() + e);
      return std::vector<Tensor>{Tensor::from_vector(DType::i64, {e - b}, dims)};
    };
    table.add(std::move(d));
  }
  OpDef d;
  d.name = "Size";
  d.fusion = FusionClass::Layout;
  d.infer = [](const OpContext&) { return std::vector<TensorType>{{DType::i64, Shape()}}; };
  d.work = write_work;
  d.kernel = [](const OpContext& ctx) {
    return std::vector<Tensor>{
        Tensor::from_vector<int64_t>(DType::i64, {}, {value_of(ctx, 0).numel()})};
  };
  table.add(std::move(d));
}

int64_t range_count(const OpContext& ctx, const Tensor& start, const Tensor& limit,
                    const Tensor& delta) {
  if (start.numel() != 1 || limit.numel() != 1 || delta.numel() != 1)
    ctx.fail("start, limit and delta must be scalars");
  double s = start.get(0), l = limit.get(0), dl = delta.get(0);
  if (dl == 0) ctx.fail("delta must be non-zero");
  if (is_integral(start.dtype())) {
    int64_t si = start.to_int64s()[0], li = limit.to_int64s()[0], di = delta.to_int64s()[0];
    int64_t span = li - si;
    int64_t n = di > 0 ? (span + di - 1) / di : (span + di + 1) / di;
    if ((di > 0 && span <= 0) || (di < 0 && span >= 0)) n = 0;
    return std::max<int64_t>(n, 0);
  }
  return std::max<int64_t>(int64_t(std::ceil((l - s) / dl)), 0);
}

void add_range(OpTableBuilder& table) {
  OpDef d;
  d.name = "Range";
  d.min_inputs = d.max_inputs = 3;
  d.fusion = FusionClass::Layout;
  d.infer = [](const OpContext& ctx) {
    DType t = ctx.input_type(0).dtype;
    const Tensor *s = ctx.input_value(0), *l = ctx.input_value(1), *dl = ctx.input_value(2);
    if (s && l && dl)
      return std::vector<TensorType>{{t, Shape({Dim(range_count(ctx, *s, *l, *dl))})}};
    // Integer bounds from a shape computation: Range(0, seq, 1) has seq elements.
    auto ss = ctx.sym_ints_input(0), ls = ctx.sym_ints_input(1), ds = ctx.sym_ints_input(2);
    if (ss && ls && ds && ss->size() == 1 && ls->size() == 1 && ds->size() == 1) {
      auto step = (*ds)[0].constant();
      if (step && *step > 0)
        return std::vector<TensorType>{
            {t, Shape({Dim::from_sym(
                    sym_max(ceil_div((*ls)[0] - (*ss)[0], SymInt(*step)), SymInt(0)))})}};
    }
    return std::vector<TensorType>{{t, unknown_dims(1)}};
  };
  d.work = write_work;
  d.kernel = [](const OpContext& ctx) {
    const Tensor &s = value_of(ctx, 0), &l = value_of(ctx, 1), &dl = value_of(ctx, 2);
    int64_t n = range_count(ctx, s, l, dl);
    Tensor out(s.dtype(), {n});
    if (is_integral(s.dtype())) {
      int64_t si = s.to_int64s()[0], di = dl.to_int64s()[0];
      for (int64_t i = 0; i < n; ++i) out.set(i, double(si + i * di));
    } else {
      // ONNX accumulates in the input type: start + i * delta, computed in that precision.
      double sv = s.get(0), dv = dl.get(0);
      for (int64_t i = 0; i < n; ++i) out.set(i, sv + double(i) * dv);
    }
    return std::vector<Tensor>{std::move(out)};
  };
  table.add(std::move(d));
}

void add_eye_like(OpTableBuilder& table) {
  OpDef d;
  d.name = "EyeLike";
  d.attrs = {{"dtype", AttrKind::Int, std::nullopt}, {"k", AttrKind::Int, AttrValue(int64_t{0})}};
  d.fusion = FusionClass::Layout;
  d.infer = [](const OpContext& ctx) {
    const TensorType& in = ctx.input_type(0);
    if (in.shape.has_rank() && in.shape.rank() != 2) ctx.fail("needs a 2-D input");
    DType t = ctx.has_attr("dtype") ? dtype_from_onnx_code(ctx, ctx.attr_int("dtype")) : in.dtype;
    return std::vector<TensorType>{{t, in.shape.has_rank() ? in.shape : unknown_dims(2)}};
  };
  d.work = write_work;
  d.kernel = [](const OpContext& ctx) {
    const Tensor& x = value_of(ctx, 0);
    if (x.rank() != 2) ctx.fail("needs a 2-D input");
    DType t = ctx.has_attr("dtype") ? dtype_from_onnx_code(ctx, ctx.attr_int("dtype")) : x.dtype();
    Tensor out(t, x.dims());
    int64_t rows = x.dims()[0], cols = x.dims()[1], k = ctx.attr_int("k");
    for (int64_t i = 0; i < rows; ++i)
      if (i + k >= 0 && i + k < cols) out.set(i * cols + i + k, 1.0);
    return std::vector<Tensor>{std::move(out)};
  };
  table.add(std::move(d));
}

}  // namespace

void register_generator_ops(OpTableBuilder& table) {
  add_constant(table);
  add_constant_of_shape(table);
  add_shape_size(table);
  add_range(table);
  add_eye_like(table);
}

}  // namespace eqfuse::ir
