// Op group "normalization": BatchNormalization (inference mode), LayerNormalization (with its
// optional Mean and InvStdDev outputs) and InstanceNormalization. Statistics are computed in
// double. BatchNormalization is (x - mean) / sqrt(var + eps) * scale + bias with the per-channel
// vectors indexed by dim 1; it carries no ScalarExpr because that form assumes numpy
// broadcasting of every input (the optimizer rewrites it into Mul/Add of reshaped vectors).
#include <fmt/format.h>

#include <cmath>

#include "ir/broadcast.h"
#include "ir/op_table.h"

namespace eqfuse::ir {

namespace {

void check_channel_vector(const OpContext& ctx, size_t input, const Dim& channels) {
  const TensorType& t = ctx.input_type(input);
  if (!t.shape.has_rank()) return;
  if (t.shape.rank() != 1) {
    ctx.fail(fmt::format("input {} should be a vector of {} channels, got {}", input,
                         channels.str(), t.shape.str()));
  }
  if (channels.is_static() && t.shape[0].is_static() && t.shape[0].value() != channels.value()) {
    ctx.fail(fmt::format("input {} has {} entries for {} channels", input, t.shape[0].value(),
                         channels.value()));
  }
}

// ---- BatchNormalization ----

std::vector<TensorType> infer_batchnorm(const OpContext& ctx) {
  const TensorType& x = ctx.input_type(0);
  if (!is_floating(x.dtype)) ctx.fail(fmt::format("does not take {} inputs", dtype_name(x.dtype)));
  if (ctx.attr_int("training_mode") != 0 || ctx.node.outputs.size() > 1) {
    throw Error(ctx.label() + ": training mode (running statistics outputs) is not supported",
                Error::Kind::Unsupported);
  }
  if (x.shape.has_rank()) {
    if (x.shape.rank() < 2) ctx.fail("input must have a channel dim (rank >= 2)");
    for (size_t i = 1; i < 5; ++i) check_channel_vector(ctx, i, x.shape[1]);
  }
  return {x};
}

OpWork work_per_element(const OpContext& ctx, const std::vector<TensorType>& outs, double flops) {
  OpWork w;
  w.flops = flops * element_count(ctx.input_type(0));
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (ctx.has_input(i)) w.bytes_read += byte_count(ctx.input_type(i));
  }
  for (const TensorType& t : outs) w.bytes_written += byte_count(t);
  return w;
}

std::vector<Tensor> kernel_batchnorm(const OpContext& ctx) {
  infer_batchnorm(ctx);
  const Tensor& x = *ctx.input_value(0);
  int64_t n = x.dims()[0], c = x.dims()[1];
  int64_t plane = x.numel() / std::max<int64_t>(1, n * c);
  double eps = ctx.attr_float("epsilon");
  std::vector<double> scale = ctx.input_value(1)->to_doubles(),
                      bias = ctx.input_value(2)->to_doubles(),
                      mean = ctx.input_value(3)->to_doubles(),
                      var = ctx.input_value(4)->to_doubles();
  for (const auto* v : {&scale, &bias, &mean, &var}) {
    if (static_cast<int64_t>(v->size()) != c) ctx.fail("channel vectors do not match the input");
  }
  Tensor out(x.dtype(), x.dims());
  for (int64_t ci = 0; ci < c; ++ci) {
    double a = scale[size_t(ci)] / std::sqrt(var[size_t(ci)] + eps);
    double b = bias[size_t(ci)] - mean[size_t(ci)] * a;
    for (int64_t ni = 0; ni < n; ++ni) {
      int64_t base = (ni * c + ci) * plane;
      if (x.dtype() == DType::f32) {
        const float* src = x.data<float>().data() + base;
        float* dst = out.data<float>().data() + base;
        for (int64_t i = 0; i < plane; ++i) dst[i] = static_cast<float>(src[i] * a + b);
      } else {
        for (int64_t i = 0; i < plane; ++i) out.set(base + i, x.get(base + i) * a + b);
      }
    }
  }
  return {out};
}

// ---- LayerNormalization ----

std::vector<TensorType> infer_layernorm(const OpContext& ctx) {
  const TensorType& x = ctx.input_type(0);
  if (!is_floating(x.dtype)) ctx.fail(fmt::format("does not take {} inputs", dtype_name(x.dtype)));
  DType stash = ctx.attr_int("stash_type") == 11 ? DType::f64 : DType::f32;
  if (!x.shape.has_rank()) {
    return {x, TensorType{stash, Shape::unranked()}, TensorType{stash, Shape::unranked()}};
  }
  auto rank = static_cast<int64_t>(x.shape.rank());
  int64_t axis = 0;
  try {
    axis = normalize_axis(ctx.attr_int("axis"), rank);
  } catch (const Error& e) {
    ctx.fail(e.what());
  }
  Shape norm(std::vector<Dim>(x.shape.dims().begin() + axis, x.shape.dims().end()));
  for (size_t i = 1; i < 3; ++i) {
    if (!ctx.has_input(i)) continue;
    try {
      if (broadcast_shapes(norm, ctx.input_type(i).shape) != norm) throw Error("");
    } catch (const Error&) {
      ctx.fail(fmt::format("input {} {} does not broadcast to the normalized dims {}", i,
                           ctx.input_type(i).shape.str(), norm.str()));
    }
  }
  std::vector<Dim> stat = x.shape.dims();
  for (int64_t d = axis; d < rank; ++d) stat[size_t(d)] = Dim(1);
  return {x, TensorType{stash, Shape(stat)}, TensorType{stash, Shape(stat)}};
}

std::vector<Tensor> kernel_layernorm(const OpContext& ctx) {
  std::vector<TensorType> types = infer_layernorm(ctx);
  const Tensor& x = *ctx.input_value(0);
  auto rank = static_cast<int64_t>(x.rank());
  int64_t axis = normalize_axis(ctx.attr_int("axis"), rank);
  std::vector<int64_t> norm_dims(x.dims().begin() + axis, x.dims().end());
  int64_t len = product(norm_dims), rows = len == 0 ? 0 : x.numel() / len;
  double eps = ctx.attr_float("epsilon");
  // Scale and bias broadcast over the normalized dims: expand them once.
  auto expand = [&](size_t input, double fill) {
    std::vector<double> v(static_cast<size_t>(len), fill);
    const Tensor* t = ctx.input_value(input);
    if (!t) return v;
    IndexIterator it(norm_dims);
    size_t s = it.add_strides(broadcast_strides(t->dims(), norm_dims));
    for (int64_t i = 0; i < len; ++i, it.next()) v[size_t(i)] = t->get(it.offset(s));
    return v;
  };
  std::vector<double> scale = expand(1, 1.0), bias = expand(2, 0.0);
  std::vector<double> xs = x.to_doubles(), ys(xs.size());
  std::vector<int64_t> stat_dims = x.dims();
  for (int64_t d = axis; d < rank; ++d) stat_dims[size_t(d)] = 1;
  Tensor mean_t(types[1].dtype, stat_dims), inv_t(types[2].dtype, stat_dims);
  for (int64_t r = 0; r < rows; ++r) {
    const double* row = xs.data() + r * len;
    double mean = 0;
    for (int64_t i = 0; i < len; ++i) mean += row[i];
    mean /= static_cast<double>(len);
    double var = 0;
    for (int64_t i = 0; i < len; ++i) var += (row[i] - mean) * (row[i] - mean);
    var /= static_cast<double>(len);
    double inv = 1.0 / std::sqrt(var + eps);
    for (int64_t i = 0; i < len; ++i) {
      ys[size_t(r * len + i)] = (row[i] - mean) * inv * scale[size_t(i)] + bias[size_t(i)];
    }
    mean_t.set(r, mean);
    inv_t.set(r, inv);
  }
  return {Tensor::from_doubles(x.dtype(), x.dims(), ys), mean_t, inv_t};
}

// ---- InstanceNormalization ----

std::vector<TensorType> infer_instancenorm(const OpContext& ctx) {
  const TensorType& x = ctx.input_type(0);
  if (!is_floating(x.dtype)) ctx.fail(fmt::format("does not take {} inputs", dtype_name(x.dtype)));
  if (x.shape.has_rank()) {
    if (x.shape.rank() < 3) ctx.fail("input must be N x C x D1 ...");
    for (size_t i = 1; i < 3; ++i) check_channel_vector(ctx, i, x.shape[1]);
  }
  return {x};
}

std::vector<Tensor> kernel_instancenorm(const OpContext& ctx) {
  infer_instancenorm(ctx);
  const Tensor& x = *ctx.input_value(0);
  int64_t n = x.dims()[0], c = x.dims()[1];
  int64_t plane = x.numel() / std::max<int64_t>(1, n * c);
  double eps = ctx.attr_float("epsilon");
  std::vector<double> scale = ctx.input_value(1)->to_doubles(),
                      bias = ctx.input_value(2)->to_doubles();
  std::vector<double> xs = x.to_doubles(), ys(xs.size());
  for (int64_t p = 0; p < n * c; ++p) {
    int64_t ci = p % c;
    const double* v = xs.data() + p * plane;
    double mean = 0, var = 0;
    for (int64_t i = 0; i < plane; ++i) mean += v[i];
    mean /= static_cast<double>(plane);
    for (int64_t i = 0; i < plane; ++i) var += (v[i] - mean) * (v[i] - mean);
    var /= static_cast<double>(plane);
    double a = scale[size_t(ci)] / std::sqrt(var + eps);
    for (int64_t i = 0; i < plane; ++i)
      ys[size_t(p * plane + i)] = (v[i] - mean) * a + bias[size_t(ci)];
  }
  return {Tensor::from_doubles(x.dtype(), x.dims(), ys)};
}

}  // namespace

