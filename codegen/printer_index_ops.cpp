// The printer's ops that read their inputs at computed places, element by element:
// BatchNormalization (its statistics at the element's channel), Trilu, Tile, DepthToSpace,
// SpaceToDepth, GatherElements, GatherND, Pad, OneHot and Resize (nearest, linear and cubic), and
// the ops that make their elements from their index (ConstantOfShape, EyeLike, Range)
// (printer_writer.h). Each one's output element is an expression of loads, like the layout ops in
// printer.cpp, so a kernel computes them where they are used and they fuse with their neighbours.
#include "codegen/printer_writer.h"
#include "ir/pad.h"
#include "ir/resize.h"

namespace eqfuse::codegen::detail {

namespace {

// `v`, an element of dtype `t`, in the compute type `ct`.
std::string as_compute(const std::string& v, DType t, const std::string& ct) {
  return storage_type(t) == ct ? v : "(" + ct + ")" + v;
}

[[noreturn]] void unsupported(const ir::Node& n, const std::string& why) {
  throw Error(fmt::format("codegen: {} '{}': {}", n.op_type, n.name, why),
              Error::Kind::Unsupported);
}

int64_t axis_of(const ir::OpContext& ctx, const ir::Node& n, size_t rank) {
  int64_t a = ctx.attr_int("axis");
  if (a < 0) a += int64_t(rank);
  if (a < 0 || a >= int64_t(rank)) unsupported(n, "axis out of range");
  return a;
}

std::string paren(const std::string& e) {
  return "(" + e + ")";
}

}  // namespace

std::string Writer::value_in(ValueId out, const std::string& ct, const std::string& expr) {
  const std::string st = storage_type(type(out).dtype), var = fresh("t");
  if (st == ct)
    line(fmt::format("const {} {} = {};", st, var, expr));
  else
    line(fmt::format("const {} {} = eqf_store<{}, {}>({});", st, var, st, ct, expr));
  return var;
}

std::string Writer::batch_norm(const ir::Node& n, const Index& idx) {
  ir::OpContext ctx = ir::make_context(g_, n);
  if (ctx.attr_int("training_mode") != 0) unsupported(n, "training mode is not generated");
  const ValueId x = n.inputs[0], out = n.outputs[0];
  const std::string ct = compute_type({type(out).dtype});
  const Index channel = {rank(x) > 1 ? idx[1] : std::string("0")};
  auto at = [&](size_t k) {
    return as_compute(elem(n.inputs.at(k), channel), type(n.inputs[k]).dtype, ct);
  };
  // (x - mean) * (scale / sqrt(var + epsilon)) + bias in the compute type (the interpreter folds
  // the same in double: within the twin's tolerance).
  const std::string scale =
      fmt::format("{} / eqf_sqrt({} + {})", at(1), at(4), literal(ctx.attr_float("epsilon"), ct));
  return value_in(out, ct,
                  fmt::format("({} - {}) * ({}) + {}", as_compute(elem(x, idx), type(x).dtype, ct),
                              at(3), scale, at(2)));
}

std::string Writer::trilu(const ir::Node& n, const Index& idx) {
  ir::OpContext ctx = ir::make_context(g_, n);
  const ValueId x = n.inputs[0], out = n.outputs[0];
  const size_t r = rank(x);
  if (r < 2) unsupported(n, "its input has rank under 2");
  std::string k = "0";  // the diagonal: a constant, or read where the model computes it
  if (n.inputs.size() > 1 && n.inputs[1] != ir::kNoValue) {
    const ValueId kv = n.inputs[1];
    const auto t = g_.value(kv).is_weight() ? g_.weight_data(kv) : nullptr;
    k = t && t->numel() == 1 ? int_literal(t->to_int64s()[0])
                             : "(int64_t)" + elem(kv, Index(rank(kv), "0"));
  }
  // Upper keeps the elements on or above diagonal k (column - row >= k), lower on or below.
  const std::string diagonal = fmt::format("{} - {}", idx[r - 1], idx[r - 2]);
  const std::string keep = ctx.attr_int("upper") != 0 ? fmt::format("{} >= {}", diagonal, k)
                                                      : fmt::format("{} <= {}", diagonal, k);
  const std::string st = storage_type(type(out).dtype), v = elem(x, idx), var = fresh("t");
  // Both arms in the storage type: a CUDA group load of a 16-bit buffer is a float.
  line(fmt::format("const {} {} = ({}) ? ({})({}) : ({})0;", st, var, keep, st, v, st));
  return var;
}

std::string Writer::tile(const ir::Node& n, const Index& idx) {
  const ValueId x = n.inputs[0];
  Index in(rank(x));
  for (size_t k = 0; k < in.size(); ++k)
    in[k] = dim_is_one(x, k) ? "0" : fmt::format("({} % {})", idx[k], dim(x, k));
  return elem(x, in);
}

std::string Writer::depth_space(const ir::Node& n, const Index& idx) {
  ir::OpContext ctx = ir::make_context(g_, n);
  const ValueId x = n.inputs[0], out = n.outputs[0];
  if (rank(x) != 4) unsupported(n, "its input is not 4-D");
  const std::string b = std::to_string(ctx.attr_int("blocksize"));
  Index in(4);
  in[0] = idx[0];
  if (n.op_type == "DepthToSpace") {
    // out[n, c, h*b + i, w*b + j] = x[n, (i*b + j)*C' + c, h, w] (DCR; CRD: c*b*b + i*b + j).
    const std::string i = fmt::format("({} % {})", idx[2], b),
                      j = fmt::format("({} % {})", idx[3], b);
    in[1] = ctx.attr_string("mode") == "CRD"
                ? fmt::format("({} * {} * {} + {} * {} + {})", idx[1], b, b, i, b, j)
                : fmt::format("(({} * {} + {}) * {} + {})", i, b, j, dim(out, 1), idx[1]);
    in[2] = fmt::format("({} / {})", idx[2], b);
    in[3] = fmt::format("({} / {})", idx[3], b);
  } else {
    // out[n, (i*b + j)*C + c, h, w] = x[n, c, h*b + i, w*b + j].
    const std::string block = fmt::format("({} / {})", idx[1], dim(x, 1));
    in[1] = fmt::format("({} % {})", idx[1], dim(x, 1));
    in[2] = fmt::format("({} * {} + {} / {})", idx[2], b, block, b);
    in[3] = fmt::format("({} * {} + {} % {})", idx[3], b, block, b);
  }
  return elem(x, in);
}

std::string Writer::gather_elements(const ir::Node& n, const Index& idx) {
  ir::OpContext ctx = ir::make_context(g_, n);
  const ValueId data = n.inputs[0], indices = n.inputs[1];
  const size_t a = size_t(axis_of(ctx, n, rank(data)));
  const std::string raw = elem(indices, idx), g = fresh("g");
  line(fmt::format("const int64_t {} = (int64_t){} < 0 ? (int64_t){} + {} : (int64_t){};", g, raw,
                   raw, dim(data, a), raw));
  Index in = idx;
  in[a] = g;
  return elem(data, in);
}

std::string Writer::gather_nd(const ir::Node& n, const Index& idx) {
  // out[i..., j...] = data[batch..., indices[i..., 0..m), j...]: the output's leading coordinates
  // are those of a row of `indices` (its batch_dims first, which address data's too), and its
  // row's m entries are data's next coordinates.
  const ValueId data = n.inputs[0], indices = n.inputs[1];
  const ir::Shape& is = type(indices).shape;
  const size_t q = is.rank(), b = size_t(ir::make_context(g_, n).attr_int("batch_dims"));
  if (q == 0 || !is[q - 1].is_static()) unsupported(n, "the last dim of indices must be static");
  const size_t m = size_t(is[q - 1].value());
  Index row(idx.begin(), idx.begin() + int64_t(q - 1));
  row.push_back("");
  Index in(idx.begin(), idx.begin() + int64_t(b));
  for (size_t k = 0; k < m; ++k) {
    row.back() = std::to_string(k);
    const std::string raw = elem(indices, row), g = fresh("g");
    line(fmt::format("const int64_t {} = (int64_t){} < 0 ? (int64_t){} + {} : (int64_t){};", g, raw,
                     raw, dim(data, b + k), raw));
    in.push_back(g);
  }
  in.insert(in.end(), idx.begin() + int64_t(q - 1), idx.end());
  return elem(data, in);
}

std::string Writer::pad(const ir::Node& n, const Index& idx) {
  ir::OpContext ctx = ir::make_context(g_, n);
  const ValueId x = n.inputs[0], out = n.outputs[0];
  const size_t r = rank(x);
  const auto pads = ir::pad_amounts(ctx, r);
  if (!pads) unsupported(n, "its pads and axes must be constants");
  const std::string mode = ctx.attr_string("mode");
  const int mode_code = mode == "edge" ? 1 : mode == "wrap" ? 2 : mode == "reflect" ? 3 : 0;
  if (mode != "constant" && mode_code == 0) unsupported(n, "mode '" + mode + "'");
  // Along each padded axis the input coordinate is the output's less the front pad; out of the
  // input, the constant mode takes the pad value and the others read another element
  // (eqf_pad_source: ir::pad_source's rule).
  Index in = idx;
  std::vector<std::string> inside;
  for (size_t k = 0; k < r; ++k) {
    const int64_t begin = (*pads)[k], end = (*pads)[r + k];
    if (begin == 0 && end == 0) continue;
    const std::string c = paren(fmt::format("{} - {}", idx[k], begin));
    if (mode_code == 0) {
      if (begin > 0) inside.push_back(fmt::format("{} >= 0", c));
      if (end > 0) inside.push_back(fmt::format("{} < {}", c, dim(x, k)));
      in[k] = c;
    } else {
      in[k] = fmt::format("eqf_pad_source({}, {}, {})", c, dim(x, k), mode_code);
    }
  }
  if (inside.empty()) return elem(x, in);
  const std::string st = storage_type(type(out).dtype), var = fresh("t");
  std::string fill = fmt::format("({})0", st);
  const auto no_elements = [&](ValueId v) {  // an empty constant_value stands for 0
    const std::optional<int64_t> count = type(v).shape.numel();
    return count && *count == 0;
  };
  if (n.inputs.size() > 2 && n.inputs[2] != ir::kNoValue && !no_elements(n.inputs[2])) {
    const ValueId v = n.inputs[2];
    fill = elem(v, Index(rank(v), "0"));
  } else if (ctx.has_attr("value")) {
    fill = fmt::format("({}){}", st,
                       literal(ctx.attr_float("value"), compute_type({type(out).dtype})));
  }
  line(fmt::format("{} {} = {};", st, var, fill));
  std::string all;
  for (const std::string& cond : inside) all += (all.empty() ? "" : " && ") + cond;
  open(fmt::format("if ({})", all));
  line(fmt::format("{} = {};", var, elem(x, in)));
  close();
  return var;
}

std::string Writer::generated(const ir::Node& n, const Index& idx) {
  ir::OpContext ctx = ir::make_context(g_, n);
  const ValueId out = n.outputs[0];
  const std::string ct = compute_type({type(out).dtype});
  if (n.op_type == "ConstantOfShape") {
    const ir::Tensor* v = n.attrs.get_tensor("value");
    if (v && v->numel() == 1 && !ir::is_floating(v->dtype()))  // exact past 2^53
      return value_in(out, ct, int_literal(v->to_int64s()[0]));
    return value_in(out, ct, literal(v && v->numel() == 1 ? v->get(0) : 0.0, ct));
  }
  if (n.op_type == "EyeLike") {
    const std::string one =
        fmt::format("{} - {} == {}", idx[1], idx[0], int_literal(ctx.attr_int("k")));
    return value_in(out, ct, fmt::format("({}) ? {} : {}", one, literal(1, ct), literal(0, ct)));
  }
  // Range: start + i * delta, its length in the output's type.
  auto scalar_input = [&](size_t k) {
    const ValueId v = n.inputs.at(k);
    return as_compute(elem(v, Index(rank(v), "0")), type(v).dtype, ct);
  };
  return value_in(out, ct,
                  fmt::format("{} + ({}){} * {}", scalar_input(0), ct, idx[0], scalar_input(2)));
}

std::string Writer::one_hot(const ir::Node& n, const Index& idx) {
  ir::OpContext ctx = ir::make_context(g_, n);
  const ValueId indices = n.inputs[0], values = n.inputs[2], out = n.outputs[0];
  const size_t a = size_t(axis_of(ctx, n, rank(out)));
  Index at = idx;
  at.erase(at.begin() + long(a));
  // The element is `on` where its coordinate along the axis is its index (from the end where
  // negative, as the interpreter's kernel), else `off`.
  const std::string raw = elem(indices, at), h = fresh("h");
  line(fmt::format("const int64_t {} = (int64_t){} < 0 ? (int64_t){} + {} : (int64_t){};", h, raw,
                   raw, dim(out, a), raw));
  const std::string off = elem(values, {"0"}), on = elem(values, {"1"});
  const std::string st = storage_type(type(out).dtype), var = fresh("t");
  line(fmt::format("const {} {} = {} == {} ? {} : {};", st, var, h, idx[a], on, off));
  return var;
}

std::string Writer::resize(const ir::Node& n, const Index& idx) {
  ir::OpContext ctx = ir::make_context(g_, n);
  const ValueId x = n.inputs[0], out = n.outputs[0];
  const size_t r = rank(x);
  if (ctx.attr_int("antialias") != 0) unsupported(n, "antialias");
  const auto spec = ir::resize_spec(ctx, type(x).shape);
  if (!spec) unsupported(n, "its scales or sizes must be constants");
  const ir::ResizeModes m = ir::resize_modes(ctx);
  if (m.mode != "nearest" && m.mode != "linear" && m.mode != "cubic")
    unsupported(n, "mode '" + m.mode + "'");
  static const std::vector<std::string> kCoordinates = {
      "half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
      "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize"};
  static const std::vector<std::string> kNearest = {"round_prefer_floor", "round_prefer_ceil",
                                                    "floor", "ceil"};
  const auto coordinates = std::find(kCoordinates.begin(), kCoordinates.end(), m.coordinates);
  const auto nearest = std::find(kNearest.begin(), kNearest.end(), m.nearest);
  if (coordinates == kCoordinates.end())
    unsupported(n, "coordinate_transformation_mode '" + m.coordinates + "'");
  if (m.mode == "nearest" && nearest == kNearest.end())
    unsupported(n, "nearest_mode '" + m.nearest + "'");
  const bool crop = m.coordinates == "tf_crop_and_resize";
  if (crop && n.inputs.size() > 1 && n.inputs[1] != ir::kNoValue &&
      !g_.value(n.inputs[1]).is_weight())
    unsupported(n, "its roi must be a constant");
  // Per axis, the input coordinates it reads with their weights: the output's own where the axis
  // keeps its extent and scale (the interpreter's shortcut), one where nearest, two where linear,
  // four where cubic.
  std::vector<std::vector<std::pair<std::string, std::string>>> taps(r);
  std::vector<std::string> outside;
  for (size_t a = 0; a < r; ++a) {
    const ir::Dim &in_dim = type(x).shape[a], &out_dim = type(out).shape[a];
    const double scale = spec->scales[a];
    if (!crop && scale == 1.0 && (in_dim == out_dim)) {
      taps[a] = {{idx[a], ""}};
      continue;
    }
    // A scale from sizes needs the input's extent (resize_spec leaves it 1 where that is a
    // run-time dim).
    if (!in_dim.is_static() && !(scale == 1.0 && in_dim == out_dim))
      unsupported(n, "an axis of run-time extent resized");
    const std::string in = dim(x, a), c = fresh("c");
    line(fmt::format("const double {} = eqf_resize_source({}, (double){}, {}, {}, {}, {}, {});", c,
                     coordinates - kCoordinates.begin(), idx[a], literal(scale, "double"), in,
                     dim(out, a), literal(spec->roi[a], "double"),
                     literal(spec->roi[r + a], "double")));
    if (crop) outside.push_back(fmt::format("{} < 0 || {} > {} - 1", c, c, in));
    auto clamped = [&](const std::string& i) {
      return fmt::format("eqf_min<int64_t>(eqf_max<int64_t>({}, 0), {} - 1)", i, in);
    };
    if (m.mode == "nearest") {
      taps[a] = {{clamped(fmt::format("(int64_t)eqf_resize_nearest({}, {})", c,
                                      nearest - kNearest.begin())),
                  ""}};
    } else if (m.mode == "linear") {
      const std::string f = fresh("f"), w = fresh("w");
      line(fmt::format("const double {} = floor({});", f, c));
      line(fmt::format("const double {} = {} - {};", w, c, f));
      taps[a] = {{clamped("(int64_t)" + f), "(1.0 - " + w + ")"},
                 {clamped("(int64_t)" + f + " + 1"), w}};
    } else {
      // Four taps around the coordinate (eqf_resize_cubic: ir::cubic_weights); with
      // exclude_outside, those outside the input weigh 0 and the rest are renormalized.
      const bool exclude = ctx.attr_int("exclude_outside") != 0;
      const std::string f = fresh("f"), t = fresh("t");
      line(fmt::format("const double {} = floor({});", f, c));
      line(fmt::format("const double {} = {} - {};", t, c, f));
      std::vector<std::string> at(4), w(4);
      for (int k = 0; k < 4; ++k) {
        at[size_t(k)] = fmt::format("(int64_t){} + {}", f, k - 1);
        w[size_t(k)] = fresh("w");
        const std::string weight =
            fmt::format("eqf_resize_cubic({}, {}, {})", t,
                        literal(ctx.attr_float("cubic_coeff_a"), "double"), k);
        line(exclude ? fmt::format("const double {} = {} < 0 || {} >= {} ? 0.0 : {};", w[size_t(k)],
                                   at[size_t(k)], at[size_t(k)], in, weight)
                     : fmt::format("const double {} = {};", w[size_t(k)], weight));
      }
      if (exclude) {
        const std::string sum = fresh("s");
        line(fmt::format("const double {} = {} + {} + {} + {};", sum, w[0], w[1], w[2], w[3]));
        for (std::string& wk : w) wk = fmt::format("({} != 0 ? {} / {} : {})", sum, wk, sum, wk);
      }
      for (size_t k = 0; k < 4; ++k) taps[a].push_back({clamped(at[k]), w[k]});
    }
  }
  // The sum over every combination of the axes' taps, in double as the interpreter's kernel.
  std::string sum;
  std::vector<size_t> k(r, 0);
  for (bool more = true; more;) {
    Index in_idx(r);
    std::string weight;
    for (size_t a = 0; a < r; ++a) {
      in_idx[a] = taps[a][k[a]].first;
      if (!taps[a][k[a]].second.empty())
        weight += (weight.empty() ? "" : " * ") + taps[a][k[a]].second;
    }
    const std::string v = "(double)" + elem(x, in_idx);
    sum += (sum.empty() ? "" : " + ") + (weight.empty() ? v : weight + " * " + v);
    more = false;
    for (size_t a = r; a-- > 0;) {
      if (++k[a] < taps[a].size()) {
        more = true;
        break;
      }
      k[a] = 0;
    }
  }
  if (!outside.empty()) {
    std::string any;
    for (const std::string& o : outside) any += (any.empty() ? "(" : " || (") + o + ")";
    sum = fmt::format("({}) ? {} : {}", any,
                      literal(ctx.attr_float("extrapolation_value"), "double"), "(" + sum + ")");
  }
  if (!ir::is_floating(type(out).dtype)) sum = "eqf_round(" + sum + ")";  // as the interpreter
  return value_in(out, "double", sum);
}

}  // namespace eqfuse::codegen::detail
