// Op group "pooling": MaxPool (with its Indices output), AveragePool, LpPool and the global
// pools, over 1-D to 3-D windows with strides, pads, auto_pad, dilations and ceil_mode. Values
// are reduced in double, so the reference is exact for every input dtype.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ir/ops/window.h"

namespace eqfuse::ir {

using namespace structured;

namespace {

enum class PoolKind { Max, Average, Lp };

std::vector<AttrSpec> pool_attrs(PoolKind kind) {
  std::vector<AttrSpec> a = {{"auto_pad", AttrKind::String, AttrValue(std::string("NOTSET"))},
                             {"ceil_mode", AttrKind::Int, AttrValue(int64_t{0})},
                             {"dilations", AttrKind::Ints, std::nullopt},
                             {"kernel_shape", AttrKind::Ints, std::nullopt, true},
                             {"pads", AttrKind::Ints, std::nullopt},
                             {"strides", AttrKind::Ints, std::nullopt}};
  if (kind == PoolKind::Max) a.push_back({"storage_order", AttrKind::Int, AttrValue(int64_t{0})});
  if (kind == PoolKind::Average)
    a.push_back({"count_include_pad", AttrKind::Int, AttrValue(int64_t{0})});
  if (kind == PoolKind::Lp) a.push_back({"p", AttrKind::Int, AttrValue(int64_t{2})});
  return a;
}

std::vector<TensorType> pool_infer(const OpContext& ctx, PoolKind kind) {
  const TensorType& x = ctx.input_type(0);
  size_t outs = kind == PoolKind::Max ? 2 : 1;
  if (!x.shape.has_rank()) return std::vector<TensorType>(outs, {x.dtype, Shape::unranked()});
  if (x.shape.rank() < 3) ctx.fail("input must have rank >= 3 (N, C, spatial...)");
  std::vector<Dim> spatial(x.shape.dims().begin() + 2, x.shape.dims().end());
  auto axes =
      window_axes(ctx, spatial, ctx.attr_ints("kernel_shape"), ctx.attr_int("ceil_mode") != 0);
  std::vector<Dim> out = {x.shape[0], x.shape[1]};
  for (const WindowAxis& a : axes) out.push_back(a.out);
  std::vector<TensorType> types = {{x.dtype, Shape(out)}};
  if (kind == PoolKind::Max) types.push_back({DType::i64, Shape(out)});
  return types;
}

OpWork pool_work(const OpContext& ctx, const std::vector<TensorType>& outs) {
  OpWork w;
  w.bytes_read = type_bytes(ctx.input_type(0));
  for (const TensorType& t : outs) w.bytes_written += type_bytes(t);
  double window = 1;
  for (int64_t k : ctx.attr_ints("kernel_shape")) window *= double(k);
  w.flops = type_numel(outs[0]) * window;
  return w;
}

std::vector<Tensor> pool_kernel(const OpContext& ctx, PoolKind kind) {
  const Tensor& x = value_of(ctx, 0);
  if (x.rank() < 3 || x.rank() > 5) unsupported(ctx, "only 1-D to 3-D pooling runs");
  std::vector<int64_t> in_sp(x.dims().begin() + 2, x.dims().end());
  auto axes = window_axes(ctx, std::vector<Dim>(in_sp.begin(), in_sp.end()),
                          ctx.attr_ints("kernel_shape"), ctx.attr_int("ceil_mode") != 0);
  auto out_sp = window_out_dims(axes);
  Window3 g = to_window3(in_sp, out_sp, axes);
  int64_t planes = x.dims()[0] * x.dims()[1], X = product(in_sp), Y = product(out_sp);
  std::vector<int64_t> out_dims = {x.dims()[0], x.dims()[1]};
  out_dims.insert(out_dims.end(), out_sp.begin(), out_sp.end());
  bool want_indices = kind == PoolKind::Max && ctx.node.outputs.size() > 1;
  bool column_major = kind == PoolKind::Max && ctx.attr_int("storage_order") != 0;
  bool include_pad = kind == PoolKind::Average && ctx.attr_int("count_include_pad") != 0;
  double p = kind == PoolKind::Lp ? double(ctx.attr_int("p")) : 0;
  const std::vector<double> xv = x.to_doubles();
  std::vector<double> yv(size_t(planes * Y));
  std::vector<int64_t> iv(want_indices ? size_t(planes * Y) : 0);
  for (int64_t pl = 0; pl < planes; ++pl) {
    const double* xp = xv.data() + pl * X;
    int64_t yi = pl * Y;
    for (int64_t oa = 0; oa < g.out[0]; ++oa)
      for (int64_t ob = 0; ob < g.out[1]; ++ob)
        for (int64_t oc = 0; oc < g.out[2]; ++oc, ++yi) {
          double acc = kind == PoolKind::Max ? -std::numeric_limits<double>::infinity() : 0;
          int64_t arg = -1, count = 0, padded_count = 0;
          for (int64_t ka = 0; ka < g.k[0]; ++ka) {
            int64_t ia = oa * g.s[0] - g.p[0] + ka * g.d[0];
            for (int64_t kb = 0; kb < g.k[1]; ++kb) {
              int64_t ib = ob * g.s[1] - g.p[1] + kb * g.d[1];
              for (int64_t kc = 0; kc < g.k[2]; ++kc) {
                int64_t ic = oc * g.s[2] - g.p[2] + kc * g.d[2];
                // Positions inside the padded input count for count_include_pad.
                if (ia < g.in[0] + g.p_end[0] && ib < g.in[1] + g.p_end[1] &&
                    ic < g.in[2] + g.p_end[2])
                  ++padded_count;
                if (ia < 0 || ia >= g.in[0] || ib < 0 || ib >= g.in[1] || ic < 0 || ic >= g.in[2])
                  continue;
                int64_t at = (ia * g.in[1] + ib) * g.in[2] + ic;
                double v = xp[at];
                ++count;
                if (kind == PoolKind::Max) {
                  if (v > acc || arg < 0) {
                    acc = v;
                    arg = column_major ? ia + g.in[0] * (ib + g.in[1] * ic) : at;
                  }
                } else if (kind == PoolKind::Average) {
                  acc += v;
                } else {
                  acc += std::pow(std::abs(v), p);
                }
              }
            }
          }
          if (kind == PoolKind::Average) {
            int64_t div = include_pad ? padded_count : count;
            acc = div > 0 ? acc / double(div) : std::numeric_limits<double>::quiet_NaN();
          } else if (kind == PoolKind::Lp) {
            acc = std::pow(acc, 1.0 / p);
          }
          yv[size_t(yi)] = acc;
          if (want_indices) iv[size_t(yi)] = arg < 0 ? 0 : pl * X + arg;
        }
  }
  std::vector<Tensor> out;
  out.push_back(Tensor::from_doubles(x.dtype(), out_dims, yv));
  if (kind == PoolKind::Max) {
    Tensor idx(DType::i64, out_dims);
    if (want_indices) std::copy(iv.begin(), iv.end(), idx.data<int64_t>().begin());
    out.push_back(std::move(idx));
  }
  return out;
}

void add_window_pools(OpTableBuilder& table) {
  for (auto [name, pool_kind] :
       {std::pair{"MaxPool", PoolKind::Max}, std::pair{"AveragePool", PoolKind::Average},
        std::pair{"LpPool", PoolKind::Lp}}) {
    PoolKind kind = pool_kind;  // a lambda may not capture a structured binding (clang 14)
    OpDef d;
    d.name = name;
    d.max_outputs = kind == PoolKind::Max ? 2 : 1;
    d.attrs = pool_attrs(kind);
    d.fusion = FusionClass::Reduction;
    d.infer = [kind](const OpContext& ctx) { return pool_infer(ctx, kind); };
    d.work = pool_work;
    d.kernel = [kind](const OpContext& ctx) { return pool_kernel(ctx, kind); };
    table.add(std::move(d));
  }
}

// ---- GlobalAveragePool, GlobalMaxPool, GlobalLpPool ---------------------------------------

void add_global_pools(OpTableBuilder& table) {
  for (auto [name, pool_kind] :
       {std::pair{"GlobalAveragePool", PoolKind::Average},
        std::pair{"GlobalMaxPool", PoolKind::Max}, std::pair{"GlobalLpPool", PoolKind::Lp}}) {
    PoolKind kind = pool_kind;  // a lambda may not capture a structured binding (clang 14)
    OpDef d;
    d.name = name;
    if (kind == PoolKind::Lp) d.attrs = {{"p", AttrKind::Int, AttrValue(int64_t{2})}};
    d.fusion = FusionClass::Reduction;
    d.infer = [](const OpContext& ctx) {
      const TensorType& x = ctx.input_type(0);
      if (!x.shape.has_rank()) return std::vector<TensorType>{{x.dtype, Shape::unranked()}};
      if (x.shape.rank() < 2) ctx.fail("input must have rank >= 2 (N, C, ...)");
      Shape s = x.shape;
      for (size_t i = 2; i < s.rank(); ++i) s[i] = Dim(1);
      return std::vector<TensorType>{{x.dtype, s}};
    };
    d.work = [](const OpContext& ctx, const std::vector<TensorType>& outs) {
      OpWork w;
      w.bytes_read = type_bytes(ctx.input_type(0));
      w.bytes_written = type_bytes(outs[0]);
      w.flops = type_numel(ctx.input_type(0));
      return w;
    };
    d.kernel = [kind](const OpContext& ctx) {
      const Tensor& x = value_of(ctx, 0);
      if (x.rank() < 2) ctx.fail("input must have rank >= 2 (N, C, ...)");
      auto dims = x.dims();
      int64_t planes = dims[0] * dims[1];
      int64_t X = planes == 0 ? 0 : x.numel() / planes;
      for (size_t i = 2; i < dims.size(); ++i) dims[i] = 1;
      double p = kind == PoolKind::Lp ? double(ctx.attr_int("p")) : 0;
      const std::vector<double> xv = x.to_doubles();
      std::vector<double> yv(static_cast<size_t>(planes));
      for (int64_t pl = 0; pl < planes; ++pl) {
        const double* xp = xv.data() + pl * X;
        double acc = kind == PoolKind::Max ? -std::numeric_limits<double>::infinity() : 0;
        for (int64_t i = 0; i < X; ++i) {
          if (kind == PoolKind::Max)
            acc = std::max(acc, xp[i]);
          else if (kind == PoolKind::Average)
            acc += xp[i];
          else
            acc += std::pow(std::abs(xp[i]), p);
        }
        if (kind == PoolKind::Average) acc /= double(X);
        if (kind == PoolKind::Lp) acc = std::pow(acc, 1.0 / p);
        yv[size_t(pl)] = acc;
      }
      return std::vector<Tensor>{Tensor::from_doubles(x.dtype(), dims, yv)};
    };
    table.add(std::move(d));
  }
}

}  // namespace

void register_pooling_ops(OpTableBuilder& table) {
  add_window_pools(table);
  add_global_pools(table);
}

}  // namespace eqfuse::ir
