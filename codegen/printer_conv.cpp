// The printer's 2-D convolutions in loops of their own: direct loops, the twin's register tiles,
// patch dot tiles and channel tiles over weight blocks, CUDA's implicit-GEMM tiles and their
// tensor-core forms (printer_writer.h).
#include <algorithm>

#include "codegen/printer_writer.h"

namespace eqfuse::codegen::detail {

std::vector<ir::structured::WindowAxis> window_of(const ir::Graph& g, const ir::Node& n,
                                                  const std::vector<int64_t>& kernel) {
  ir::OpContext ctx = ir::make_context(g, n);
  const ir::TensorType& x = *ctx.input_types[0];
  std::vector<ir::Dim> spatial(x.shape.dims().begin() + 2, x.shape.dims().end());
  bool ceil_mode = ctx.has_attr("ceil_mode") && ctx.attr_int("ceil_mode") != 0;
  auto axes = ir::structured::window_axes(ctx, spatial, kernel, ceil_mode);
  // SAME's pads depend on the input's size, which window_axes leaves at 0 where the size is
  // known only at run time. At a stride of 1 they do not (the window's extent less one in all);
  // at another, generated code does not compute them.
  const std::string auto_pad = ctx.has_attr("auto_pad") ? ctx.attr_string("auto_pad") : "NOTSET";
  if (auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER") return axes;
  for (size_t k = 0; k < axes.size(); ++k) {
    if (spatial[k].is_static()) continue;
    ir::structured::WindowAxis& a = axes[k];
    if (a.stride != 1)
      throw Error("codegen: " + n.op_type + " '" + n.name + "': auto_pad " + auto_pad +
                      " at stride " + std::to_string(a.stride) +
                      " over a run-time spatial size (its pads depend on the size)",
                  Error::Kind::Unsupported);
    const int64_t total = a.dilation * (a.kernel - 1);
    a.pad_begin = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
    a.pad_end = total - a.pad_begin;
  }
  return axes;
}

// The end of a direct convolution's item (Conv, ConvTranspose): the multiply-add of input
// element `xi` and weight `wi` inside the `loops` open channel and tap loops, which it closes,
// then the bias (input 2) and the store of output element `idx`.
std::string Writer::direct_conv_finish(const ir::Node& n, ValueId out, const Index& idx,
                                       const std::string& acc, const std::string& ct,
                                       const Index& xi, const Index& wi, size_t loops) {
  line(fmt::format("{} += ({}){} * ({}){};", acc, ct, elem(n.inputs[0], xi), ct,
                   elem(n.inputs[1], wi)));
  for (size_t k = 0; k < loops; ++k) close();
  std::string v = acc;
  if (n.inputs.size() > 2 && n.inputs[2] != ir::kNoValue)
    v = fmt::format("{} + ({}){}", acc, ct, elem(n.inputs[2], Index{idx[1]}));
  store_output(out, "i", idx, v);
  return numel(out);
}

std::string Writer::body_conv(const Stage& s) {
  const ir::Node& n = g_.node(s.node);
  ir::OpContext ctx = ir::make_context(g_, n);
  ValueId x = n.inputs[0], w = n.inputs[1], out = s.output;
  size_t sp = rank(x) - 2;
  std::vector<int64_t> kernel;
  for (size_t k = 0; k < sp; ++k) {
    if (!type(w).shape[k + 2].is_static())
      throw Error("codegen: Conv '" + n.name + "': the kernel size must be static",
                  Error::Kind::Unsupported);
    kernel.push_back(type(w).shape[k + 2].value());
  }
  auto win = window_of(g_, n, kernel);
  int64_t group = ctx.attr_int("group");
  Index idx = decompose_value("i", out);
  std::string ct = compute_type({type(out).dtype});
  std::string cg = dim(w, 1);
  std::string mg = fmt::format("({} / {})", dim(w, 0), group);
  std::string gv = fresh("grp");
  line(fmt::format("const int64_t {} = {} / {};", gv, idx[1], mg));
  std::string acc = fresh("acc");
  line(fmt::format("{} {} = 0;", ct, acc));
  std::string c = fresh("c");
  open(fmt::format("for (int64_t {} = 0; {} < {}; ++{})", c, c, cg, c));
  Index xi = {idx[0], iadd(imul(gv, cg), c)}, wi = {idx[1], c};
  for (size_t k = 0; k < sp; ++k) {
    std::string kk = fresh("q"), pos = fresh("y");
    open(fmt::format("for (int64_t {} = 0; {} < {}; ++{})", kk, kk, kernel[k], kk));
    line(fmt::format("const int64_t {} = {} * {} - {} + {} * {};", pos, idx[2 + k], win[k].stride,
                     win[k].pad_begin, kk, win[k].dilation));
    line(fmt::format("if ({} < 0 || {} >= {}) continue;", pos, pos, dim(x, 2 + k)));
    xi.push_back(pos);
    wi.push_back(kk);
  }
  return direct_conv_finish(n, out, idx, acc, ct, xi, wi, sp + 1);
}

// ConvTranspose, an output element per item: the sum over its group's input channels and the
// kernel taps whose input position lands on it (o = i * stride - pad + k * dilation, i whole and
// inside the input), plus the bias. Direct loops, as the interpreter's geometry
// (ir::structured::transpose_geometry) places them; no library form.
std::string Writer::body_conv_transpose(const Stage& s) {
  const ir::Node& n = g_.node(s.node);
  ir::OpContext ctx = ir::make_context(g_, n);
  const ValueId x = n.inputs[0], w = n.inputs[1], out = s.output;
  const size_t sp = rank(x) - 2;
  std::vector<int64_t> kernel;
  std::vector<ir::Dim> in_spatial;
  for (size_t k = 0; k < sp; ++k) {
    if (!type(w).shape[k + 2].is_static() || !type(x).shape[k + 2].is_static())
      throw Error("codegen: ConvTranspose '" + n.name +
                      "': the kernel and input spatial sizes must be static",
                  Error::Kind::Unsupported);
    kernel.push_back(type(w).shape[k + 2].value());
    in_spatial.push_back(type(x).shape[k + 2]);
  }
  const auto geometry = ir::structured::transpose_geometry(ctx, in_spatial, kernel);
  const int64_t group = ctx.attr_int("group");
  const Index idx = decompose_value("i", out);
  const std::string ct = compute_type({type(out).dtype});
  const std::string cg = fmt::format("({} / {})", dim(x, 1), group), mg = dim(w, 1);
  const std::string gv = fresh("grp"), acc = fresh("acc"), c = fresh("c");
  line(fmt::format("const int64_t {} = {} / {};", gv, idx[1], mg));
  line(fmt::format("{} {} = 0;", ct, acc));
  open(fmt::format("for (int64_t {} = 0; {} < {}; ++{})", c, c, cg, c));
  const std::string channel = iadd(imul(gv, cg), c);
  Index xi = {idx[0], channel}, wi = {channel, fmt::format("({} % {})", idx[1], mg)};
  for (size_t k = 0; k < sp; ++k) {
    const ir::structured::WindowAxis& a = geometry.axes[k];
    const std::string kk = fresh("q"), t = fresh("y");
    open(fmt::format("for (int64_t {} = 0; {} < {}; ++{})", kk, kk, kernel[k], kk));
    line(fmt::format("const int64_t {} = {} + {} - {} * {};", t, idx[2 + k], a.pad_begin, kk,
                     a.dilation));
    line(fmt::format("if ({} < 0 || {} % {} != 0 || {} / {} >= {}) continue;", t, t, a.stride, t,
                     a.stride, dim(x, 2 + k)));
    xi.push_back(fmt::format("({} / {})", t, a.stride));
    wi.push_back(kk);
  }
  return direct_conv_finish(n, out, idx, acc, ct, xi, wi, sp + 1);
}

bool Writer::conv_takes_patches(const ir::Graph& g, const ir::Node& n) {
  const ir::TensorType& w = g.value(n.inputs[1]).type;
  const int64_t kh = w.shape[2].value(), kw = w.shape[3].value();
  auto win = window_of(g, n, {kh, kw});
  return kw % 16 == 0 && win[1].stride == kw && win[1].dilation == 1 && win[0].pad_begin == 0 &&
         win[0].pad_end == 0 && win[1].pad_begin == 0 && win[1].pad_end == 0;
}

// One item per (n, block of `mb` output channels of one group, output row), in tiles of mb
// channels by up to 4 output pixels: each output's window is kh rows of kw contiguous inputs,
// which it sums in vectors along kw against the weight rows (contiguous too), then adds across
// lanes (lane_sums), as body_matmul_rows does for a product with B transposed.
std::string Writer::body_conv_patches(const Stage& s) {
  const ir::Node& n = g_.node(s.node);
  ir::OpContext ctx = ir::make_context(g_, n);
  ValueId x = n.inputs[0], w = n.inputs[1], out = s.output;
  const int64_t kh_size = type(w).shape[2].value(), kw_size = type(w).shape[3].value();
  auto win = window_of(g_, n, {kh_size, kw_size});
  const int64_t mg = type(w).shape[0].value() / ctx.attr_int("group");
  int64_t mb = kTileAccumulators / 2;
  while (mg % mb != 0) mb /= 2;
  const int64_t taps = kh_size * kw_size;
  const std::string ct = compute_type({type(out).dtype});
  const std::string OW = dim(out, 3), H = dim(x, 2), W = dim(x, 3), C = dim(x, 1), Cg = dim(w, 1);
  const std::string blocks = fmt::format("({} / {})", dim(out, 1), mb);
  Index r = decompose("i", {dim(out, 0), blocks, dim(out, 2)},
                      {dim_is_one(out, 0), mb == 1 && dim_is_one(out, 1), dim_is_one(out, 2)});
  line(fmt::format("const int64_t m0 = {} * {};", r[1], mb));
  line(fmt::format("const int64_t grp = m0 / {};", mg));
  line(fmt::format("const {}* xg = {} + ({} * {} + grp * {}) * {} * {};", buffer_type(x), ptr(x),
                   r[0], C, Cg, H, W));
  line(fmt::format("const {}* wm = {} + m0 * {} * {};", buffer_type(w), ptr(w), Cg, taps));
  std::vector<std::string> bias(static_cast<size_t>(mb));
  if (n.inputs.size() > 2 && n.inputs[2] != ir::kNoValue)
    for (int64_t k = 0; k < mb; ++k)
      bias[size_t(k)] = " + (" + ct + ")" + elem(n.inputs[2], Index{iadd("m0", std::to_string(k))});
  vector_variants(ct, [&](int lanes, int accumulators) {
    const int tn = std::clamp<int>(accumulators / int(mb), 1, std::min(4, lanes));
    open(fmt::format("for (int64_t ow = 0; ow < {}; ow += {})", OW, tn));
    line(fmt::format("const int64_t nb = {} - ow < {} ? {} - ow : {};", OW, tn, OW, tn));
    // Pixels past the row's end repeat its last (their sums are not stored).
    for (int p = 0; p < tn; ++p)
      line(fmt::format("const int64_t x{} = (ow + {} < {} ? ow + {} : {} - 1) * {};", p, p, OW, p,
                       OW, kw_size));
    for (int64_t k = 0; k < mb; ++k)
      for (int p = 0; p < tn; ++p) line(fmt::format("vec acc{}_{} = (vec){{}};", k, p));
    open(fmt::format("for (int64_t c = 0; c < {}; ++c)", Cg));
    open(fmt::format("for (int64_t kh = 0; kh < {}; ++kh)", kh_size));
    line(fmt::format("const {}* xr = xg + (c * {} + {} * {} + kh * {}) * {};", buffer_type(x), H,
                     r[2], win[0].stride, win[0].dilation, W));
    line(fmt::format("const {}* wr = wm + (c * {} + kh) * {};", buffer_type(w), kh_size, kw_size));
    open(fmt::format("for (int64_t kk = 0; kk < {}; kk += {})", kw_size, lanes));
    for (int64_t k = 0; k < mb; ++k)
      vector_load(
          ct, lanes, w, fmt::format("w{}v", k),
          fmt::format("wr + {} + kk", imul(std::to_string(k), imul(Cg, std::to_string(taps)))));
    for (int p = 0; p < tn; ++p)
      vector_load(ct, lanes, x, fmt::format("x{}v", p), fmt::format("xr + x{} + kk", p));
    for (int64_t k = 0; k < mb; ++k)
      for (int p = 0; p < tn; ++p) line(fmt::format("acc{}_{} += w{}v * x{}v;", k, p, k, p));
    close();
    close();
    close();
    const std::vector<std::string> sums = row_lane_sums(ct, lanes, mb, tn);
    for (int64_t k = 0; k < mb; ++k) {
      for (int p = 0; p < tn; ++p) {
        open(fmt::format("if ({} < nb)", p));
        Index at = {r[0], iadd("m0", std::to_string(k)), r[2], fmt::format("(ow + {})", p)};
        store_output(out, linear(out, at), at,
                     fmt::format("{}[{}]{}", sums[size_t(k)], p, bias[size_t(k)]));
        close();
      }
    }
    close();
  });
  return fmt::format("{} * {} * {}", dim(out, 0), blocks, dim(out, 2));
}

// The CPU form of a 2-D convolution, in register tiles: one item per (n, block of `mb` output
// channels of one group, output row; a 1x1 convolution at stride 1 without padding: a chunk of
// kFlatConvChunk pixels of the image taken as one row). Along the row, a tile of one vector of
// outputs keeps its mb vectors of sums in registers (named variables of the compilers' vector
// extension, so that no compiler has to prove an array can live in registers) over every (channel,
// tap): each input vector feeds mb multiply-adds and each weight a whole vector. A tile whose every
// tap lies inside the input row loads its inputs directly (at a stride of 2, f32, two whole
// vectors' even lanes); an edge tile (padding, the row's end) loads the valid ones and zeros the
// rest, through masks where the target has them. Operands are contiguous buffers.
std::string Writer::body_conv_tiles(const Stage& s) {
  const ir::Node& n = g_.node(s.node);
  if (s.weight_blocks) {
    if (s.winograd) return body_conv_winograd(s);
    const auto& w = type(n.inputs[1]).shape;
    return w[2].value() * w[3].value() == 1 ? body_conv_product(s) : body_conv_channels(s);
  }
  if (conv_takes_patches(g_, n)) return body_conv_patches(s);
  ir::OpContext ctx = ir::make_context(g_, n);
  ValueId x = n.inputs[0], w = n.inputs[1], out = s.output;
  const int64_t kh_size = type(w).shape[2].value(), kw_size = type(w).shape[3].value();
  auto win = window_of(g_, n, {kh_size, kw_size});
  const int64_t group = ctx.attr_int("group");
  const int64_t mg = type(w).shape[0].value() / group;
  int64_t mb = kTileAccumulators;
  while (mg % mb != 0) mb /= 2;
  const int64_t taps = kh_size * kw_size;
  const int64_t cg_taps = type(w).shape[1].value() * taps;  // products each output sums
  const int64_t sh = win[0].stride, ph = win[0].pad_begin, dh = win[0].dilation;
  const int64_t sw = win[1].stride, pw = win[1].pad_begin, dw = win[1].dilation;
  std::string ct = compute_type({type(out).dtype});
  std::string OW = dim(out, 3), H = dim(x, 2), W = dim(x, 3), C = dim(x, 1), Cg = dim(w, 1);
  // A 1x1 convolution at stride 1 without padding reads each output pixel's own input pixel: its
  // image is taken as one row of H * W pixels, in items of kFlatConvChunk, which fill vectors and
  // steps better than rows of 7 or 14 do.
  const bool flat = taps == 1 && sh == 1 && sw == 1 && ph == 0 && pw == 0 && win[0].pad_end == 0 &&
                    win[1].pad_end == 0;
  std::string rows = dim(out, 2);  // the item's third coordinate: output rows, or flat chunks
  if (flat) {
    OW = imul(dim(out, 2), OW);
    W = imul(H, W);
    H = "1";
    rows = fmt::format("(({} + {}) / {})", OW, kFlatConvChunk - 1, kFlatConvChunk);
  }
  std::string blocks = fmt::format("({} / {})", dim(out, 1), mb);
  Index r =
      decompose("i", {dim(out, 0), blocks, rows},
                {dim_is_one(out, 0), mb == 1 && dim_is_one(out, 1), !flat && dim_is_one(out, 2)});
  const std::string oh = flat ? "0" : r[2];  // the output row
  std::optional<int64_t> row;  // the item's row, where static (a flat chunk's at most)
  if (flat)
    row = type(out).shape[2].is_static() && type(out).shape[3].is_static()
              ? std::min(kFlatConvChunk, type(out).shape[2].value() * type(out).shape[3].value())
              : kFlatConvChunk;
  else if (type(out).shape[3].is_static())
    row = type(out).shape[3].value();
  line(fmt::format("const int64_t m0 = {} * {};", r[1], mb));
  line(fmt::format("const int64_t grp = m0 / {};", mg));
  line(fmt::format("const {}* xg = {} + ({} * {} + grp * {}) * {} * {};", buffer_type(x), ptr(x),
                   r[0], C, Cg, H, W));
  line(fmt::format("const {}* wm = {} + m0 * {} * {};", buffer_type(w), ptr(w), Cg, taps));
  // The item's outputs along its row: [qs, qe).
  std::string qs = "0", qe = OW;
  if (flat) {
    qs = "qs", qe = "qe";
    line(fmt::format("const int64_t qs = {} * {};", r[2], kFlatConvChunk));
    line(fmt::format("const int64_t qe = {} - qs < {} ? {} : qs + {};", OW, kFlatConvChunk, OW,
                     kFlatConvChunk));
  }
  std::vector<std::string> bias(size_t(mb), "0");
  if (n.inputs.size() > 2 && n.inputs[2] != ir::kNoValue)
    for (int64_t k = 0; k < mb; ++k)
      bias[size_t(k)] = "(" + ct + ")" + elem(n.inputs[2], Index{iadd("m0", std::to_string(k))});
  // One step along the row: `nv` vectors of `lanes` outputs from q0, each output channel's sums
  // in registers, so that the channels' weights are read once per step.
  auto step = [&](int lanes, int64_t nv) {
    const int64_t span = nv * lanes;
    auto acc = [](int64_t k, int64_t v) { return fmt::format("acc{}_{}", k, v); };
    line(fmt::format("const int64_t qb = {} - q0 < {} ? {} - q0 : {};", qe, span, qe, span));
    for (int64_t k = 0; k < mb; ++k)
      for (int64_t v = 0; v < nv; ++v)
        line(fmt::format("vec {} = (vec){{}} + {};", acc(k, v), bias[size_t(k)]));
    // Inside: the first tap of the first output and the last tap of the last lie in the row
    // (stride 2: and the element after it, which the whole loads read).
    line(fmt::format(
        "const bool inside = qb == {} && q0 * {} - {} >= 0 && (q0 + {}) * {} - {} + {} < {};", span,
        sw, pw, span - 1, sw, pw, (kw_size - 1) * dw + (sw == 2 ? 1 : 0), W));
    auto reduction = [&](bool inside) {
      open(fmt::format("for (int64_t c = 0; c < {}; ++c)", Cg));
      line(fmt::format("const {}* xc = xg + c * {} * {};", buffer_type(x), H, W));
      line(fmt::format("const {}* wc = wm + c * {};", buffer_type(w), taps));
      open(fmt::format("for (int64_t kh = 0; kh < {}; ++kh)", kh_size));
      line(fmt::format("const int64_t ih = {} * {} - {} + kh * {};", oh, sh, ph, dh));
      line(fmt::format("if (ih < 0 || ih >= {}) continue;", H));
      line(fmt::format("const {}* xr = xc + ih * {};", buffer_type(x), W));
      open(fmt::format("for (int64_t kw = 0; kw < {}; ++kw)", kw_size));
      line(fmt::format("const int64_t off = q0 * {} - {} + kw * {};", sw, pw, dw));
      // Vectors of inputs along a contiguous row (stride 1) or the even elements of two such
      // (stride 2), loaded whole inside the row and through masks at its edges where the target
      // has them (the prelude's EQF_ macros); element by element elsewhere.
      const bool row_loads =
          buffer_type(x) == ct && (sw == 1 ? inside || ct == "float" : sw == 2 && ct == "float");
      // What the loads need beyond the vector extension ("" nothing).
      std::string needs;
      if (!inside) needs = "defined(EQF_MASKED_LOADS)";
      if (sw == 2) needs += std::string(needs.empty() ? "" : " && ") + "defined(EQF_EVEN_LANES)";
      if (row_loads) {
        if (!needs.empty()) line("#if " + needs);
        for (int64_t v = 0; v < nv; ++v) {
          // The `lanes` inputs from `at` into `name`; an edge tile reads no element outside the
          // row, nor (stride 1) past the step's last output.
          auto load = [&](const std::string& name, int64_t at, const std::string& limit) {
            line(inside ? fmt::format("vec {}; memcpy(&{}, xr + off + {}, sizeof(vec));", name,
                                      name, at)
                        : fmt::format("vec {}; eqf_load_lanes({}, xr, off + {}, {}, {});", name,
                                      name, at, W, limit));
          };
          if (sw == 1) {
            load(fmt::format("xv{}", v), v * lanes, fmt::format("qb - {}", v * lanes));
          } else {
            load(fmt::format("xa{}", v), 2 * v * lanes, std::to_string(lanes));
            load(fmt::format("xb{}", v), (2 * v + 1) * lanes, std::to_string(lanes));
            line(fmt::format("vec xv{} = eqf_even_lanes(xa{}, xb{});", v, v, v));
          }
          line(fmt::format("EQF_IN_REGISTER(xv{});", v));
        }
        if (!needs.empty()) line("#else");
      }
      for (int64_t v = 0; v < nv && !(row_loads && needs.empty()); ++v) {
        std::string elements;
        for (int u = 0; u < lanes; ++u) {
          const int64_t q = v * lanes + u;
          std::string p = fmt::format("off + {}", q * sw);
          elements += (u ? ", " : "") +
                      (inside ? fmt::format("({})xr[{}]", ct, p)
                              : fmt::format("({} < qb && {} >= 0 && {} < {} ? ({})xr[{}] : ({})0)",
                                            q, p, p, W, ct, p, ct));
        }
        line(fmt::format("const vec xv{} = {{{}}};", v, elements));
      }
      if (row_loads && !needs.empty()) line("#endif");
      for (int64_t k = 0; k < mb; ++k) {
        std::string wk =
            fmt::format("({})wc[{} + kh * {} + kw]", ct,
                        imul(std::to_string(k), imul(Cg, std::to_string(taps))), kw_size);
        for (int64_t v = 0; v < nv; ++v) line(fmt::format("{} += {} * xv{};", acc(k, v), wk, v));
      }
      close();
      close();
      close();
    };
    open("if (inside)");
    reduction(true);
    close();
    open("else");
    reduction(false);
    close();
    // Each channel's elements stored (and their epilogue computed) by a loop, not unrolled, read
    // from a copy of its vector (lane_of).
    for (int64_t k = 0; k < mb; ++k)
      for (int64_t v = 0; v < nv; ++v) {
        std::string u = fresh("u"), e = fresh("e");
        line(fmt::format("const vec {} = {};", e, acc(k, v)));
        open_vector_store(u, v * lanes, lanes, "qb");
        const std::string q = fmt::format("(q0 + {})", iadd(std::to_string(v * lanes), u));
        Index at = {r[0], iadd("m0", std::to_string(k)), oh, q};
        const std::string lin = linear(out, at);
        if (flat)
          at = {at[0], at[1], fmt::format("({} / {})", q, dim(out, 3)),
                fmt::format("({} % {})", q, dim(out, 3))};
        store_output(out, lin, at, lane_of({e}, lanes, u));
        close();
      }
  };
  vector_variants(
      ct,
      [&](int lanes, int accumulators) {
        // Steps of as many vectors as the register tile holds along a static row, then the rest
        // of the row; one vector a step where a channel has no weights to share (depthwise), or
        // where each output sums fewer than kSharedReduction products (measured slower: the
        // stores, not the sums, take the time there).
        int64_t nv = 1, vectors = 0;
        if (row) {
          vectors = (*row + lanes - 1) / lanes;
          if (mb > 1 && cg_taps >= kSharedReduction)
            nv = std::min(vectors, std::max<int64_t>(1, accumulators / mb));
        }
        if (nv == 1) {
          open(fmt::format("for (int64_t q0 = {}; q0 < {}; q0 += {})", qs, qe, lanes));
          step(lanes, 1);
          close();
          return;
        }
        // A flat chunk's steps end where its outputs do (the image's last chunk is shorter).
        const int64_t full = vectors / nv, rest = vectors % nv;
        const std::string first_rest = iadd(qs, std::to_string(full * nv * lanes));
        open(fmt::format("for (int64_t q0 = {}; q0 < {}{}; q0 += {})", qs, first_rest,
                         flat ? " && q0 < qe" : "", nv * lanes));
        step(lanes, nv);
        close();
        if (rest > 0) {
          open("");
          line(fmt::format("const int64_t q0 = {};", first_rest));
          if (flat) open("if (q0 < qe)");
          step(lanes, rest);
          if (flat) close();
          close();
        }
      },
      /*wide=*/(sw == 1 || (sw == 2 && buffer_type(x) == ct && ct == "float")));
  return fmt::format("{} * {} * {}", dim(out, 0), blocks, rows);
}

// CUDA: a 2-D convolution as an implicit GEMM per group, C[m][p] = sum over k of A[m][k] B[k][p]:
// m an output channel of the group, p an output pixel (image, row and column flattened), k an
// input channel and tap. A is the weights as stored (row m is contiguous in k); B is the input
// read at the tap, zero in the padding, and never materialized. An item is one block's tile of
// `tile.m` channels by `tile.p` pixels of C. For each slice of kConvTileK k, the block copies
// A's and B's slices into shared memory and each of its 256 threads accumulates its
// (tile.m / 16) x (tile.p / 16) outputs in registers, while the next slice is already being
// loaded into registers. The epilogue (bias, the merged pointwise stage) is computed where the
// tile stores.
std::string Writer::body_conv_gemm(const Stage& s, ConvTile tile) {
  const int64_t tile_m = tile.m, tile_p = tile.p;
  const ir::Node& n = g_.node(s.node);
  ir::OpContext ctx = ir::make_context(g_, n);
  ValueId x = n.inputs[0], w = n.inputs[1], out = s.output;
  const auto& ws = type(w).shape;
  const int64_t kh_size = ws[2].value(), kw_size = ws[3].value(), cg = ws[1].value();
  auto win = window_of(g_, n, {kh_size, kw_size});
  const int64_t group = ctx.attr_int("group"), mg = ws[0].value() / group;
  const int64_t taps = kh_size * kw_size, K = cg * taps;
  const int64_t per_thread_m = tile_m / 16, per_thread_p = tile_p / 16;
  const int64_t a_loads = tile_m * kConvTileK / 256, b_loads = kConvTileK * tile_p / 256;
  const int64_t m_tiles = (mg + tile_m - 1) / tile_m;
  const bool whole_m = mg % tile_m == 0, whole_k = K % kConvTileK == 0;
  const std::string OW = dim(out, 3), H = dim(x, 2), W = dim(x, 3), C = dim(x, 1);
  const std::string pixels = "(" + imul(dim(out, 2), OW) + ")";
  const std::string P = "(" + imul(dim(out, 0), pixels) + ")";
  const std::string p_tiles = fmt::format("(({} + {}) / {})", P, tile_p - 1, tile_p);
  Index item = decompose("i", {std::to_string(group), p_tiles, std::to_string(m_tiles)},
                         {group == 1, false, m_tiles == 1});
  const std::string grp = item[0], pt = item[1], mt = item[2];
  const std::string xt = buffer_type(x), wt = buffer_type(w);
  line(fmt::format("const int64_t m_first = {};",
                   iadd(imul(grp, std::to_string(mg)), imul(mt, std::to_string(tile_m)))));
  if (!whole_m)
    line(fmt::format("const int64_t m_in_group = {};", imul(mt, std::to_string(tile_m))));
  line(fmt::format("const int64_t p_first = {} * {};", pt, tile_p));
  // 16-bit operands multiply on tensor cores (`mma`): the slices are stored as 16-bit values,
  // A's by channel and B's by pixel, k along each row (padded to 24, so that the 8 rows a
  // fragment read touches fall in distinct banks), where mma.sync's fragments take them in
  // pairs. Otherwise the slices are floats, k by channel and k by pixel.
  const std::optional<DType> mma = conv_mma_type(s);
  // What a thread loads for the next slice: floats, or the 16-bit values' bits as stored.
  const char* reg = mma ? "uint16_t" : "float";
  const char* zero = mma ? "0" : "0.0f";
  if (mma) {
    uses_mma = true;
    line(fmt::format("__shared__ __align__(16) uint16_t As[{}][24];", tile_m));
    line(fmt::format("__shared__ __align__(16) uint16_t Bs[{}][24];", tile_p));
  } else {
    line(fmt::format("__shared__ __align__(16) float As[{}][{}];", kConvTileK, tile_m + 4));
    line(fmt::format("__shared__ __align__(16) float Bs[{}][{}];", kConvTileK, tile_p));
  }
  line("const int tx = threadIdx.x;");
  // What this thread loads: A's column ak of rows am + 16 u, B's pixel bp of k rows bk + 4 u.
  line(fmt::format("const int ak = tx % {}, am = tx / {};", kConvTileK, kConvTileK));
  line(fmt::format("const int bp = tx % {}, bk = tx / {};", tile_p, tile_p));
  line(fmt::format("const {}* wa = {} + (m_first + am) * {};", wt, ptr(w), K));
  line(fmt::format("const int64_t p = p_first + bp;"));
  line(fmt::format("const bool p_in = p < {};", P));
  line(fmt::format("const int64_t img = p / {}, in_img = p % {};", pixels, pixels));
  line(fmt::format("const int64_t ih0 = in_img / {} * {} - {}, iw0 = in_img % {} * {} - {};", OW,
                   win[0].stride, win[0].pad_begin, OW, win[1].stride, win[1].pad_begin));
  line(fmt::format("const {}* xb = {} + {} * {} * {};", xt, ptr(x),
                   iadd(imul("img", C), imul(grp, std::to_string(cg))), H, W));
  line(fmt::format("{} ra[{}], rb[{}];", reg, a_loads, b_loads));
  auto load = [&](const std::string& k0) {
    line("#pragma unroll");
    open(fmt::format("for (int u = 0; u < {}; ++u)", a_loads));
    line(fmt::format("const int k = {} + ak;", k0));
    std::string ok = whole_k ? "" : fmt::format("k < {}", K);
    if (!whole_m)
      ok += fmt::format("{}m_in_group + am + 16 * u < {}", ok.empty() ? "" : " && ", mg);
    std::string a = fmt::format(
        fmt::runtime(mma ? "wa[16 * u * {} + k].bits" : "(float)wa[16 * u * {} + k]"), K);
    line(ok.empty() ? fmt::format("ra[u] = {};", a)
                    : fmt::format("ra[u] = {} ? {} : {};", ok, a, zero));
    close();
    line("#pragma unroll");
    open(fmt::format("for (int u = 0; u < {}; ++u)", b_loads));
    line(fmt::format("const int k = {} + bk + {} * u;", k0, 256 / tile_p));
    line(fmt::format("{} v = {};", reg, zero));
    open(whole_k ? "if (p_in)" : fmt::format("if (p_in && k < {})", K));
    line(fmt::format("const int c = k / {}, tap = k % {};", taps, taps));
    line(fmt::format("const int64_t ih = ih0 + tap / {} * {}, iw = iw0 + tap % {} * {};", kw_size,
                     win[0].dilation, kw_size, win[1].dilation));
    line(
        fmt::format("if (ih >= 0 && ih < {} && iw >= 0 && iw < {}) v = {}xb[(c * {} + ih) * "
                    "{} + iw]{};",
                    H, W, mma ? "" : "(float)", H, W, mma ? ".bits" : ""));
    close();
    line("rb[u] = v;");
    close();
  };
  load("0");
  // Tensor cores: the 8 warps split the tile into warp tiles of mi x ni fragments (16 channels by
  // 8 pixels each); a lane holds 4 accumulators of each fragment, at rows (channels) frag_row
  // and frag_row + 8 and columns (pixels) 2 frag_col and 2 frag_col + 1 (PTX's m16n8k16
  // layout).
  const int64_t warp_m = std::min<int64_t>(32, tile_m / 2), warps_m = tile_m / warp_m;
  const int64_t warp_p = tile_p / (8 / warps_m), mi = warp_m / 16, ni = warp_p / 8;
  if (mma) {
    line(fmt::format("float acc[{}][{}][4];", mi, ni));
    line("#pragma unroll");
    open(fmt::format("for (int r = 0; r < {}; ++r)", mi));
    line("#pragma unroll");
    line(
        fmt::format("for (int c = 0; c < {}; ++c) acc[r][c][0] = acc[r][c][1] = acc[r][c][2] = "
                    "acc[r][c][3] = 0.0f;",
                    ni));
    close();
    line("const int frag_row = lane >> 2, frag_col = lane & 3;");
    line(fmt::format("const int warp_m0 = warp / {} * {}, warp_p0 = warp % {} * {};", 8 / warps_m,
                     warp_m, 8 / warps_m, warp_p));
  } else {
    line(fmt::format("float acc[{}][{}];", per_thread_m, per_thread_p));
    line("#pragma unroll");
    open(fmt::format("for (int r = 0; r < {}; ++r)", per_thread_m));
    line("#pragma unroll");
    line(fmt::format("for (int c = 0; c < {}; ++c) acc[r][c] = 0.0f;", per_thread_p));
    close();
    line("const int ty = tx / 16, tn = tx % 16;");
  }
  open(fmt::format("for (int k0 = 0; k0 < {}; k0 += {})", K, kConvTileK));
  line("#pragma unroll");
  line(mma ? fmt::format("for (int u = 0; u < {}; ++u) As[am + 16 * u][ak] = ra[u];", a_loads)
           : fmt::format("for (int u = 0; u < {}; ++u) As[ak][am + 16 * u] = ra[u];", a_loads));
  line("#pragma unroll");
  line(mma ? fmt::format("for (int u = 0; u < {}; ++u) Bs[bp][bk + {} * u] = rb[u];", b_loads,
                         256 / tile_p)
           : fmt::format("for (int u = 0; u < {}; ++u) Bs[bk + {} * u][bp] = rb[u];", b_loads,
                         256 / tile_p));
  line("__syncthreads();");
  open(fmt::format("if (k0 + {} < {})", kConvTileK, K));
  load(fmt::format("k0 + {}", kConvTileK));
  close();
  if (mma) {
    // One k step of 16: A's fragments (rows frag_row and + 8, k 2 frag_col and + 8, in pairs)
    // and B's (k the same, pixel frag_row), then mi x ni products.
    line(fmt::format("uint32_t fa[{}][4], fb[{}][2];", mi, ni));
    line("#pragma unroll");
    open(fmt::format("for (int r = 0; r < {}; ++r)", mi));
    line("const int row = warp_m0 + 16 * r + frag_row;");
    line("fa[r][0] = *(const uint32_t*)&As[row][2 * frag_col];");
    line("fa[r][1] = *(const uint32_t*)&As[row + 8][2 * frag_col];");
    line("fa[r][2] = *(const uint32_t*)&As[row][2 * frag_col + 8];");
    line("fa[r][3] = *(const uint32_t*)&As[row + 8][2 * frag_col + 8];");
    close();
    line("#pragma unroll");
    open(fmt::format("for (int c = 0; c < {}; ++c)", ni));
    line("const int col = warp_p0 + 8 * c + frag_row;");
    line("fb[c][0] = *(const uint32_t*)&Bs[col][2 * frag_col];");
    line("fb[c][1] = *(const uint32_t*)&Bs[col][2 * frag_col + 8];");
    close();
    line("#pragma unroll");
    open(fmt::format("for (int r = 0; r < {}; ++r)", mi));
    line("#pragma unroll");
    line(fmt::format("for (int c = 0; c < {}; ++c) eqf_mma_{}(acc[r][c], fa[r], fb[c]);", ni,
                     mma == DType::f16 ? "f16" : "bf16"));
    close();
    line("__syncthreads();  // the slices are used up");
    close();
    conv_mma_store(s, mi, ni, P, pixels, OW, whole_m, mg);
    return fmt::format("{} * {} * {}", group, p_tiles, m_tiles);
  }
  line("#pragma unroll");
  open(fmt::format("for (int kk = 0; kk < {}; ++kk)", kConvTileK));
  line(fmt::format("float a[{}], b[{}];", per_thread_m, per_thread_p));
  // `count` consecutive floats of row kk of a shared tile into `to`, in 16-byte reads (8-byte
  // for two).
  auto read_row = [&](const std::string& to, const std::string& tile, const std::string& thread,
                      int64_t count) {
    const int64_t width = count == 2 ? 2 : 4;
    line("#pragma unroll");
    open(fmt::format("for (int q = 0; q < {}; ++q)", count / width));
    line(fmt::format("const float{} v = *(const float{}*)&{}[kk][{} * {} + {} * q];", width, width,
                     tile, thread, count, width));
    line(width == 2 ? fmt::format("{}[2 * q] = v.x, {}[2 * q + 1] = v.y;", to, to)
                    : fmt::format("{0}[4 * q] = v.x, {0}[4 * q + 1] = v.y, {0}[4 * q + 2] = v.z, "
                                  "{0}[4 * q + 3] = v.w;",
                                  to));
    close();
  };
  read_row("b", "Bs", "tn", per_thread_p);
  read_row("a", "As", "ty", per_thread_m);
  line("#pragma unroll");
  open(fmt::format("for (int r = 0; r < {}; ++r)", per_thread_m));
  line("#pragma unroll");
  line(fmt::format("for (int c = 0; c < {}; ++c) acc[r][c] += a[r] * b[c];", per_thread_p));
  close();
  close();
  line("__syncthreads();  // the slices are used up");
  close();
  // Each thread's outputs: channels ty * per_thread_m + r, pixels tn * per_thread_p + c.
  line("#pragma unroll");
  open(fmt::format("for (int r = 0; r < {}; ++r)", per_thread_m));
  if (!whole_m) line(fmt::format("if (m_in_group + ty * {} + r >= {}) break;", per_thread_m, mg));
  line(fmt::format("const int64_t m = m_first + ty * {} + r;", per_thread_m));
  const std::string bias = conv_tile_bias(s);
  line("#pragma unroll");
  open(fmt::format("for (int c = 0; c < {}; ++c)", per_thread_p));
  line(fmt::format("const int64_t q = p_first + tn * {} + c;", per_thread_p));
  line(fmt::format("if (q >= {}) break;", P));
  conv_tile_store(s, pixels, OW, fmt::format("acc[r][c] + {}", bias));
  close();
  close();
  return fmt::format("{} * {} * {}", group, p_tiles, m_tiles);
}

// A convolution tile's bias at output channel `m` (a float expression; "0.0f" without one).
std::string Writer::conv_tile_bias(const Stage& s) {
  const ir::Node& n = g_.node(s.node);
  if (n.inputs.size() > 2 && n.inputs[2] != ir::kNoValue)
    return "(float)" + elem(n.inputs[2], Index{"m"});
  return "0.0f";
}

// Stores `value` at output channel `m` and flat pixel `q` of a convolution tile, through the
// merged epilogue.
void Writer::conv_tile_store(const Stage& s, const std::string& pixels, const std::string& OW,
                             const std::string& value) {
  line(fmt::format("const int64_t q_img = q / {}, q_in = q % {};", pixels, pixels));
  line(fmt::format("const int64_t q_row = q_in / {}, q_col = q_in % {};", OW, OW));
  Index at = {"q_img", "m", "q_row", "q_col"};
  store_output(s.output, linear(s.output, at), at, value);
}

// The tensor-core tile's outputs: fragment (r, c)'s accumulator e of this lane is channel
// warp_m0 + 16 r + frag_row (+ 8 for e >= 2) and pixel warp_p0 + 8 c + 2 frag_col (+ 1 for odd
// e), stored with the bias through the epilogue as body_conv_gemm's other form stores.
void Writer::conv_mma_store(const Stage& s, int64_t mi, int64_t ni, const std::string& P,
                            const std::string& pixels, const std::string& OW, bool whole_m,
                            int64_t mg) {
  line("#pragma unroll");
  open(fmt::format("for (int r = 0; r < {}; ++r)", mi));
  line("#pragma unroll");
  open("for (int e = 0; e < 4; e += 2)");
  line("const int row = warp_m0 + 16 * r + frag_row + (e ? 8 : 0);");
  if (!whole_m) line(fmt::format("if (m_in_group + row >= {}) continue;", mg));
  line("const int64_t m = m_first + row;");
  const std::string bias = conv_tile_bias(s);
  line("#pragma unroll");
  open(fmt::format("for (int c = 0; c < {}; ++c)", ni));
  line("#pragma unroll");
  open("for (int h = 0; h < 2; ++h)");
  line("const int64_t q = p_first + warp_p0 + 8 * c + 2 * frag_col + h;");
  line(fmt::format("if (q >= {}) continue;", P));
  conv_tile_store(s, pixels, OW, fmt::format("acc[r][c][e + h] + {}", bias));
  close();
  close();
  close();
  close();
}

std::optional<DType> Writer::conv_mma_type(const Stage& s) const {
  if (target_ != Target::Cuda || !plan_.tensor_cores || s.kind != StageKind::Conv)
    return std::nullopt;
  const ir::Node& n = g_.node(s.node);
  const Buffer* x = plan_.buffer(n.inputs[0]);
  const Buffer* w = plan_.buffer(n.inputs[1]);
  if (!x || !w || x->dtype != w->dtype || (x->dtype != DType::bf16 && x->dtype != DType::f16))
    return std::nullopt;
  return x->dtype;
}

std::vector<ConvTile> Writer::conv_gemm_tiles(const Stage& s) const {
  if (target_ != Target::Cuda || s.kind != StageKind::Conv) return {};
  const ir::Node& n = g_.node(s.node);
  const DType t = type(s.output).dtype;
  const auto& ws = type(n.inputs[1]).shape;
  if (!ws.is_static()) return {};
  return cost::conv_tiles(static_cast<int64_t>(rank(n.inputs[0])) - 2,
                          t == DType::f32 || t == DType::bf16 || t == DType::f16,
                          ws[0].value() / ir::make_context(g_, n).attr_int("group"));
}

std::vector<std::string> Writer::block_bias(const ir::Node& n, int64_t channels) {
  std::vector<std::string> bias(size_t(channels), "0.0f");
  if (n.inputs.size() > 2 && n.inputs[2] != ir::kNoValue)
    for (int64_t k = 0; k < channels; ++k) {
      bias[size_t(k)] = fresh("b");
      line(fmt::format("const float {} = (float){};", bias[size_t(k)],
                       elem(n.inputs[2], Index{iadd("m0", std::to_string(k))})));
    }
  return bias;
}

void Writer::block_bias_vectors(const std::vector<std::string>& bias, int lanes, size_t first,
                                size_t count) {
  for (size_t v = 0; v < count / size_t(lanes); ++v) {
    std::string lanes_of;
    for (size_t u = 0; u < size_t(lanes); ++u)
      lanes_of += (u ? ", " : "") + bias[first + v * size_t(lanes) + u];
    line(fmt::format("const vec bv{} = {{{}}};", v, lanes_of));
  }
}

int64_t Writer::channel_tile_blocks(int accumulators, int64_t nv, int64_t most_blocks, int64_t OW) {
  int64_t best = 1;
  double best_ratio = 0;
  for (int64_t b = 1; b <= most_blocks; ++b) {
    if (most_blocks % b != 0) continue;
    const int64_t vectors = b * nv, width = channel_tile_width(accumulators, vectors);
    if (b > 1 && vectors * (width + 1) + 3 > tile_registers(accumulators)) continue;  // spills
    const int64_t chunks = (OW + width - 1) / width;
    // Multiply-adds per value loaded, each tap: a chunk's weight vectors, and each pixel once.
    const double ratio = double(vectors * OW) / double(chunks * vectors + OW);
    if (ratio > best_ratio) best = b, best_ratio = ratio;
  }
  return best;
}

// An item is one output row of a group of blocks of kWeightBlock output channels (up to
// kChannelTileBlocks, as many as channel_tile_blocks finds best for AVX-512 where the items stay
// at least kChannelTileItems; a target with fewer registers takes the group's blocks a few at a
// time). The row is cut into chunks of as many pixels as the registers hold vectors of those
// blocks' channels for; for each input channel and tap, a chunk adds its input pixels times the
// tap's weight vectors: each pixel loaded feeds a multiply-add per vector, and each weight vector
// one per pixel (rows of 7 pixels, a block at a time, had loaded more than they multiplied).
// The taps that fall in the padding are left out, not multiplied by zeros: the printer knows
// them for each pixel of a chunk at a static place, and a chunk in the middle of the row has
// none, so those chunks share one loop.
std::string Writer::body_conv_channels(const Stage& s) {
  const ir::Node& n = g_.node(s.node);
  const ValueId x = n.inputs[0], blocks_of_w = *s.weight_blocks, out = s.output;
  const auto& ws = type(n.inputs[1]).shape;
  const int64_t M = ws[0].value(), C = ws[1].value(), KH = ws[2].value(), KW = ws[3].value();
  auto win = window_of(g_, n, {KH, KW});
  const int64_t sh = win[0].stride, ph = win[0].pad_begin, dh = win[0].dilation;
  const int64_t sw = win[1].stride, pw = win[1].pad_begin, dw = win[1].dilation;
  const int64_t W = type(x).shape[3].value(), OW = type(out).shape[3].value();
  const std::string H = dim(x, 2);
  const int64_t blocks = M / kWeightBlock, block_weights = C * KH * KW * kWeightBlock;
  // Blocks per item: at most the most that divide the blocks and leave enough items (at a batch
  // of 1; the plan takes this form only at static spatial sizes).
  const int64_t OH = type(out).shape[2].value();
  int64_t most = 1;
  for (int64_t b = kChannelTileBlocks; b > 1 && most == 1; --b)
    if (blocks % b == 0 && blocks / b * OH >= kChannelTileItems &&
        b * block_weights * int64_t(sizeof(float)) <= kChannelTileWeightBytes)
      most = b;
  const int64_t nb = channel_tile_blocks(kTileAccumulatorsAvx512, 1, most, OW);
  Index r = decompose("i", {dim(out, 0), std::to_string(blocks / nb), dim(out, 2)},
                      {dim_is_one(out, 0), blocks == nb, dim_is_one(out, 2)});
  const std::string oh = r[2];
  line(fmt::format("const int64_t m0 = {} * {};", r[1], nb * kWeightBlock));
  line(fmt::format("const float* xg = {} + {} * {} * {} * {};", ptr(x), r[0], C, H, W));
  line(fmt::format("const float* wb = {} + {} * {};", ptr(blocks_of_w), r[1], nb * block_weights));
  const std::vector<std::string> bias = block_bias(n, nb * kWeightBlock);
  // Input column of pixel q at tap kw, and whether it lies in the row.
  auto column = [&](int64_t q, int64_t kw) { return q * sw - pw + kw * dw; };
  auto inside = [&](int64_t q, int64_t kw) { return column(q, kw) >= 0 && column(q, kw) < W; };
  vector_variants("float", [&](int lanes, int accumulators) {
    const int64_t per_block = kWeightBlock / lanes;  // vectors per pixel and block
    // The item's blocks `sub` at a time, from block bg.
    const int64_t sub = channel_tile_blocks(accumulators, per_block, nb, OW);
    const int64_t nv = sub * per_block;  // vectors per pixel
    const int64_t width = channel_tile_width(accumulators, nv);
    const int64_t chunks = (OW + width - 1) / width, tp = (OW + chunks - 1) / chunks;
    for (int64_t bg = 0; bg < nb; bg += sub) {
      open("");
      block_bias_vectors(bias, lanes, size_t(bg * kWeightBlock), size_t(sub * kWeightBlock));
      // One chunk of `size` pixels from q0: from `first` (static) or, where first < 0, from a
      // loop's q0 (a chunk in the middle of the row, every tap inside).
      auto chunk = [&](int64_t first, int64_t size) {
        auto used = [&](int64_t j, int64_t kw) { return first < 0 || inside(first + j, kw); };
        for (int64_t j = 0; j < size; ++j)
          for (int64_t v = 0; v < nv; ++v) line(fmt::format("vec a{}_{} = bv{};", j, v, v));
        open(fmt::format("for (int64_t c = 0; c < {}; ++c)", C));
        line(fmt::format("const float* xc = xg + c * {} * {};", H, W));
        line(fmt::format("const float* wc = wb + {} + c * {};", bg * block_weights,
                         KH * KW * kWeightBlock));
        open(fmt::format("for (int64_t kh = 0; kh < {}; ++kh)", KH));
        line(fmt::format("const int64_t ih = {} * {} - {} + kh * {};", oh, sh, ph, dh));
        line(fmt::format("if (ih < 0 || ih >= {}) continue;", H));
        line(fmt::format("const float* xr = xc + ih * {};", W));
        line(fmt::format("const float* wk = wc + kh * {};", KW * kWeightBlock));
        for (int64_t kw = 0; kw < KW; ++kw) {
          bool any = false;
          for (int64_t j = 0; j < size; ++j) any = any || used(j, kw);
          if (!any) continue;
          for (int64_t v = 0; v < nv; ++v)
            line(fmt::format(
                "vec w{}_{}; memcpy(&w{}_{}, wk + {}, sizeof(vec)); EQF_IN_REGISTER(w{}_{});", kw,
                v, kw, v, v / per_block * block_weights + kw * kWeightBlock + v % per_block * lanes,
                kw, v));
          for (int64_t j = 0; j < size; ++j) {
            if (!used(j, kw)) continue;
            const std::string at = first < 0
                                       ? fmt::format("(q0 + {}) * {} - {} + {}", j, sw, pw, kw * dw)
                                       : std::to_string(column(first + j, kw));
            std::string sums;
            for (int64_t v = 0; v < nv; ++v)
              sums += fmt::format(" a{}_{} += p * w{}_{};", j, v, kw, v);
            line(fmt::format("{{ const float p = xr[{}];{} }}", at, sums));
          }
        }
        close();
        close();
        // Each pixel's channels stored (and their epilogue computed) by a loop, not unrolled,
        // read from copies of its vectors (lane_of).
        for (int64_t j = 0; j < size; ++j) {
          const std::string e = fresh("e"), u = fresh("u");
          std::vector<std::string> parts;
          for (int64_t v = 0; v < nv; ++v) {
            parts.push_back(fmt::format("{}_{}", e, v));
            line(fmt::format("const vec {} = a{}_{};", parts.back(), j, v));
          }
          open(fmt::format("for (int {} = 0; {} < {}; ++{})", u, u, sub * kWeightBlock, u));
          const std::string q = first < 0 ? fmt::format("(q0 + {})", j) : std::to_string(first + j);
          Index at = {r[0], fmt::format("(m0 + {})", iadd(std::to_string(bg * kWeightBlock), u)),
                      oh, q};
          store_output(out, linear(out, at), at, lane_of(parts, lanes, u));
          close();
        }
      };
      // Chunks in the middle of the row (full, every tap inside) share a loop; the others are
      // printed each at its place.
      auto middle = [&](int64_t q0) {
        if (q0 + tp > OW) return false;
        for (int64_t j = 0; j < tp; ++j)
          for (int64_t kw = 0; kw < KW; ++kw)
            if (!inside(q0 + j, kw)) return false;
        return true;
      };
      for (int64_t q0 = 0; q0 < OW;) {
        int64_t end = q0;
        while (end < OW && middle(end)) end += tp;
        if (end - q0 >= 2 * tp) {
          open(fmt::format("for (int64_t q0 = {}; q0 < {}; q0 += {})", q0, end, tp));
          chunk(-1, tp);
          close();
          q0 = end;
          continue;
        }
        const int64_t size = std::min(tp, OW - q0);
        open("");
        chunk(q0, size);
        close();
        q0 += size;
      }
      close();
    }
  });
  return fmt::format("{} * {} * {}", dim(out, 0), blocks / nb, dim(out, 2));
}

// A 1x1 convolution whose weights the plan holds as panels of W^T (Stage::weight_blocks), as a
// matrix product per image, out^T = X^T W^T: its rows the output pixels, its columns the output
// channels, K its input channels, in the register tiles of the matrix products (row_tile). Each
// load of a panel's channels feeds every pixel of the tile, and no lane idles on rows of 7 or 14
// pixels, where the row tiles (body_conv_tiles) kept a vector per row and channel. Pixel p reads
// input pixel (p / OW * sh, p % OW * sw) of each channel (a stride of H * W along K) and writes
// its channels' rows of the output. Items are blocks of pixels by panels, as the matrix
// products' (by panel where the weights take kPanelMajorBytes or more).
std::string Writer::body_conv_product(const Stage& s) {
  const ir::Node& n = g_.node(s.node);
  const ValueId x = n.inputs[0], out = s.output, panels = *s.weight_blocks;
  const auto& ws = type(n.inputs[1]).shape;
  const int64_t M = ws[0].value(), C = ws[1].value();
  const auto win = window_of(g_, n, {1, 1});
  const int64_t sh = win[0].stride, sw = win[1].stride;
  const int64_t H = type(x).shape[2].value(), W = type(x).shape[3].value();
  const int64_t OW = type(out).shape[3].value(), P = type(out).shape[2].value() * OW;
  // Rows per block: as a matrix product's (body_matmul_rows), over the pixels of an image.
  const int64_t mb = fit_block_rows(P < kMatmulFewRows ? 4 : kMatmulBlockRows, P);
  const bool ragged = mb > 1 && P % mb != 0;
  const int64_t blocks = (P + mb - 1) / mb, panel_count = (M + kPanelWidth - 1) / kPanelWidth;
  const bool by_panel = M * C * int64_t(sizeof(float)) >= kPanelMajorBytes;
  line(fmt::format("const int64_t img = i / {};", blocks * panel_count));
  line(fmt::format("const int64_t nc = i % {} {} {};", blocks * panel_count, by_panel ? "/" : "%",
                   by_panel ? blocks : panel_count));
  line(fmt::format("const int64_t m0 = i % {} {} {} * {};", blocks * panel_count,
                   by_panel ? "%" : "/", by_panel ? blocks : panel_count, mb));
  if (ragged) line(fmt::format("const int64_t mr = {} - m0 < {} ? {} - m0 : {};", P, mb, P, mb));
  line(fmt::format("const float* a = {} + img * {};", ptr(x), C * H * W));
  line(fmt::format("const float* b = {} + nc * {};", ptr(panels), C * kPanelWidth));
  const ValueId bias = n.inputs.size() > 2 ? n.inputs[2] : ir::kNoValue;
  RowTile t;
  t.ct = "float";
  t.b_buffer = panels;
  t.K = std::to_string(C);
  t.a_step = std::to_string(H * W);
  const bool flat = sh == 1 && sw == 1 && H * W == P;  // pixel p reads input pixel p
  t.a_row = [&](const std::string& q) {
    const std::string p = iadd("m0", q);
    return flat ? p : fmt::format("{} / {} * {} + {} % {} * {}", p, OW, sh * W, p, OW, sw);
  };
  t.b_step = std::to_string(kPanelWidth);
  t.b_col = fmt::format("(n0 - nc * {})", kPanelWidth);
  t.panels = true;
  t.n0 = fmt::format("nc * {}", kPanelWidth);
  t.n1 = M % kPanelWidth == 0 ? fmt::format("(nc * {} + {})", kPanelWidth, kPanelWidth)
                              : fmt::format("(nc * {} + {} < {} ? nc * {} + {} : {})", kPanelWidth,
                                            kPanelWidth, M, kPanelWidth, kPanelWidth, M);
  t.what = "Conv '" + n.name + "'";
  t.row_store = [&](const std::string& q) {
    const std::string p = fresh("px"), oh = fresh("oh"), ow = fresh("ow");
    line(fmt::format("const int64_t {} = m0 + {};", p, q));
    line(fmt::format("const int64_t {} = {} / {}, {} = {} % {};", oh, p, OW, ow, p, OW));
    return std::function<void(const std::string&, const std::string&)>(
        [this, out, p, oh, ow, bias, P, M](const std::string& col, const std::string& v) {
          const std::string value =
              bias == ir::kNoValue ? v : fmt::format("{} + (float){}", v, elem(bias, Index{col}));
          const Index at = {"img", col, oh, ow};
          store_output(out, fmt::format("(img * {} + {} * {} + {})", M * P, col, P, p), at, value);
        });
  };
  row_blocks("float", mb, ragged,
             [&](int lanes, int accumulators, int64_t tm, const std::string& first) {
               row_tile(t, lanes, accumulators, tm, first);
             });
  return fmt::format("{} * {}", dim(out, 0), blocks * panel_count);
}

}  // namespace eqfuse::codegen::detail
