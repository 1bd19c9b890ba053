#pragma once
// The sliding-window geometry that Conv, ConvTranspose and the pooling ops share: output sizes
// and the begin/end padding of each spatial axis from kernel, strides, dilations, pads,
// auto_pad (NOTSET, VALID, SAME_UPPER, SAME_LOWER) and ceil_mode, as ONNX states them. One
// place, so every windowed op agrees on the edge cases.
#include <string>
#include <vector>

#include "ir/ops/structured_common.h"

namespace eqfuse::ir::structured {

struct WindowAxis {
  Dim out;  // unknown when the input dim is symbolic
  int64_t kernel = 1, stride = 1, dilation = 1, pad_begin = 0, pad_end = 0;
};

// An int-list attribute with one entry per spatial axis, or `fallback` in each when absent.
inline std::vector<int64_t> spatial_attr(const OpContext& ctx, const char* name, size_t n,
                                         int64_t fallback) {
  if (!ctx.has_attr(name)) return std::vector<int64_t>(n, fallback);
  auto v = ctx.attr_ints(name);
  if (v.empty()) return std::vector<int64_t>(n, fallback);
  if (v.size() != n)
    ctx.fail(std::string(name) + " has " + std::to_string(v.size()) + " entries for " +
             std::to_string(n) + " spatial axes");
  return v;
}

// The pads attribute, (begin..., end...) over `n` spatial axes; zeros where it is absent or empty.
inline std::vector<int64_t> spatial_pads(const OpContext& ctx, size_t n) {
  if (!ctx.has_attr("pads") || ctx.attr_ints("pads").empty()) return std::vector<int64_t>(2 * n, 0);
  std::vector<int64_t> pads = ctx.attr_ints("pads");
  if (pads.size() != 2 * n) ctx.fail("pads must have 2 entries per spatial axis");
  return pads;
}

// Geometry of a strided window over `in` (spatial dims only) with the given kernel sizes.
inline std::vector<WindowAxis> window_axes(const OpContext& ctx, const std::vector<Dim>& in,
                                           const std::vector<int64_t>& kernel, bool ceil_mode) {
  const size_t n = in.size();
  if (kernel.size() != n)
    ctx.fail("kernel has " + std::to_string(kernel.size()) + " spatial dims, input has " +
             std::to_string(n));
  auto strides = spatial_attr(ctx, "strides", n, 1);
  auto dilations = spatial_attr(ctx, "dilations", n, 1);
  const std::vector<int64_t> pads = spatial_pads(ctx, n);
  std::string auto_pad = ctx.has_attr("auto_pad") ? ctx.attr_string("auto_pad") : "NOTSET";
  if (auto_pad != "NOTSET" && auto_pad != "VALID" && auto_pad != "SAME_UPPER" &&
      auto_pad != "SAME_LOWER")
    ctx.fail("auto_pad '" + auto_pad + "' is not known");
  std::vector<WindowAxis> axes(n);
  for (size_t i = 0; i < n; ++i) {
    WindowAxis& a = axes[i];
    a.kernel = kernel[i];
    a.stride = strides[i];
    a.dilation = dilations[i];
    if (a.kernel <= 0 || a.stride <= 0 || a.dilation <= 0)
      ctx.fail("kernel, strides and dilations must be positive");
    int64_t eff = a.dilation * (a.kernel - 1) + 1;
    if (auto_pad == "NOTSET") {
      a.pad_begin = pads[i];
      a.pad_end = pads[n + i];
    }
    if (!in[i].is_static()) {
      // A symbolic size gives a symbolic output size; the pads of SAME depend on the size,
      // which only kernels (static inputs) need.
      SymInt x = in[i].sym();
      if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
        a.out = Dim::from_sym(ceil_div(x, SymInt(a.stride)));
      } else if (!ceil_mode || a.stride == 1) {
        SymInt span = x + SymInt(a.pad_begin + a.pad_end - eff);
        a.out = Dim::from_sym(floor_div(span, SymInt(a.stride)) + SymInt(1));
      } else {
        a.out = Dim::unknown();
      }
      continue;
    }
    int64_t x = in[i].value();
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      int64_t out = (x + a.stride - 1) / a.stride;
      int64_t total = std::max<int64_t>(0, (out - 1) * a.stride + eff - x);
      a.pad_begin = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      a.pad_end = total - a.pad_begin;
      a.out = Dim(out);
      continue;
    }
    int64_t span = x + a.pad_begin + a.pad_end - eff;
    if (span < 0)
      ctx.fail("the window (" + std::to_string(eff) + ") is larger than the padded input (" +
               std::to_string(x + a.pad_begin + a.pad_end) + ")");
    int64_t out = (ceil_mode ? (span + a.stride - 1) / a.stride : span / a.stride) + 1;
    // A window that would start in the end padding is dropped (ceil_mode only).
    if (ceil_mode && (out - 1) * a.stride >= x + a.pad_begin) --out;
    a.out = Dim(out);
  }
  return axes;
}

