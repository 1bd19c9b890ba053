// Op group "resize": Resize (opsets 10-19: nearest, linear and cubic modes, every
// coordinate_transformation_mode, scales or sizes, axes, keep_aspect_ratio_policy) and the older
// Upsample. Opaque to the prover: the kernel is the reference. Each output coordinate along an
// axis reads a few input positions ("taps") with weights; the n-D result is the separable
// product of the per-axis taps, which is what ONNX's reference computes axis by axis.
#include <algorithm>
#include <cmath>

#include "ir/ops/structured_common.h"
#include "ir/resize.h"

namespace eqfuse::ir {

using namespace structured;

namespace {

bool legacy_form(const OpContext& ctx) {
  // Upsample, and Resize of opset 10 (inputs X, scales), scale by asymmetric coordinates.
  return ctx.node.op_type == "Upsample" || ctx.num_inputs() == 2;
}

std::optional<std::vector<double>> float_input(const OpContext& ctx, size_t i) {
  if (!ctx.has_input(i)) return std::nullopt;
  const Tensor* t = ctx.input_value(i);
  if (!t) return std::nullopt;
  if (t->numel() == 0) return std::nullopt;  // an empty tensor stands for "not given"
  return t->to_doubles();
}

struct Tap {
  int64_t index;
  double weight;
};

// Taps for every output coordinate of one axis; an empty list marks a point outside the
// crop (tf_crop_and_resize), which takes extrapolation_value.
std::vector<std::vector<Tap>> axis_taps(const OpContext& ctx, int64_t in, int64_t out, double scale,
                                        double roi_start, double roi_end) {
  const auto [mode, ctm, nearest] = resize_modes(ctx);
  bool exclude = ctx.attr_int("exclude_outside") != 0;
  double A = ctx.attr_float("cubic_coeff_a");
  auto clamp = [in](int64_t i) { return std::clamp<int64_t>(i, 0, in - 1); };
  std::vector<std::vector<Tap>> taps(static_cast<size_t>(out));
  for (int64_t o = 0; o < out; ++o) {
    std::vector<Tap>& t = taps[size_t(o)];
    if (in == out && scale == 1.0 && ctm != "tf_crop_and_resize") {
      t.push_back({o, 1.0});
      continue;
    }
    double x = source_coordinate(ctm, double(o), scale, in, out, roi_start, roi_end);
    if (ctm == "tf_crop_and_resize" && (x < 0 || x > double(in - 1))) continue;
    if (mode == "nearest") {
      double r;
      if (nearest == "round_prefer_ceil")
        r = std::floor(x + 0.5);
      else if (nearest == "floor")
        r = std::floor(x);
      else if (nearest == "ceil")
        r = std::ceil(x);
      else if (nearest == "round_prefer_floor")
        r = std::ceil(x - 0.5);
      else
        unsupported(ctx, "nearest_mode '" + nearest + "' is not known");
      t.push_back({clamp(int64_t(r)), 1.0});
    } else if (mode == "linear") {
      double f = std::floor(x);
      double w = x - f;
      t.push_back({clamp(int64_t(f)), 1 - w});
      t.push_back({clamp(int64_t(f) + 1), w});
    } else if (mode == "cubic") {
      double f = std::floor(x);
      auto w = cubic_weights(x - f, A);
      double sum = 0;
      for (int64_t k = 0; k < 4; ++k) {
        int64_t i = int64_t(f) - 1 + k;
        double wk = w[size_t(k)];
        if (exclude && (i < 0 || i >= in)) wk = 0;
        sum += wk;
        t.push_back({clamp(i), wk});
      }
      if (exclude && sum != 0)
        for (Tap& tap : t) tap.weight /= sum;
    } else {
      unsupported(ctx, "mode '" + mode + "' is not supported");
    }
  }
  return taps;
}

std::vector<AttrSpec> resize_attrs() {
  return {
      {"antialias", AttrKind::Int, AttrValue(int64_t{0})},
      {"axes", AttrKind::Ints, std::nullopt},
      {"coordinate_transformation_mode", AttrKind::String, AttrValue(std::string("half_pixel"))},
      {"cubic_coeff_a", AttrKind::Float, AttrValue(-0.75)},
      {"exclude_outside", AttrKind::Int, AttrValue(int64_t{0})},
      {"extrapolation_value", AttrKind::Float, AttrValue(0.0)},
      {"keep_aspect_ratio_policy", AttrKind::String, AttrValue(std::string("stretch"))},
      {"mode", AttrKind::String, AttrValue(std::string("nearest"))},
      {"nearest_mode", AttrKind::String, AttrValue(std::string("round_prefer_floor"))},
      {"scales", AttrKind::Floats, std::nullopt}};
}

std::vector<TensorType> resize_infer(const OpContext& ctx) {
  const TensorType& x = ctx.input_type(0);
  if (!x.shape.has_rank()) return {{x.dtype, Shape::unranked()}};
  auto spec = resize_spec(ctx, x.shape);
  if (!spec) return {{x.dtype, unknown_dims(x.shape.rank())}};
  std::vector<Dim> out;
  for (size_t i = 0; i < x.shape.rank(); ++i) {
    if (!x.shape[i].is_static() && spec->scales[i] == 1.0 && spec->out[i] < 0)
      out.push_back(x.shape[i]);
    else
      out.push_back(spec->out[i] >= 0 ? Dim(spec->out[i]) : Dim::unknown());
  }
  return {{x.dtype, Shape(out)}};
}

std::vector<Tensor> resize_kernel(const OpContext& ctx) {
  const Tensor& x = value_of(ctx, 0);
  if (ctx.attr_int("antialias") != 0) unsupported(ctx, "antialias is not supported");
  auto spec = resize_spec(ctx, x.type().shape);
  if (!spec) ctx.fail("needs constant scales or sizes");
  size_t r = x.rank();
  std::vector<std::vector<std::vector<Tap>>> taps(r);
  for (size_t a = 0; a < r; ++a)
    taps[a] =
        axis_taps(ctx, x.dims()[a], spec->out[a], spec->scales[a], spec->roi[a], spec->roi[r + a]);
  Tensor y(x.dtype(), spec->out);
  const std::vector<double> xv = x.to_doubles();
  std::vector<double> yv(size_t(y.numel()));
  double extrapolation = ctx.attr_float("extrapolation_value");
  auto st = strides_of(x.dims());
  std::vector<int64_t> idx(r, 0);
  for (int64_t i = 0; i < y.numel(); ++i) {
    // Sum over the product of the taps of every axis, walked as an odometer.
    bool outside = false;
    for (size_t a = 0; a < r; ++a) outside |= taps[a][size_t(idx[a])].empty();
    double acc = 0;
    if (outside) {
      acc = extrapolation;
    } else {
      std::vector<size_t> k(r, 0);
      while (true) {
        double w = 1;
        int64_t off = 0;
        for (size_t a = 0; a < r; ++a) {
          const Tap& t = taps[a][size_t(idx[a])][k[a]];
          w *= t.weight;
          off += t.index * st[a];
        }
        acc += w * xv[size_t(off)];
        size_t a = r;
        while (a-- > 0) {
          if (++k[a] < taps[a][size_t(idx[a])].size()) break;
          k[a] = 0;
        }
        if (a == size_t(-1)) break;
      }
    }
    yv[size_t(i)] = acc;
    for (size_t a = r; a-- > 0;) {
      if (++idx[a] < spec->out[a]) break;
      idx[a] = 0;
    }
  }
  if (is_integral(x.dtype()))
    for (double& v : yv) v = std::nearbyint(v);
  return {Tensor::from_doubles(x.dtype(), spec->out, yv)};
}

}  // namespace

std::optional<ResizeSpec> resize_spec(const OpContext& ctx, const Shape& in) {
  size_t r = in.rank();
  ResizeSpec s;
  s.scales.assign(r, 1.0);
  s.roi.assign(2 * r, 0.0);
  for (size_t i = 0; i < r; ++i) s.roi[r + i] = 1.0;
  std::vector<int64_t> axes(r);
  for (size_t i = 0; i < r; ++i) axes[i] = int64_t(i);
  if (ctx.has_attr("axes")) {
    axes = ctx.attr_ints("axes");
    for (int64_t& a : axes) a = axis_in(ctx, a, int64_t(r));
  }
  std::optional<std::vector<double>> scales, sizes;
  if (ctx.node.op_type == "Upsample" && ctx.has_attr("scales")) {
    scales = ctx.attr_floats("scales");
  } else if (legacy_form(ctx)) {
    scales = float_input(ctx, 1);
    if (!scales) return std::nullopt;
  } else {
    if (auto roi = float_input(ctx, 1)) {
      if (roi->size() != 2 * axes.size()) ctx.fail("roi must have 2 entries per axis");
      for (size_t i = 0; i < axes.size(); ++i) {
        s.roi[size_t(axes[i])] = (*roi)[i];
        s.roi[r + size_t(axes[i])] = (*roi)[axes.size() + i];
      }
    }
    scales = float_input(ctx, 2);
    sizes = float_input(ctx, 3);
    if (!scales && !sizes) {
      if ((ctx.has_input(2) && !ctx.input_value(2)) || (ctx.has_input(3) && !ctx.input_value(3)))
        return std::nullopt;
      ctx.fail("needs scales or sizes");
    }
  }
  auto& given = scales ? *scales : *sizes;
  if (given.size() != axes.size())
    ctx.fail((scales ? "scales" : "sizes") + std::string(" must have one entry per axis"));
  bool crop = ctx.attr_string("coordinate_transformation_mode") == "tf_crop_and_resize";
  s.out.assign(r, -1);
  for (size_t i = 0; i < r; ++i)
    if (in[i].is_static()) s.out[i] = in[i].value();
  if (scales) {
    for (size_t i = 0; i < axes.size(); ++i) {
      size_t a = size_t(axes[i]);
      double sc = (*scales)[i];
      if (sc <= 0) ctx.fail("scales must be positive");
      s.scales[a] = sc;
      double extent = crop ? s.roi[r + a] - s.roi[a] : 1.0;
      if (in[a].is_static())
        s.out[a] = int64_t(std::floor(double(in[a].value()) * extent * sc));
      else if (sc != 1.0)
        s.out[a] = -1;
    }
    return s;
  }
  std::string policy = ctx.attr_string("keep_aspect_ratio_policy");
  for (size_t i = 0; i < axes.size(); ++i) {
    size_t a = size_t(axes[i]);
    s.out[a] = int64_t((*sizes)[i]);
    if (in[a].is_static()) s.scales[a] = double(s.out[a]) / double(in[a].value());
  }
  if (policy != "stretch") {
    double common = policy == "not_larger" ? 1e300 : 0;
    for (int64_t a : axes) {
      if (!in[size_t(a)].is_static()) return std::nullopt;
      common = policy == "not_larger" ? std::min(common, s.scales[size_t(a)])
                                      : std::max(common, s.scales[size_t(a)]);
    }
    for (int64_t a : axes) {
      s.scales[size_t(a)] = common;
      s.out[size_t(a)] = int64_t(std::floor(common * double(in[size_t(a)].value()) + 0.5));
    }
  }
  return s;
}

ResizeModes resize_modes(const OpContext& ctx) {
  ResizeModes m{ctx.attr_string("mode"), ctx.attr_string("coordinate_transformation_mode"),
                ctx.attr_string("nearest_mode")};
  if (legacy_form(ctx) && !ctx.has_attr("coordinate_transformation_mode"))
    m.coordinates = "asymmetric";
  if (legacy_form(ctx) && !ctx.has_attr("nearest_mode")) m.nearest = "floor";
  if (m.mode == "bilinear" || m.mode == "trilinear") m.mode = "linear";
  return m;
}

std::array<double, 4> cubic_weights(double t, double a) {
  const double u = 1 - t;
  return {((a * (t + 1) - 5 * a) * (t + 1) + 8 * a) * (t + 1) - 4 * a,
          ((a + 2) * t - (a + 3)) * t * t + 1, ((a + 2) * u - (a + 3)) * u * u + 1,
          ((a * (u + 1) - 5 * a) * (u + 1) + 8 * a) * (u + 1) - 4 * a};
}

double source_coordinate(const std::string& mode, double x, double scale, int64_t in, int64_t out,
                         double roi_start, double roi_end) {
  double length = scale * double(in);
  if (mode == "half_pixel") return (x + 0.5) / scale - 0.5;
  if (mode == "half_pixel_symmetric") {
    double adjustment = double(out) / length;
    double center = double(in) / 2;
    double offset = center * (1 - adjustment);
    return offset + (x + 0.5) / scale - 0.5;
  }
  if (mode == "pytorch_half_pixel") return length > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
  if (mode == "align_corners") return length == 1 ? 0.0 : x * double(in - 1) / (length - 1);
  if (mode == "asymmetric") return x / scale;
  if (mode == "tf_half_pixel_for_nn") return (x + 0.5) / scale;
  // tf_crop_and_resize
  if (length > 1)
    return roi_start * double(in - 1) + x * (roi_end - roi_start) * double(in - 1) / (length - 1);
  return 0.5 * (roi_start + roi_end) * double(in - 1);
}

void register_resize_ops(OpTableBuilder& table) {
  for (const char* name : {"Resize", "Upsample"}) {
    OpDef d;
    d.name = name;
    d.min_inputs = 1;
    d.max_inputs = std::string(name) == "Resize" ? 4 : 2;
    d.attrs = resize_attrs();
    d.fusion = FusionClass::Opaque;
    d.infer = resize_infer;
    d.work = [](const OpContext& ctx, const std::vector<TensorType>& outs) {
      OpWork w = move_work(ctx, outs);
      std::string mode = ctx.attr_string("mode");
      double taps = mode == "nearest" ? 0 : mode == "cubic" ? 8 : 4;
      w.flops = type_numel(outs[0]) * taps;
      return w;
    };
    d.kernel = resize_kernel;
    table.add(std::move(d));
  }
}

}  // namespace eqfuse::ir
