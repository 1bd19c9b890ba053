// Op group "indexing": ops that read or write elements at positions given by data (Gather,
// GatherElements, GatherND, ScatterElements, ScatterND, OneHot, NonZero, TopK) or by position
// (Trilu). The cost model treats them as layout: they move data and compute little.
#include <algorithm>
#include <numeric>

#include "ir/ops/structured_common.h"

namespace eqfuse::ir {

using namespace structured;

namespace {

int64_t prod(const std::vector<int64_t>& v, size_t b, size_t e) {
  int64_t n = 1;
  for (size_t i = b; i < e; ++i) n *= v[i];
  return n;
}

// An index into an axis of size n, negative counting from the end; fails when out of range.
int64_t checked_index(const OpContext& ctx, int64_t i, int64_t n) {
  if (i < -n || i >= n)
    ctx.fail("index " + std::to_string(i) + " is out of range for an axis of size " +
             std::to_string(n));
  return i < 0 ? i + n : i;
}

// Bytes of the output written and read (the gathered rows) plus the indices read.
OpWork gather_work(const OpContext& ctx, const std::vector<TensorType>& outs) {
  OpWork w;
  w.bytes_written = type_bytes(outs[0]);
  w.bytes_read = type_bytes(outs[0]) + type_bytes(ctx.input_type(1));
  return w;
}

void add_gather(OpTableBuilder& table) {
  OpDef d;
  d.name = "Gather";
  d.min_inputs = d.max_inputs = 2;
  d.attrs = {{"axis", AttrKind::Int, AttrValue(int64_t{0})}};
  d.fusion = FusionClass::Layout;
  d.infer = [](const OpContext& ctx) {
    const TensorType& data = ctx.input_type(0);
    const TensorType& idx = ctx.input_type(1);
    if (!data.shape.has_rank() || !idx.shape.has_rank())
      return std::vector<TensorType>{{data.dtype, Shape::unranked()}};
    int64_t axis = axis_in(ctx, ctx.attr_int("axis"), int64_t(data.shape.rank()));
    std::vector<Dim> out(data.shape.dims().begin(), data.shape.dims().begin() + axis);
    out.insert(out.end(), idx.shape.dims().begin(), idx.shape.dims().end());
    out.insert(out.end(), data.shape.dims().begin() + axis + 1, data.shape.dims().end());
    return std::vector<TensorType>{{data.dtype, Shape(out)}};
  };
  d.work = gather_work;
  d.kernel = [](const OpContext& ctx) {
    const Tensor& data = value_of(ctx, 0);
    const Tensor& indices = value_of(ctx, 1);
    size_t axis = size_t(axis_in(ctx, ctx.attr_int("axis"), int64_t(data.rank())));
    std::vector<int64_t> out_dims(data.dims().begin(), data.dims().begin() + int64_t(axis));
    out_dims.insert(out_dims.end(), indices.dims().begin(), indices.dims().end());
    out_dims.insert(out_dims.end(), data.dims().begin() + int64_t(axis) + 1, data.dims().end());
    Tensor out(data.dtype(), out_dims);
    auto idx = indices.to_int64s();
    int64_t n = data.dims()[axis];
    for (int64_t& i : idx) i = checked_index(ctx, i, n);
    const size_t es = dtype_size(data.dtype());
    int64_t outer = prod(data.dims(), 0, axis);
    size_t inner = size_t(prod(data.dims(), axis + 1, data.rank())) * es;
    size_t k = idx.size();
    for (int64_t o = 0; o < outer; ++o)
      for (size_t j = 0; j < k; ++j)
        std::memcpy(out.raw() + (size_t(o) * k + j) * inner,
                    data.raw() + (size_t(o * n + idx[j])) * inner, inner);
    return std::vector<Tensor>{std::move(out)};
  };
  table.add(std::move(d));
}

// Walks every index of `dims`, calling f(flat, index).
template <typename F>
void for_each_index(const std::vector<int64_t>& dims, F f) {
  int64_t total = product(dims);
  std::vector<int64_t> idx(dims.size(), 0);
  for (int64_t i = 0; i < total; ++i) {
    f(i, idx);
    for (size_t a = dims.size(); a-- > 0;) {
      if (++idx[a] < dims[a]) break;
      idx[a] = 0;
    }
  }
}

void add_gather_elements(OpTableBuilder& table) {
  OpDef d;
  d.name = "GatherElements";
  d.min_inputs = d.max_inputs = 2;
  d.attrs = {{"axis", AttrKind::Int, AttrValue(int64_t{0})}};
  d.fusion = FusionClass::Layout;
  d.infer = [](const OpContext& ctx) {
    const TensorType& data = ctx.input_type(0);
    const TensorType& idx = ctx.input_type(1);
    if (data.shape.has_rank() && idx.shape.has_rank() && data.shape.rank() != idx.shape.rank())
      ctx.fail("data and indices must have the same rank");
    if (data.shape.has_rank()) axis_in(ctx, ctx.attr_int("axis"), int64_t(data.shape.rank()));
    return std::vector<TensorType>{{data.dtype, idx.shape}};
  };
  d.work = gather_work;
  d.kernel = [](const OpContext& ctx) {
    const Tensor& data = value_of(ctx, 0);
    const Tensor& indices = value_of(ctx, 1);
    if (data.rank() != indices.rank()) ctx.fail("data and indices must have the same rank");
    size_t axis = size_t(axis_in(ctx, ctx.attr_int("axis"), int64_t(data.rank())));
    Tensor out(data.dtype(), indices.dims());
    auto idx = indices.to_int64s();
    auto st = strides_of(data.dims());
    for_each_index(indices.dims(), [&](int64_t i, const std::vector<int64_t>& at) {
      int64_t off = 0;
      for (size_t a = 0; a < at.size(); ++a) {
        int64_t c = a == axis ? checked_index(ctx, idx[size_t(i)], data.dims()[a]) : at[a];
        off += c * st[a];
      }
      copy_element(data, off, out, i);
    });
    return std::vector<Tensor>{std::move(out)};
  };
  table.add(std::move(d));
}

void add_gather_nd(OpTableBuilder& table) {
  OpDef d;
  d.name = "GatherND";
  d.min_inputs = d.max_inputs = 2;
  d.attrs = {{"batch_dims", AttrKind::Int, AttrValue(int64_t{0})}};
  d.fusion = FusionClass::Layout;
  d.infer = [](const OpContext& ctx) {
    const TensorType& data = ctx.input_type(0);
    const Shape& is = ctx.input_type(1).shape;
    if (!data.shape.has_rank() || !is.has_rank() || is.rank() == 0 ||
        !is[is.rank() - 1].is_static())
      return std::vector<TensorType>{{data.dtype, Shape::unranked()}};
    size_t b = size_t(ctx.attr_int("batch_dims"));
    size_t last = size_t(is[is.rank() - 1].value());
    if (b + last > data.shape.rank()) ctx.fail("indices address more dims than data has");
    std::vector<Dim> out(is.dims().begin(), is.dims().end() - 1);
    out.insert(out.end(), data.shape.dims().begin() + int64_t(b + last), data.shape.dims().end());
    return std::vector<TensorType>{{data.dtype, Shape(out)}};
  };
  d.work = gather_work;
  d.kernel = [](const OpContext& ctx) {
    const Tensor& data = value_of(ctx, 0);
    const Tensor& indices = value_of(ctx, 1);
    size_t b = size_t(ctx.attr_int("batch_dims"));
    size_t last = size_t(indices.dims().back());
    if (b + last > data.rank()) ctx.fail("indices address more dims than data has");
    std::vector<int64_t> out_dims(indices.dims().begin(), indices.dims().end() - 1);
    out_dims.insert(out_dims.end(), data.dims().begin() + int64_t(b + last), data.dims().end());
    Tensor out(data.dtype(), out_dims);
    auto idx = indices.to_int64s();
    auto st = strides_of(data.dims());
    const size_t es = dtype_size(data.dtype());
    int64_t batches = prod(data.dims(), 0, b);
    int64_t per_batch = prod(indices.dims(), b, indices.rank() - 1);
    size_t slice = size_t(prod(data.dims(), b + last, data.rank())) * es;
    size_t batch_stride = size_t(b > 0 ? st[b - 1] : data.numel());
    for (int64_t bi = 0; bi < batches; ++bi)
      for (int64_t j = 0; j < per_batch; ++j) {
        size_t t = size_t(bi * per_batch + j);
        int64_t off = 0;
        for (size_t k = 0; k < last; ++k)
          off += checked_index(ctx, idx[t * last + k], data.dims()[b + k]) * st[b + k];
        std::memcpy(out.raw() + t * slice,
                    data.raw() + (size_t(bi) * batch_stride + size_t(off)) * es, slice);
      }
    return std::vector<Tensor>{std::move(out)};
  };
  table.add(std::move(d));
}

double reduce_into(const OpContext& ctx, const std::string& how, double old, double v) {
  if (how == "none") return v;
  if (how == "add") return old + v;
  if (how == "mul") return old * v;
  if (how == "max") return std::max(old, v);
  if (how == "min") return std::min(old, v);
  ctx.fail("reduction '" + how + "' is not known");
}

void add_scatter(OpTableBuilder& table) {
  for (bool nd : {false, true}) {
    OpDef d;
    d.name = nd ? "ScatterND" : "ScatterElements";
    d.min_inputs = d.max_inputs = 3;
    d.attrs = {{"reduction", AttrKind::String, AttrValue(std::string("none"))}};
    if (!nd) d.attrs.push_back({"axis", AttrKind::Int, AttrValue(int64_t{0})});
    d.fusion = FusionClass::Layout;
    d.infer = [](const OpContext& ctx) { return std::vector<TensorType>{ctx.input_type(0)}; };
    d.work = [](const OpContext& ctx, const std::vector<TensorType>& outs) {
      OpWork w;
      w.bytes_read = type_bytes(ctx.input_type(0)) + type_bytes(ctx.input_type(1)) +
                     type_bytes(ctx.input_type(2));
      w.bytes_written = type_bytes(outs[0]);
      return w;
    };
    d.kernel = [nd](const OpContext& ctx) {
      const Tensor& data = value_of(ctx, 0);
      const Tensor& indices = value_of(ctx, 1);
      const Tensor& updates = value_of(ctx, 2);
      std::string how = ctx.attr_string("reduction");
      Tensor out = data;
      auto idx = indices.to_int64s();
      auto st = strides_of(data.dims());
      auto put = [&](int64_t dst, int64_t src) {
        if (how == "none")
          copy_element(updates, src, out, dst);
        else
          out.set(dst, reduce_into(ctx, how, out.get(dst), updates.get(src)));
      };
      if (!nd) {
        if (indices.dims() != updates.dims() || indices.rank() != data.rank())
          ctx.fail("indices and updates must have the same shape and data's rank");
        size_t axis = size_t(axis_in(ctx, ctx.attr_int("axis"), int64_t(data.rank())));
        for_each_index(indices.dims(), [&](int64_t i, const std::vector<int64_t>& at) {
          int64_t off = 0;
          for (size_t a = 0; a < at.size(); ++a)
            off += (a == axis ? checked_index(ctx, idx[size_t(i)], data.dims()[a]) : at[a]) * st[a];
          put(off, i);
        });
      } else {
        size_t last = size_t(indices.dims().back());
        if (last > data.rank()) ctx.fail("indices address more dims than data has");
        int64_t tuples = prod(indices.dims(), 0, indices.rank() - 1);
        int64_t slice = prod(data.dims(), last, data.rank());
        if (updates.numel() != tuples * slice) ctx.fail("updates have the wrong shape");
        for (int64_t t = 0; t < tuples; ++t) {
          int64_t off = 0;
          for (size_t k = 0; k < last; ++k)
            off += checked_index(ctx, idx[size_t(t) * last + k], data.dims()[k]) * st[k];
          for (int64_t e = 0; e < slice; ++e) put(off + e, t * slice + e);
        }
      }
      return std::vector<Tensor>{std::move(out)};
    };
    table.add(std::move(d));
  }
}

void add_trilu(OpTableBuilder& table) {
  OpDef d;
  d.name = "Trilu";
  d.min_inputs = 1;
  d.max_inputs = 2;
  d.attrs = {{"upper", AttrKind::Int, AttrValue(int64_t{1})}};
  d.fusion = FusionClass::Layout;
  d.infer = [](const OpContext& ctx) {
    const TensorType& in = ctx.input_type(0);
    if (in.shape.has_rank() && in.shape.rank() < 2) ctx.fail("needs rank >= 2");
    return std::vector<TensorType>{in};
  };
  d.work = move_work;
  d.kernel = [](const OpContext& ctx) {
    const Tensor& x = value_of(ctx, 0);
    if (x.rank() < 2) ctx.fail("needs rank >= 2");
    int64_t k = ctx.input_value(1) ? ctx.input_value(1)->to_int64s().at(0) : 0;
    bool upper = ctx.attr_int("upper") != 0;
    Tensor out(x.dtype(), x.dims());
    int64_t rows = x.dims()[x.rank() - 2], cols = x.dims()[x.rank() - 1];
    int64_t mats = rows * cols == 0 ? 0 : x.numel() / (rows * cols);
    for (int64_t m = 0; m < mats; ++m)
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) {
          bool keep = upper ? j - i >= k : j - i <= k;
          int64_t at = (m * rows + i) * cols + j;
          if (keep) copy_element(x, at, out, at);
        }
    return std::vector<Tensor>{std::move(out)};
  };
  table.add(std::move(d));
}

void add_one_hot(OpTableBuilder& table) {
  OpDef d;
  d.name = "OneHot";
  d.min_inputs = d.max_inputs = 3;
  d.attrs = {{"axis", AttrKind::Int, AttrValue(int64_t{-1})}};
  d.fusion = FusionClass::Layout;
  d.infer = [](const OpContext& ctx) {
    const Shape& is = ctx.input_type(0).shape;
    DType t = ctx.input_type(2).dtype;
    if (!is.has_rank()) return std::vector<TensorType>{{t, Shape::unranked()}};
    int64_t r = int64_t(is.rank()) + 1;
    size_t axis = size_t(axis_in(ctx, ctx.attr_int("axis"), r));
    Dim depth = Dim::unknown();
    if (const Tensor* dv = ctx.input_value(1)) depth = Dim(int64_t(dv->get(0)));
    std::vector<Dim> out = is.dims();
    out.insert(out.begin() + int64_t(axis), depth);
    return std::vector<TensorType>{{t, Shape(out)}};
  };
  d.work = [](const OpContext& ctx, const std::vector<TensorType>& outs) {
    OpWork w;
    w.bytes_read = type_bytes(ctx.input_type(0));
    w.bytes_written = type_bytes(outs[0]);
    return w;
  };
  d.kernel = [](const OpContext& ctx) {
    const Tensor& indices = value_of(ctx, 0);
    int64_t depth = int64_t(value_of(ctx, 1).get(0));
    const Tensor& values = value_of(ctx, 2);
    if (values.numel() != 2) ctx.fail("values must hold [off, on]");
    int64_t r = int64_t(indices.rank()) + 1;
    size_t axis = size_t(axis_in(ctx, ctx.attr_int("axis"), r));
    std::vector<int64_t> out_dims = indices.dims();
    out_dims.insert(out_dims.begin() + int64_t(axis), depth);
    Tensor out(values.dtype(), out_dims);
    for (int64_t i = 0; i < out.numel(); ++i) copy_element(values, 0, out, i);
    int64_t outer = prod(indices.dims(), 0, axis);
    int64_t inner = prod(indices.dims(), axis, indices.rank());
    auto idx = indices.to_doubles();
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t in = 0; in < inner; ++in) {
        auto v = int64_t(idx[size_t(o * inner + in)]);
        if (v < 0) v += depth;
        if (v < 0 || v >= depth) continue;
        copy_element(values, 1, out, (o * depth + v) * inner + in);
      }
    return std::vector<Tensor>{std::move(out)};
  };
  table.add(std::move(d));
}

