// Op group "layout", continued: the ops that cut and join along axes (Concat, Split, Slice,
// Pad). Registered by register_layout_ops (layout.cpp).
#include <algorithm>
#include <climits>
#include <numeric>

#include "ir/ops/structured_common.h"
#include "ir/pad.h"

namespace eqfuse::ir {

using namespace structured;

namespace {

int64_t prod(const std::vector<int64_t>& v, size_t b, size_t e) {
  int64_t n = 1;
  for (size_t i = b; i < e; ++i) n *= v[i];
  return n;
}

// ---- Concat -----------------------------------------------------------------------------

void add_concat(OpTableBuilder& table) {
  OpDef d;
  d.name = "Concat";
  d.min_inputs = 1;
  d.max_inputs = -1;
  d.attrs = {{"axis", AttrKind::Int, std::nullopt, true}};
  d.fusion = FusionClass::Layout;
  d.infer = [](const OpContext& ctx) {
    const TensorType& first = ctx.input_type(0);
    const Shape* ranked = nullptr;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      const TensorType& t = ctx.input_type(i);
      if (t.dtype != first.dtype) ctx.fail("inputs have different dtypes");
      if (t.shape.has_rank() && !ranked) ranked = &t.shape;
    }
    if (!ranked) return std::vector<TensorType>{{first.dtype, Shape::unranked()}};
    size_t r = ranked->rank();
    int64_t axis = axis_in(ctx, ctx.attr_int("axis"), int64_t(r));
    std::vector<Dim> out(r, Dim::unknown());
    SymInt sum(0);
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      const Shape& s = ctx.input_type(i).shape;
      if (!s.has_rank()) {
        sum = SymInt::unknown();
        continue;
      }
      if (s.rank() != r) ctx.fail("inputs have different ranks");
      for (size_t k = 0; k < r; ++k) {
        if (int64_t(k) == axis) continue;
        if (s[k].is_static() && out[k].is_static() && s[k] != out[k])
          ctx.fail("input " + std::to_string(i) + " has dim " + s[k].str() + " at axis " +
                   std::to_string(k) + ", others " + out[k].str());
        if (s[k].is_static() || out[k].symbol_name().empty()) {
          if (!out[k].is_static()) out[k] = s[k];
        }
      }
      sum = sum + s[size_t(axis)].sym();
    }
    out[size_t(axis)] = Dim::from_sym(sum);
    if (ctx.num_inputs() == 1) out[size_t(axis)] = (*ranked)[size_t(axis)];
    return std::vector<TensorType>{{first.dtype, Shape(out)}};
  };
  d.work = [](const OpContext& ctx, const std::vector<TensorType>& outs) {
    OpWork w;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) w.bytes_read += type_bytes(ctx.input_type(i));
    w.bytes_written = type_bytes(outs[0]);
    return w;
  };
  d.kernel = [](const OpContext& ctx) {
    const Tensor& x0 = value_of(ctx, 0);
    size_t r = x0.rank();
    int64_t axis = axis_in(ctx, ctx.attr_int("axis"), int64_t(r));
    std::vector<int64_t> out_dims = x0.dims();
    out_dims[size_t(axis)] = 0;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      const Tensor& x = value_of(ctx, i);
      if (x.rank() != r || x.dtype() != x0.dtype()) ctx.fail("inputs do not match");
      for (size_t k = 0; k < r; ++k)
        if (int64_t(k) != axis && x.dims()[k] != x0.dims()[k]) ctx.fail("input dims do not match");
      out_dims[size_t(axis)] += x.dims()[size_t(axis)];
    }
    Tensor out(x0.dtype(), out_dims);
    const size_t es = dtype_size(x0.dtype());
    int64_t outer = prod(out_dims, 0, size_t(axis));
    size_t out_block = size_t(prod(out_dims, size_t(axis), r)) * es;
    size_t offset = 0;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      const Tensor& x = value_of(ctx, i);
      size_t block = size_t(prod(x.dims(), size_t(axis), r)) * es;
      if (block == 0) continue;
      for (int64_t o = 0; o < outer; ++o)
        std::memcpy(out.raw() + size_t(o) * out_block + offset, x.raw() + size_t(o) * block, block);
      offset += block;
    }
    return std::vector<Tensor>{std::move(out)};
  };
  table.add(std::move(d));
}