void register_normalization_ops(OpTableBuilder& table) {
  OpDef bn;
  bn.name = "BatchNormalization";
  bn.min_inputs = bn.max_inputs = 5;
  bn.max_outputs = 3;
  bn.attrs = {{"epsilon", AttrKind::Float, AttrValue{1e-5}},
              {"momentum", AttrKind::Float, AttrValue{0.9}},
              {"training_mode", AttrKind::Int, AttrValue{int64_t{0}}}};
  bn.fusion = FusionClass::Broadcast;
  bn.infer = infer_batchnorm;
  bn.work = [](const OpContext& ctx, const std::vector<TensorType>& outs) {
    return work_per_element(ctx, outs, 2);  // folded to one multiply-add per element
  };
  bn.kernel = kernel_batchnorm;
  table.add(std::move(bn));

  OpDef ln;
  ln.name = "LayerNormalization";
  ln.min_inputs = 2;
  ln.max_inputs = 3;
  ln.max_outputs = 3;
  ln.attrs = {{"axis", AttrKind::Int, AttrValue{int64_t{-1}}},
              {"epsilon", AttrKind::Float, AttrValue{1e-5}},
              {"stash_type", AttrKind::Int, AttrValue{int64_t{1}}}};
  ln.fusion = FusionClass::Reduction;
  ln.infer = infer_layernorm;
  ln.work = [](const OpContext& ctx, const std::vector<TensorType>& outs) {
    return work_per_element(ctx, outs, 8);
  };
  ln.kernel = kernel_layernorm;
  table.add(std::move(ln));

  OpDef in;
  in.name = "InstanceNormalization";
  in.min_inputs = in.max_inputs = 3;
  in.attrs = {{"epsilon", AttrKind::Float, AttrValue{1e-5}}};
  in.fusion = FusionClass::Reduction;
  in.infer = infer_instancenorm;
  in.work = [](const OpContext& ctx, const std::vector<TensorType>& outs) {
    return work_per_element(ctx, outs, 7);
  };
  in.kernel = kernel_instancenorm;
  table.add(std::move(in));
}

}  // namespace eqfuse::ir
