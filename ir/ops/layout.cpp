// Op group "layout": ops that move data without computing on it (Transpose, Reshape, Flatten,
// Squeeze, Unsqueeze, Expand, Tile, Identity, Dropout at inference, DepthToSpace, SpaceToDepth;
// Concat, Split, Slice and Pad are in layout_slicing.cpp). Their kernels are strided copies by
// element size, so every dtype takes the same path.
#include <algorithm>
#include <numeric>

#include "ir/ops/structured_common.h"

namespace eqfuse::ir {

using namespace structured;

namespace {

std::vector<TensorType> one(DType t, Shape s) {
  return {TensorType{t, std::move(s)}};
}

// ---- Transpose --------------------------------------------------------------------------

std::vector<int64_t> transpose_perm(const OpContext& ctx, size_t rank) {
  std::vector<int64_t> perm;
  if (ctx.has_attr("perm")) {
    perm = ctx.attr_ints("perm");
  } else {
    for (size_t i = rank; i-- > 0;) perm.push_back(int64_t(i));
  }
  if (perm.size() != rank)
    ctx.fail("perm has " + std::to_string(perm.size()) + " entries for rank " +
             std::to_string(rank));
  std::vector<bool> seen(rank, false);
  for (int64_t& p : perm) {
    p = axis_in(ctx, p, int64_t(rank), "perm entry");
    if (seen[size_t(p)]) ctx.fail("perm is not a permutation");
    seen[size_t(p)] = true;
  }
  return perm;
}

void add_transpose(OpTableBuilder& table) {
  OpDef d;
  d.name = "Transpose";
  d.attrs = {{"perm", AttrKind::Ints, std::nullopt}};
  d.fusion = FusionClass::Layout;
  d.infer = [](const OpContext& ctx) {
    const TensorType& in = ctx.input_type(0);
    if (!in.shape.has_rank()) return one(in.dtype, Shape::unranked());
    auto perm = transpose_perm(ctx, in.shape.rank());
    std::vector<Dim> dims;
    for (int64_t p : perm) dims.push_back(in.shape[size_t(p)]);
    return one(in.dtype, Shape(dims));
  };
  d.work = move_work;
  d.kernel = [](const OpContext& ctx) {
    const Tensor& x = value_of(ctx, 0);
    auto perm = transpose_perm(ctx, x.rank());
    auto st = strides_of(x.dims());
    std::vector<int64_t> out_dims, in_strides;
    for (int64_t p : perm) {
      out_dims.push_back(x.dims()[size_t(p)]);
      in_strides.push_back(st[size_t(p)]);
    }
    return std::vector<Tensor>{strided_copy(x, 0, in_strides, out_dims)};
  };
  table.add(std::move(d));
}

// ---- Reshape ----------------------------------------------------------------------------

// The output shape of Reshape(in, spec): 0 copies the input dim (unless allowzero), -1 takes
// what is left. Entries may be symbolic (a shape computed from the input's dims), and -1 is
// resolved symbolically: [batch,128,64] -> (0 -1 16) gives [batch,512,16], and
// [batch,64,128] -> (batch*64 -1) gives [batch*64,128].
Shape reshape_shape(const OpContext& ctx, const Shape& in, const std::vector<SymInt>& spec,
                    bool allowzero) {
  std::vector<Dim> out;
  int infer_at = -1;
  for (size_t i = 0; i < spec.size(); ++i) {
    auto c = spec[i].constant();
    if (c && *c == 0 && !allowzero) {
      if (!in.has_rank()) return unknown_dims(spec.size());
      if (i >= in.rank())
        ctx.fail("shape entry " + std::to_string(i) + " is 0 but the input has rank " +
                 std::to_string(in.rank()));
      out.push_back(in[i]);
    } else if (c && *c == -1) {
      if (infer_at >= 0) ctx.fail("shape has more than one -1");
      infer_at = int(i);
      out.push_back(Dim::unknown());
    } else if (c && *c < 0) {
      ctx.fail("shape entry " + std::to_string(*c) + " is invalid");
    } else {
      out.push_back(Dim::from_sym(spec[i]));
    }
  }
  SymInt in_n = in.sym_numel();
  if (infer_at < 0) {
    SymInt out_n = Shape(out).sym_numel();
    if (in_n.is_known() && out_n.is_known() &&
        (surely_greater(in_n, out_n) || surely_greater(out_n, in_n) ||
         (in_n - out_n).constant().value_or(0) != 0))
      ctx.fail("cannot reshape " + in.str() + " to " + Shape(out).str());
    return Shape(out);
  }
  SymInt rest(1);
  for (size_t i = 0; i < out.size(); ++i)
    if (int(i) != infer_at) rest = rest * out[i].sym();
  if (!in_n.is_known() || !rest.is_known()) return Shape(out);
  if (rest.constant() && *rest.constant() == 0) {
    if (in_n.constant().value_or(1) != 0)
      ctx.fail("cannot reshape " + in.str() + " with a 0 dim and -1");
    out[size_t(infer_at)] = Dim(0);
    return Shape(out);
  }
  SymInt q = floor_div(in_n, rest);
  if (in_n.constant() && rest.constant() && *in_n.constant() % *rest.constant() != 0)
    ctx.fail("cannot reshape " + in.str() + " to " + Shape(out).str());
  if (q.is_known() && q * rest != in_n && in_n.constant() && rest.constant())
    ctx.fail("cannot reshape " + in.str() + " to " + Shape(out).str());
  out[size_t(infer_at)] = Dim::from_sym(q);
  return Shape(out);
}

std::vector<SymInt> as_sym(const std::vector<int64_t>& v) {
  return {v.begin(), v.end()};
}

void add_reshape(OpTableBuilder& table) {
  OpDef d;
  d.name = "Reshape";
  d.min_inputs = 1;
  d.max_inputs = 2;
  d.attrs = {{"allowzero", AttrKind::Int, AttrValue(int64_t{0})},
             {"shape", AttrKind::Ints, std::nullopt}};
  d.fusion = FusionClass::Layout;
  d.infer = [](const OpContext& ctx) {
    const TensorType& in = ctx.input_type(0);
    auto spec = ctx.sym_ints_attr_or_input("shape", 1);
    if (!spec) {
      if (!ctx.has_input(1)) ctx.fail("needs a shape input");
      const Shape& ss = ctx.input_type(1).shape;
      if (ss.has_rank() && ss.rank() == 1 && ss[0].is_static())
        return one(in.dtype, unknown_dims(size_t(ss[0].value())));
      return one(in.dtype, Shape::unranked());
    }
    return one(in.dtype, reshape_shape(ctx, in.shape, *spec, ctx.attr_int("allowzero") != 0));
  };
  d.work = [](const OpContext&, const std::vector<TensorType>&) { return OpWork{}; };
  d.kernel = [](const OpContext& ctx) {
    const Tensor& x = value_of(ctx, 0);
    auto spec = ctx.ints_attr_or_input("shape", 1);
    if (!spec) ctx.fail("needs a shape input");
    Shape s = reshape_shape(ctx, x.type().shape, as_sym(*spec), ctx.attr_int("allowzero") != 0);
    if (!s.is_static() || *s.numel() != x.numel())
      ctx.fail("cannot reshape " + x.type().shape.str() + " to " + s.str());
    return std::vector<Tensor>{x.reshaped(s.static_dims())};
  };
  table.add(std::move(d));
}

// ---- Flatten, Squeeze, Unsqueeze ----------------------------------------------------------

Shape flatten_shape(const OpContext& ctx, const Shape& in) {
  int64_t r = int64_t(in.rank());
  int64_t axis = ctx.attr_int("axis");
  if (axis < -r || axis > r) ctx.fail("axis " + std::to_string(axis) + " is out of range");
  if (axis < 0) axis += r;
  return Shape(
      {dims_product(in.dims(), 0, size_t(axis)), dims_product(in.dims(), size_t(axis), in.rank())});
}

// Squeeze's output; nullopt when the axes are not known.
std::optional<Shape> squeeze_shape(const OpContext& ctx, const Shape& in) {
  auto axes = ctx.ints_attr_or_input("axes", 1);
  if (!axes && ctx.has_input(1)) return std::nullopt;
  std::vector<bool> drop(in.rank(), false);
  if (!axes || axes->empty()) {
    for (size_t i = 0; i < in.rank(); ++i) drop[i] = in[i].is_static() && in[i].value() == 1;
  } else {
    for (int64_t a : *axes) {
      a = axis_in(ctx, a, int64_t(in.rank()));
      if (in[size_t(a)].is_static() && in[size_t(a)].value() != 1)
        ctx.fail("cannot squeeze axis " + std::to_string(a) + " of size " + in[size_t(a)].str());
      drop[size_t(a)] = true;
    }
  }
  std::vector<Dim> out;
  for (size_t i = 0; i < in.rank(); ++i)
    if (!drop[i]) out.push_back(in[i]);
  return Shape(out);
}

std::optional<Shape> unsqueeze_shape(const OpContext& ctx, const Shape& in) {
  auto axes = ctx.ints_attr_or_input("axes", 1);
  if (!axes) {
    if (ctx.has_input(1)) {
      const Shape& as = ctx.input_type(1).shape;
      if (as.has_rank() && as.rank() == 1 && as[0].is_static())
        return unknown_dims(in.rank() + size_t(as[0].value()));
      return std::nullopt;
    }
    ctx.fail("needs axes");
  }
  int64_t r = int64_t(in.rank() + axes->size());
  std::vector<bool> inserted(size_t(r), false);
  for (int64_t a : *axes) {
    a = axis_in(ctx, a, r);
    if (inserted[size_t(a)]) ctx.fail("axes has duplicates");
    inserted[size_t(a)] = true;
  }
  std::vector<Dim> out;
  size_t k = 0;
  for (size_t i = 0; i < size_t(r); ++i) out.push_back(inserted[i] ? Dim(1) : in[k++]);
  return Shape(out);
}

OpWork no_work(const OpContext&, const std::vector<TensorType>&) {
  return {};
}

void add_flatten_squeeze_unsqueeze(OpTableBuilder& table) {
  {
    OpDef d;
    d.name = "Flatten";
    d.attrs = {{"axis", AttrKind::Int, AttrValue(int64_t{1})}};
    d.fusion = FusionClass::Layout;
    d.infer = [](const OpContext& ctx) {
      const TensorType& in = ctx.input_type(0);
      if (!in.shape.has_rank()) return one(in.dtype, unknown_dims(2));
      return one(in.dtype, flatten_shape(ctx, in.shape));
    };
    d.work = no_work;
    d.kernel = [](const OpContext& ctx) {
      const Tensor& x = value_of(ctx, 0);
      return std::vector<Tensor>{x.reshaped(flatten_shape(ctx, x.type().shape).static_dims())};
    };
    table.add(std::move(d));
  }
  for (bool squeeze : {true, false}) {
    OpDef d;
    d.name = squeeze ? "Squeeze" : "Unsqueeze";
    d.min_inputs = 1;
    d.max_inputs = 2;
    d.attrs = {{"axes", AttrKind::Ints, std::nullopt}};
    d.fusion = FusionClass::Layout;
    d.infer = [squeeze](const OpContext& ctx) {
      const TensorType& in = ctx.input_type(0);
      if (!in.shape.has_rank()) return one(in.dtype, Shape::unranked());
      auto s = squeeze ? squeeze_shape(ctx, in.shape) : unsqueeze_shape(ctx, in.shape);
      return one(in.dtype, s ? *s : Shape::unranked());
    };
    d.work = no_work;
    d.kernel = [squeeze](const OpContext& ctx) {
      const Tensor& x = value_of(ctx, 0);
      auto s = squeeze ? squeeze_shape(ctx, x.type().shape) : unsqueeze_shape(ctx, x.type().shape);
      if (!s || !s->is_static()) ctx.fail("needs constant axes");
      return std::vector<Tensor>{x.reshaped(s->static_dims())};
    };
    table.add(std::move(d));
  }
}

// ---- Identity, Dropout ------------------------------------------------------------------

void add_identity_dropout(OpTableBuilder& table) {
  {
    OpDef d;
    d.name = "Identity";
    d.fusion = FusionClass::Layout;
    d.infer = [](const OpContext& ctx) { return std::vector<TensorType>{ctx.input_type(0)}; };
    d.work = no_work;
    d.kernel = [](const OpContext& ctx) { return std::vector<Tensor>{value_of(ctx, 0)}; };
    table.add(std::move(d));
  }
  OpDef d;
  d.name = "Dropout";
  d.min_inputs = 1;
  d.max_inputs = 3;
  d.max_outputs = 2;
  d.attrs = {{"seed", AttrKind::Int, std::nullopt}, {"ratio", AttrKind::Float, std::nullopt}};
  d.fusion = FusionClass::Layout;
  d.infer = [](const OpContext& ctx) {
    const TensorType& in = ctx.input_type(0);
    return std::vector<TensorType>{in, TensorType{DType::boolean, in.shape}};
  };
  d.work = [](const OpContext&, const std::vector<TensorType>& outs) {
    OpWork w;
    if (outs.size() > 1) w.bytes_written = type_bytes(outs[1]);
    return w;
  };
  d.kernel = [](const OpContext& ctx) {
    const Tensor& x = value_of(ctx, 0);
    if (const Tensor* training = ctx.input_value(2);
        training && training->numel() == 1 && training->get(0) != 0) {
      double ratio = ctx.input_value(1) ? ctx.input_value(1)->get(0) : 0.5;
      if (ratio != 0) unsupported(ctx, "training mode is not supported (inference only)");
    }
    Tensor mask(DType::boolean, x.dims());
    std::fill(mask.data<bool>().begin(), mask.data<bool>().end(), true);
    return std::vector<Tensor>{x, std::move(mask)};
  };
  table.add(std::move(d));
}

// ---- Expand, Tile -----------------------------------------------------------------------

Shape expand_shape(const OpContext& ctx, const Shape& in, const std::vector<SymInt>& target) {
  size_t r = std::max(in.rank(), target.size());
  std::vector<Dim> out(r);
  for (size_t i = 0; i < r; ++i) {
    bool has_in = i < in.rank(), has_t = i < target.size();
    Dim a = has_in ? in[in.rank() - 1 - i] : Dim(1);
    SymInt b = has_t ? target[target.size() - 1 - i] : SymInt(1);
    Dim& o = out[r - 1 - i];
    auto bc = b.constant();
    if (bc && *bc < 0)
      ctx.fail("cannot expand to a negative dim " + std::to_string(*bc));
    else if (bc && *bc == 1)
      o = a;
    else if (a.is_static() && a.value() == 1)
      o = Dim::from_sym(b);
    else if (a.is_static() && bc && a.value() != *bc)
      ctx.fail("cannot expand " + in.str() + " to the shape given (dim " + std::to_string(*bc) +
               ")");
    else if (a.is_static())
      o = a;  // b is 1 or a at run time
    else if (bc)
      o = Dim(*bc);  // a is 1 or b at run time
    else
      o = Dim::from_sym(sym_max(a.sym(), b));  // one of them is 1, or they are equal
  }
  return Shape(out);
}

void add_expand_tile(OpTableBuilder& table) {
  {
    OpDef d;
    d.name = "Expand";
    d.min_inputs = d.max_inputs = 2;
    d.fusion = FusionClass::Layout;
    d.infer = [](const OpContext& ctx) {
      const TensorType& in = ctx.input_type(0);
      auto target = ctx.sym_ints_attr_or_input("shape", 1);
      if (!target || !in.shape.has_rank()) {
        const Shape& ss = ctx.input_type(1).shape;
        if (in.shape.has_rank() && ss.has_rank() && ss.rank() == 1 && ss[0].is_static())
          return one(in.dtype, unknown_dims(std::max(in.shape.rank(), size_t(ss[0].value()))));
        return one(in.dtype, Shape::unranked());
      }
      return one(in.dtype, expand_shape(ctx, in.shape, *target));
    };
    d.work = move_work;
    d.kernel = [](const OpContext& ctx) {
      const Tensor& x = value_of(ctx, 0);
      auto out_dims =
          expand_shape(ctx, x.type().shape, as_sym(value_of(ctx, 1).to_int64s())).static_dims();
      auto st = strides_of(x.dims());
      std::vector<int64_t> in_strides(out_dims.size(), 0);
      size_t off = out_dims.size() - x.rank();
      for (size_t i = 0; i < x.rank(); ++i) in_strides[off + i] = x.dims()[i] == 1 ? 0 : st[i];
      return std::vector<Tensor>{strided_copy(x, 0, in_strides, out_dims)};
    };
    table.add(std::move(d));
  }
  OpDef d;
  d.name = "Tile";
  d.min_inputs = d.max_inputs = 2;
  d.fusion = FusionClass::Layout;
  d.infer = [](const OpContext& ctx) {
    const TensorType& in = ctx.input_type(0);
    if (!in.shape.has_rank()) return one(in.dtype, Shape::unranked());
    auto repeats = ctx.sym_ints_attr_or_input("repeats", 1);
    if (!repeats) return one(in.dtype, unknown_dims(in.shape.rank()));
    if (repeats->size() != in.shape.rank()) ctx.fail("repeats must have one entry per input dim");
    std::vector<Dim> out;
    for (size_t i = 0; i < repeats->size(); ++i) {
      const SymInt& r = (*repeats)[i];
      if (r.constant() && *r.constant() < 0) ctx.fail("repeats must be non-negative");
      out.push_back(Dim::from_sym(in.shape[i].sym() * r));
    }
    return one(in.dtype, Shape(out));
  };
  d.work = move_work;
  d.kernel = [](const OpContext& ctx) {
    Tensor cur = value_of(ctx, 0);
    auto repeats = value_of(ctx, 1).to_int64s();
    if (repeats.size() != cur.rank()) ctx.fail("repeats must have one entry per input dim");
    const size_t es = dtype_size(cur.dtype());
    for (size_t a = 0; a < repeats.size(); ++a) {
      int64_t r = repeats[a];
      if (r < 0) ctx.fail("repeats must be non-negative");
      if (r == 1) continue;
      auto dims = cur.dims();
      int64_t outer =
          std::accumulate(dims.begin(), dims.begin() + int64_t(a), int64_t{1}, std::multiplies<>());
      size_t block = size_t(std::accumulate(dims.begin() + int64_t(a), dims.end(), int64_t{1},
                                            std::multiplies<>())) *
                     es;
      dims[a] *= r;
      Tensor next(cur.dtype(), dims);
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t k = 0; k < r; ++k)
          std::memcpy(next.raw() + (size_t(o * r + k)) * block, cur.raw() + size_t(o) * block,
                      block);
      cur = std::move(next);
    }
    return std::vector<Tensor>{std::move(cur)};
  };
  table.add(std::move(d));
}

// ---- DepthToSpace, SpaceToDepth -----------------------------------------------------------

// Both are a reshape to 6-D, a transpose and a reshape back: one strided copy.
void add_depth_space(OpTableBuilder& table) {
  for (bool to_space : {true, false}) {
    OpDef d;
    d.name = to_space ? "DepthToSpace" : "SpaceToDepth";
    d.attrs = {{"blocksize", AttrKind::Int, std::nullopt, true}};
    if (to_space) d.attrs.push_back({"mode", AttrKind::String, AttrValue(std::string("DCR"))});
    d.fusion = FusionClass::Layout;
    d.infer = [to_space](const OpContext& ctx) {
      const TensorType& in = ctx.input_type(0);
      int64_t b = ctx.attr_int("blocksize");
      if (b <= 0) ctx.fail("blocksize must be positive");
      if (!in.shape.has_rank()) return one(in.dtype, unknown_dims(4));
      if (in.shape.rank() != 4) ctx.fail("needs a 4-D input");
      auto scale = [](const Dim& dim, int64_t num, int64_t den, const OpContext& c) {
        if (!dim.is_static()) return Dim::unknown();
        if ((dim.value() * num) % den != 0)
          c.fail("dim " + dim.str() + " is not divisible by the block");
        return Dim(dim.value() * num / den);
      };
      const auto& s = in.shape;
      if (to_space)
        return one(in.dtype, Shape({s[0], scale(s[1], 1, b * b, ctx), scale(s[2], b, 1, ctx),
                                    scale(s[3], b, 1, ctx)}));
      return one(in.dtype, Shape({s[0], scale(s[1], b * b, 1, ctx), scale(s[2], 1, b, ctx),
                                  scale(s[3], 1, b, ctx)}));
    };
    d.work = move_work;
    d.kernel = [to_space](const OpContext& ctx) {
      const Tensor& x = value_of(ctx, 0);
      int64_t b = ctx.attr_int("blocksize");
      if (x.rank() != 4) ctx.fail("needs a 4-D input");
      int64_t n = x.dims()[0], c = x.dims()[1], h = x.dims()[2], w = x.dims()[3];
      std::vector<int64_t> view, perm, out_view, out_dims;
      if (to_space) {
        if (c % (b * b) != 0) ctx.fail("channels not divisible by blocksize^2");
        int64_t c2 = c / (b * b);
        if (ctx.attr_string("mode") == "CRD") {
          view = {n, c2, b, b, h, w};
          perm = {0, 1, 4, 2, 5, 3};
        } else {
          view = {n, b, b, c2, h, w};
          perm = {0, 3, 4, 1, 5, 2};
        }
        out_dims = {n, c2, h * b, w * b};
      } else {
        if (h % b != 0 || w % b != 0) ctx.fail("spatial dims not divisible by blocksize");
        view = {n, c, h / b, b, w / b, b};
        perm = {0, 3, 5, 1, 2, 4};
        out_dims = {n, c * b * b, h / b, w / b};
      }
      auto st = strides_of(view);
      std::vector<int64_t> in_strides;
      for (int64_t p : perm) {
        out_view.push_back(view[size_t(p)]);
        in_strides.push_back(st[size_t(p)]);
      }
      return std::vector<Tensor>{strided_copy(x, 0, in_strides, out_view).reshaped(out_dims)};
    };
    table.add(std::move(d));
  }
}

}  // namespace

void register_layout_slicing_ops(OpTableBuilder& table);  // layout_slicing.cpp

void register_layout_ops(OpTableBuilder& table) {
  add_transpose(table);
  add_reshape(table);
  add_flatten_squeeze_unsqueeze(table);
  add_identity_dropout(table);
  add_expand_tile(table);
  add_depth_space(table);
  register_layout_slicing_ops(table);
}

}  // namespace eqfuse::ir