// ---- Split ------------------------------------------------------------------------------

// Sizes of the parts along the axis; nullopt when not known statically.
std::optional<std::vector<int64_t>> split_sizes(const OpContext& ctx, const Dim& dim,
                                                size_t parts) {
  auto split = ctx.ints_attr_or_input("split", 1);
  if (split) {
    if (split->size() != parts)
      ctx.fail("split has " + std::to_string(split->size()) + " entries for " +
               std::to_string(parts) + " outputs");
    int64_t sum = 0;
    for (int64_t s : *split) {
      if (s < 0) ctx.fail("split sizes must be non-negative");
      sum += s;
    }
    if (dim.is_static() && sum != dim.value())
      ctx.fail("split sizes sum to " + std::to_string(sum) + ", the axis has " + dim.str());
    return split;
  }
  if (ctx.has_input(1) || !dim.is_static()) return std::nullopt;
  int64_t n = dim.value(), k = int64_t(parts);
  int64_t chunk = (n + k - 1) / k;
  if (!ctx.has_attr("num_outputs") && n % k != 0)
    ctx.fail("axis of size " + std::to_string(n) + " does not split evenly into " +
             std::to_string(k));
  std::vector<int64_t> sizes(parts, chunk);
  sizes.back() = n - chunk * (k - 1);
  if (sizes.back() < 0)
    ctx.fail("cannot split " + std::to_string(n) + " into " + std::to_string(k));
  return sizes;
}

// The number of outputs: the node's, else num_outputs, else the length of split.
size_t split_parts(const OpContext& ctx) {
  size_t parts = ctx.node.outputs.size();
  if (parts == 0 && ctx.has_attr("num_outputs"))
    parts = size_t(std::max<int64_t>(0, ctx.attr_int("num_outputs")));
  if (parts == 0) {
    if (auto split = ctx.ints_attr_or_input("split", 1)) parts = split->size();
  }
  if (parts == 0) ctx.fail("needs at least one output");
  return parts;
}

void add_split(OpTableBuilder& table) {
  OpDef d;
  d.name = "Split";
  d.min_inputs = 1;
  d.max_inputs = 2;
  d.max_outputs = -1;
  d.attrs = {{"axis", AttrKind::Int, AttrValue(int64_t{0})},
             {"split", AttrKind::Ints, std::nullopt},
             {"num_outputs", AttrKind::Int, std::nullopt}};
  d.fusion = FusionClass::Layout;
  d.infer = [](const OpContext& ctx) {
    const TensorType& in = ctx.input_type(0);
    size_t parts = split_parts(ctx);
    if (!in.shape.has_rank()) return std::vector<TensorType>(parts, {in.dtype, Shape::unranked()});
    int64_t axis = axis_in(ctx, ctx.attr_int("axis"), int64_t(in.shape.rank()));
    auto sizes = split_sizes(ctx, in.shape[size_t(axis)], parts);
    std::vector<TensorType> out;
    for (size_t i = 0; i < parts; ++i) {
      Shape s = in.shape;
      s[size_t(axis)] = sizes ? Dim((*sizes)[i]) : Dim::unknown();
      out.push_back({in.dtype, s});
    }
    return out;
  };
  d.work = move_work;
  d.kernel = [](const OpContext& ctx) {
    const Tensor& x = value_of(ctx, 0);
    size_t r = x.rank();
    int64_t axis = axis_in(ctx, ctx.attr_int("axis"), int64_t(r));
    auto sizes = split_sizes(ctx, Dim(x.dims()[size_t(axis)]), split_parts(ctx));
    if (!sizes) ctx.fail("needs constant split sizes");
    const size_t es = dtype_size(x.dtype());
    int64_t outer = prod(x.dims(), 0, size_t(axis));
    size_t in_block = size_t(prod(x.dims(), size_t(axis), r)) * es;
    size_t inner = size_t(prod(x.dims(), size_t(axis) + 1, r)) * es;
    std::vector<Tensor> outs;
    size_t offset = 0;
    for (int64_t s : *sizes) {
      auto dims = x.dims();
      dims[size_t(axis)] = s;
      Tensor t(x.dtype(), dims);
      size_t block = size_t(s) * inner;
      for (int64_t o = 0; o < outer && block > 0; ++o)
        std::memcpy(t.raw() + size_t(o) * block, x.raw() + size_t(o) * in_block + offset, block);
      offset += block;
      outs.push_back(std::move(t));
    }
    return outs;
  };
  table.add(std::move(d));
}