void add_non_zero(OpTableBuilder& table) {
  OpDef d;
  d.name = "NonZero";
  d.fusion = FusionClass::Layout;
  d.infer = [](const OpContext& ctx) {
    const Shape& s = ctx.input_type(0).shape;
    if (!s.has_rank()) return std::vector<TensorType>{{DType::i64, unknown_dims(2)}};
    return std::vector<TensorType>{{DType::i64, Shape({Dim(int64_t(s.rank())), Dim::unknown()})}};
  };
  d.work = move_work;
  d.kernel = [](const OpContext& ctx) {
    const Tensor& x = value_of(ctx, 0);
    std::vector<std::vector<int64_t>> hits;
    for_each_index(x.dims(), [&](int64_t i, const std::vector<int64_t>& at) {
      if (x.get(i) != 0) hits.push_back(at);
    });
    int64_t r = int64_t(x.rank()), n = int64_t(hits.size());
    Tensor out(DType::i64, {r, n});
    auto o = out.data<int64_t>();
    for (int64_t j = 0; j < n; ++j)
      for (int64_t a = 0; a < r; ++a) o[size_t(a * n + j)] = hits[size_t(j)][size_t(a)];
    return std::vector<Tensor>{std::move(out)};
  };
  table.add(std::move(d));
}