// Output dims of all axes (for kernels, where the input is static).
inline std::vector<int64_t> window_out_dims(const std::vector<WindowAxis>& axes) {
  std::vector<int64_t> out;
  for (const WindowAxis& a : axes) out.push_back(a.out.value());
  return out;
}

// ConvTranspose's geometry: each spatial axis's output size (unknown where the input's is
// symbolic) and effective pads, from strides, dilations, output_padding, pads, auto_pad and
// output_shape, as ONNX's reference computes them.
struct TransposeGeometry {
  std::vector<Dim> out;
  std::vector<WindowAxis> axes;  // pad_begin/pad_end are the effective (cropping) pads
};

inline TransposeGeometry transpose_geometry(const OpContext& ctx, const std::vector<Dim>& in,
                                            const std::vector<int64_t>& kernel) {
  size_t n = in.size();
  if (kernel.size() != n) ctx.fail("kernel and input spatial ranks differ");
  auto strides = spatial_attr(ctx, "strides", n, 1);
  auto dilations = spatial_attr(ctx, "dilations", n, 1);
  auto out_pad = spatial_attr(ctx, "output_padding", n, 0);
  const std::vector<int64_t> pads = spatial_pads(ctx, n);
  std::string auto_pad = ctx.attr_string("auto_pad");
  std::vector<int64_t> output_shape;
  if (ctx.has_attr("output_shape")) {
    output_shape = ctx.attr_ints("output_shape");
    if (output_shape.size() > n)
      output_shape.erase(output_shape.begin(), output_shape.end() - int64_t(n));
    if (output_shape.size() != n) ctx.fail("output_shape must give every spatial dim");
  }
  TransposeGeometry t;
  for (size_t i = 0; i < n; ++i) {
    WindowAxis a;
    a.kernel = kernel[i];
    a.stride = strides[i];
    a.dilation = dilations[i];
    int64_t eff = a.dilation * (a.kernel - 1) + 1;
    if (!in[i].is_static()) {
      t.out.push_back(Dim::unknown());
      t.axes.push_back(a);
      continue;
    }
    int64_t x = in[i].value();
    int64_t full = a.stride * (x - 1) + out_pad[i] + eff;
    int64_t out = 0;
    if (!output_shape.empty() || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      out = output_shape.empty() ? x * a.stride : output_shape[i];
      // total is negative when output_shape asks for more than the full size: floor division
      // (as ONNX's reference) then puts the extra zeros at the end.
      int64_t total = full - out;
      int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
      if (auto_pad == "SAME_UPPER") {
        a.pad_begin = half;
        a.pad_end = total - half;
      } else {
        a.pad_begin = total - half;
        a.pad_end = half;
      }
    } else {
      if (auto_pad == "NOTSET") {
        a.pad_begin = pads[i];
        a.pad_end = pads[n + i];
      }
      out = full - a.pad_begin - a.pad_end;
    }
    if (out < 0) ctx.fail("output size is negative");
    t.out.push_back(Dim(out));
    t.axes.push_back(a);
  }
  return t;
}

// Spatial axes padded to three (leading axes of size 1, stride 1, no padding) so that one loop
// nest serves 1-D, 2-D and 3-D windows. `in` and `out` are the spatial sizes the window maps
// between (for ConvTranspose, its input and output).
struct Window3 {
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, k[3] = {1, 1, 1}, s[3] = {1, 1, 1},
          d[3] = {1, 1, 1}, p[3] = {0, 0, 0}, p_end[3] = {0, 0, 0};
};

inline Window3 to_window3(const std::vector<int64_t>& in, const std::vector<int64_t>& out,
                          const std::vector<WindowAxis>& axes) {
  Window3 g;
  size_t off = 3 - in.size();
  for (size_t i = 0; i < in.size(); ++i) {
    g.in[off + i] = in[i];
    g.out[off + i] = out[i];
    g.k[off + i] = axes[i].kernel;
    g.s[off + i] = axes[i].stride;
    g.d[off + i] = axes[i].dilation;
    g.p[off + i] = axes[i].pad_begin;
    g.p_end[off + i] = axes[i].pad_end;
  }
  return g;
}

}  // namespace eqfuse::ir::structured