// ---- Slice ------------------------------------------------------------------------------

struct SliceAxis {
  int64_t start, step, size;
};

// ONNX clamping: negative indices count from the end; starts clamp to [0, dim] ([0, dim-1]
// for negative steps), ends to [0, dim] ([-1, dim-1]).
SliceAxis slice_axis(int64_t dim, int64_t start, int64_t end, int64_t step) {
  if (start < 0) start += dim;
  if (end < 0) end += dim;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    return {start, step, std::max<int64_t>(0, (end - start + step - 1) / step)};
  }
  start = std::clamp<int64_t>(start, 0, dim - 1);
  end = std::clamp<int64_t>(end, -1, dim - 1);
  int64_t s = -step;
  return {start, step, std::max<int64_t>(0, (start - end + s - 1) / s)};
}

struct SliceSpec {
  std::optional<std::vector<int64_t>> starts, ends, axes, steps;
};

// The constant parameters; axes are normalized whenever known (even when starts or ends come
// from a shape computation), and every known list is checked against the others.
SliceSpec slice_spec(const OpContext& ctx, size_t rank) {
  SliceSpec s;
  s.starts = ctx.ints_attr_or_input("starts", 1);
  s.ends = ctx.ints_attr_or_input("ends", 2);
  s.axes = ctx.ints_attr_or_input("axes", 3);
  s.steps = ctx.ints_attr_or_input("steps", 4);
  std::optional<size_t> n;
  auto check = [&](const std::optional<std::vector<int64_t>>& v, const char* what) {
    if (!v) return;
    if (n && v->size() != *n) ctx.fail(std::string(what) + " and starts/ends differ in length");
    n = v->size();
  };
  check(s.starts, "starts");
  check(s.ends, "ends");
  if (!n) {  // lengths from the symbolic parameters
    if (auto st = ctx.sym_ints_attr_or_input("starts", 1)) n = st->size();
    if (auto en = ctx.sym_ints_attr_or_input("ends", 2); en && !n) n = en->size();
  }
  if (n && !s.axes && !ctx.has_input(3) && !ctx.has_attr("axes")) {
    s.axes = std::vector<int64_t>(*n);
    std::iota(s.axes->begin(), s.axes->end(), 0);
  }
  if (n && !s.steps && !ctx.has_input(4) && !ctx.has_attr("steps"))
    s.steps = std::vector<int64_t>(*n, 1);
  check(s.axes, "axes");
  check(s.steps, "steps");
  if (s.axes) {
    if (s.axes->size() > rank) ctx.fail("axes has more entries than the input's rank");
    std::vector<bool> seen(rank, false);
    for (int64_t& a : *s.axes) {
      a = axis_in(ctx, a, int64_t(rank));
      if (seen[size_t(a)]) ctx.fail("axes has duplicates");
      seen[size_t(a)] = true;
    }
  }
  if (s.steps) {
    for (int64_t st : *s.steps)
      if (st == 0) ctx.fail("steps must be non-zero");
  }
  return s;
}

// A bound of a slice along an axis of symbolic size `dim`, clamped to [0, dim]; indices that
// are not constants are taken as non-negative (they come from shapes).
SymInt slice_bound(const SymInt& dim, const SymInt& bound) {
  if (auto c = bound.constant()) {
    if (*c >= INT_MAX) return dim;
    if (*c < 0) return sym_max(dim + bound, SymInt(0));
  }
  return sym_min(bound, dim);
}

// The size of a slice of a dim along an axis.
Dim slice_dim(const Dim& dim, const SymInt& start, const SymInt& end, int64_t step) {
  if (dim.is_static() && start.constant() && end.constant())
    return Dim(slice_axis(dim.value(), *start.constant(), *end.constant(), step).size);
  if (!dim.sym().is_known() || step < 0) return Dim::unknown();
  SymInt b = slice_bound(dim.sym(), start), e = slice_bound(dim.sym(), end);
  SymInt len = e - b;
  if (auto c = len.constant(); !(c && *c >= 0)) len = sym_max(len, SymInt(0));
  return Dim::from_sym(ceil_div(len, SymInt(step)));
}