void add_top_k(OpTableBuilder& table) {
  OpDef d;
  d.name = "TopK";
  d.min_inputs = d.max_inputs = 2;
  d.min_outputs = d.max_outputs = 2;
  d.attrs = {{"axis", AttrKind::Int, AttrValue(int64_t{-1})},
             {"largest", AttrKind::Int, AttrValue(int64_t{1})},
             {"sorted", AttrKind::Int, AttrValue(int64_t{1})}};
  d.fusion = FusionClass::Opaque;
  d.infer = [](const OpContext& ctx) {
    const TensorType& x = ctx.input_type(0);
    if (!x.shape.has_rank())
      return std::vector<TensorType>{{x.dtype, Shape::unranked()}, {DType::i64, Shape::unranked()}};
    size_t axis = size_t(axis_in(ctx, ctx.attr_int("axis"), int64_t(x.shape.rank())));
    Shape s = x.shape;
    s[axis] = ctx.input_value(1) ? Dim(ctx.input_value(1)->to_int64s().at(0)) : Dim::unknown();
    return std::vector<TensorType>{{x.dtype, s}, {DType::i64, s}};
  };
  d.work = move_work;
  d.kernel = [](const OpContext& ctx) {
    const Tensor& x = value_of(ctx, 0);
    int64_t k = value_of(ctx, 1).to_int64s().at(0);
    size_t axis = size_t(axis_in(ctx, ctx.attr_int("axis"), int64_t(x.rank())));
    int64_t n = x.dims()[axis];
    if (k < 0 || k > n) ctx.fail("k = " + std::to_string(k) + " is out of range");
    bool largest = ctx.attr_int("largest") != 0;
    auto dims = x.dims();
    dims[axis] = k;
    Tensor values(x.dtype(), dims), indices(DType::i64, dims);
    int64_t outer = prod(x.dims(), 0, axis), inner = prod(x.dims(), axis + 1, x.rank());
    auto xv = x.to_doubles();
    std::vector<int64_t> order(static_cast<size_t>(n));
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t in = 0; in < inner; ++in) {
        auto at = [&](int64_t j) { return xv[size_t((o * n + j) * inner + in)]; };
        std::iota(order.begin(), order.end(), 0);
        // Ties keep the lower index first, as ONNX specifies.
        std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
          return largest ? at(a) > at(b) : at(a) < at(b);
        });
        for (int64_t j = 0; j < k; ++j) {
          int64_t dst = (o * k + j) * inner + in;
          copy_element(x, (o * n + order[size_t(j)]) * inner + in, values, dst);
          indices.data<int64_t>()[size_t(dst)] = order[size_t(j)];
        }
      }
    return std::vector<Tensor>{std::move(values), std::move(indices)};
  };
  table.add(std::move(d));
}

}  // namespace

void register_indexing_ops(OpTableBuilder& table) {
  add_gather(table);
  add_gather_elements(table);
  add_gather_nd(table);
  add_scatter(table);
  add_trilu(table);
  add_one_hot(table);
  add_non_zero(table);
  add_top_k(table);
}

}  // namespace eqfuse::ir