void add_slice(OpTableBuilder& table) {
  OpDef d;
  d.name = "Slice";
  d.min_inputs = 1;
  d.max_inputs = 5;
  d.attrs = {{"starts", AttrKind::Ints, std::nullopt},
             {"ends", AttrKind::Ints, std::nullopt},
             {"axes", AttrKind::Ints, std::nullopt},
             {"steps", AttrKind::Ints, std::nullopt}};
  d.fusion = FusionClass::Layout;
  d.infer = [](const OpContext& ctx) {
    const TensorType& in = ctx.input_type(0);
    if (!in.shape.has_rank()) return std::vector<TensorType>{{in.dtype, Shape::unranked()}};
    size_t r = in.shape.rank();
    SliceSpec s = slice_spec(ctx, r);
    if (!s.axes) return std::vector<TensorType>{{in.dtype, unknown_dims(r)}};
    Shape out = in.shape;
    auto starts = ctx.sym_ints_attr_or_input("starts", 1);
    auto ends = ctx.sym_ints_attr_or_input("ends", 2);
    for (size_t i = 0; i < s.axes->size(); ++i) {
      size_t a = size_t((*s.axes)[i]);
      if (!s.steps) {
        out[a] = Dim::unknown();
        continue;
      }
      SymInt start = starts && i < starts->size() ? (*starts)[i] : SymInt::unknown();
      SymInt end = ends && i < ends->size() ? (*ends)[i] : SymInt::unknown();
      out[a] = slice_dim(in.shape[a], start, end, (*s.steps)[i]);
    }
    return std::vector<TensorType>{{in.dtype, out}};
  };
  d.work = [](const OpContext&, const std::vector<TensorType>& outs) {
    OpWork w;
    w.bytes_read = w.bytes_written = type_bytes(outs[0]);
    return w;
  };
  d.kernel = [](const OpContext& ctx) {
    const Tensor& x = value_of(ctx, 0);
    SliceSpec s = slice_spec(ctx, x.rank());
    if (!s.starts || !s.ends || !s.axes || !s.steps)
      ctx.fail("needs constant starts/ends/axes/steps");
    auto st = strides_of(x.dims());
    std::vector<int64_t> out_dims = x.dims(), in_strides = st;
    int64_t base = 0;
    for (size_t i = 0; i < s.axes->size(); ++i) {
      size_t a = size_t((*s.axes)[i]);
      SliceAxis sa = slice_axis(x.dims()[a], (*s.starts)[i], (*s.ends)[i], (*s.steps)[i]);
      out_dims[a] = sa.size;
      if (sa.size > 0) base += sa.start * st[a];
      in_strides[a] = st[a] * sa.step;
    }
    return std::vector<Tensor>{strided_copy(x, base, in_strides, out_dims)};
  };
  table.add(std::move(d));
}

// ---- Pad --------------------------------------------------------------------------------

void add_pad(OpTableBuilder& table) {
  OpDef d;
  d.name = "Pad";
  d.min_inputs = 1;
  d.max_inputs = 4;
  d.attrs = {{"mode", AttrKind::String, AttrValue(std::string("constant"))},
             {"pads", AttrKind::Ints, std::nullopt},
             {"value", AttrKind::Float, AttrValue(0.0)}};
  d.fusion = FusionClass::Layout;
  d.infer = [](const OpContext& ctx) {
    const TensorType& in = ctx.input_type(0);
    if (!in.shape.has_rank()) return std::vector<TensorType>{{in.dtype, Shape::unranked()}};
    size_t r = in.shape.rank();
    auto pads = pad_amounts(ctx, r);
    if (!pads) return std::vector<TensorType>{{in.dtype, unknown_dims(r)}};
    Shape out = in.shape;
    for (size_t a = 0; a < r; ++a) {
      int64_t extra = (*pads)[a] + (*pads)[r + a];
      if (out[a].is_static()) {
        if (out[a].value() + extra < 0) ctx.fail("pads remove more than the axis holds");
        out[a] = Dim(out[a].value() + extra);
      } else if (extra != 0) {
        out[a] = Dim::unknown();
      }
    }
    return std::vector<TensorType>{{in.dtype, out}};
  };
  d.work = move_work;
  d.kernel = [](const OpContext& ctx) {
    const Tensor& x = value_of(ctx, 0);
    size_t r = x.rank();
    auto pads = pad_amounts(ctx, r);
    if (!pads) ctx.fail("needs constant pads");
    std::string mode = ctx.attr_string("mode");
    if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap")
      unsupported(ctx, "mode '" + mode + "' is not supported");
    Tensor fill(x.dtype(), {});
    if (const Tensor* v = ctx.input_value(2); v && v->numel() > 0)
      fill = v->cast(x.dtype()).reshaped({});
    else if (!ctx.has_input(2))
      fill.set(0, ctx.attr_float("value"));
    std::vector<int64_t> out_dims(r);
    std::vector<std::vector<int64_t>> src(r);  // per axis: input offset (elements) or -1
    auto st = strides_of(x.dims());
    for (size_t a = 0; a < r; ++a) {
      out_dims[a] = x.dims()[a] + (*pads)[a] + (*pads)[r + a];
      if (out_dims[a] < 0) ctx.fail("pads remove more than the axis holds");
      for (int64_t o = 0; o < out_dims[a]; ++o) {
        int64_t c = pad_source(o, (*pads)[a], x.dims()[a], mode);
        src[a].push_back(c < 0 ? -1 : c * st[a]);
      }
    }
    Tensor out(x.dtype(), out_dims);
    const size_t es = dtype_size(x.dtype());
    std::vector<int64_t> idx(r, 0);
    for (int64_t i = 0; i < out.numel(); ++i) {
      int64_t off = 0;
      bool constant = false;
      for (size_t a = 0; a < r; ++a) {
        int64_t s = src[a][size_t(idx[a])];
        if (s < 0) constant = true;
        off += s;
      }
      std::memcpy(out.raw() + size_t(i) * es, constant ? fill.raw() : x.raw() + size_t(off) * es,
                  es);
      for (size_t a = r; a-- > 0;) {
        if (++idx[a] < out_dims[a]) break;
        idx[a] = 0;
      }
    }
    return std::vector<Tensor>{std::move(out)};
  };
  table.add(std::move(d));
}

}  // namespace

void register_layout_slicing_ops(OpTableBuilder& table) {
  add_concat(table);
  add_split(table);
  add_slice(table);
  add_pad(table);
}

std::optional<std::vector<int64_t>> pad_amounts(const OpContext& ctx, size_t rank) {
  auto pads = ctx.ints_attr_or_input("pads", 1);
  if (!pads) return std::nullopt;
  std::vector<int64_t> axes(rank);
  std::iota(axes.begin(), axes.end(), 0);
  if (ctx.has_input(3)) {
    const Tensor* a = ctx.input_value(3);
    if (!a) return std::nullopt;
    axes = a->to_int64s();
    for (int64_t& x : axes) x = axis_in(ctx, x, int64_t(rank));
  }
  if (pads->size() != 2 * axes.size())
    ctx.fail("pads has " + std::to_string(pads->size()) + " entries, expected " +
             std::to_string(2 * axes.size()));
  std::vector<int64_t> full(2 * rank, 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    full[size_t(axes[i])] = (*pads)[i];
    full[rank + size_t(axes[i])] = (*pads)[axes.size() + i];
  }
  return full;
}

int64_t pad_source(int64_t o, int64_t begin, int64_t n, const std::string& mode) {
  int64_t c = o - begin;
  if (c >= 0 && c < n) return c;
  if (mode == "constant" || n == 0) return -1;
  if (mode == "edge") return std::clamp<int64_t>(c, 0, n - 1);
  if (mode == "wrap") return ((c % n) + n) % n;
  if (n == 1) return 0;  // reflect
  int64_t period = 2 * (n - 1);
  c = ((c % period) + period) % period;
  return c < n ? c : period - c;
}

}  // namespace eqfuse::ir
