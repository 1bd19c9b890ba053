// Op group "recurrent": RNN, GRU and LSTM as ONNX defines them (forward, reverse and
// bidirectional; optional bias, sequence_lens, initial states and LSTM peepholes; GRU's
// linear_before_reset; activations with their alpha/beta; clip; layout 0 and 1). They cannot be
// written as one index expression, so they are opaque: the kernel, computed in double, is the
// reference.
#include <algorithm>
#include <cmath>

#include "ir/ops/structured_common.h"

namespace eqfuse::ir {

using namespace structured;

namespace {

enum class Cell { Rnn, Gru, Lstm };

int gate_count(Cell c) {
  return c == Cell::Rnn ? 1 : c == Cell::Gru ? 3 : 4;
}

struct Activation {
  std::string name;
  double alpha = 0, beta = 0;
  double operator()(double x) const {
    if (name == "Sigmoid") return 1 / (1 + std::exp(-x));
    if (name == "Tanh") return std::tanh(x);
    if (name == "Relu") return std::max(0.0, x);
    if (name == "Affine") return alpha * x + beta;
    if (name == "LeakyRelu") return x >= 0 ? x : alpha * x;
    if (name == "ThresholdedRelu") return x > alpha ? x : 0;
    if (name == "ScaledTanh") return alpha * std::tanh(beta * x);
    if (name == "HardSigmoid") return std::clamp(alpha * x + beta, 0.0, 1.0);
    if (name == "Elu") return x >= 0 ? x : alpha * (std::exp(x) - 1);
    if (name == "Softsign") return x / (1 + std::abs(x));
    return std::log1p(std::exp(x));  // Softplus
  }
};

// ONNX spells activation names case-insensitively in practice ("sigmoid", "Tanh").
std::string canonical_activation(const OpContext& ctx, const std::string& name) {
  static const char* known[] = {
      "Sigmoid",    "Tanh",        "Relu", "Affine",   "LeakyRelu", "ThresholdedRelu",
      "ScaledTanh", "HardSigmoid", "Elu",  "Softsign", "Softplus"};
  for (const char* k : known) {
    std::string a = k, b = name;
    std::transform(a.begin(), a.end(), a.begin(), ::tolower);
    std::transform(b.begin(), b.end(), b.begin(), ::tolower);
    if (a == b) return k;
  }
  unsupported(ctx, "activation '" + name + "' is not supported");
}

// The activations of every direction (f, g, h per direction), with alpha and beta consumed in
// order by the activations that take them and ONNX's defaults otherwise.
std::vector<Activation> activations(const OpContext& ctx, Cell cell, int directions) {
  std::vector<std::string> names;
  if (const AttrValue* v = ctx.node.attrs.find("activations"))
    if (auto* s = std::get_if<std::vector<std::string>>(v)) names = *s;
  std::vector<std::string> defaults = cell == Cell::Rnn ? std::vector<std::string>{"Tanh"}
                                      : cell == Cell::Gru
                                          ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                          : std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"};
  size_t per = defaults.size();
  if (names.empty())
    for (int d = 0; d < directions; ++d)
      names.insert(names.end(), defaults.begin(), defaults.end());
  if (names.size() == per && directions == 2)
    names.insert(names.end(), defaults.begin(), defaults.end());
  // ONNX's schema default for RNN lists two activations (forward and reverse) even for one
  // direction; the first ones apply.
  if (names.size() > per * size_t(directions)) names.resize(per * size_t(directions));
  if (names.size() != per * size_t(directions))
    ctx.fail("activations has " + std::to_string(names.size()) + " entries, expected " +
             std::to_string(per * size_t(directions)));
  std::vector<double> alphas = ctx.has_attr("activation_alpha")
                                   ? ctx.attr_floats("activation_alpha")
                                   : std::vector<double>{};
  std::vector<double> betas =
      ctx.has_attr("activation_beta") ? ctx.attr_floats("activation_beta") : std::vector<double>{};
  size_t ai = 0, bi = 0;
  std::vector<Activation> out;
  for (const std::string& n : names) {
    Activation a{canonical_activation(ctx, n)};
    auto take_alpha = [&](double fallback) {
      a.alpha = ai < alphas.size() ? alphas[ai++] : fallback;
    };
    auto take_beta = [&](double fallback) { a.beta = bi < betas.size() ? betas[bi++] : fallback; };
    if (a.name == "Affine" || a.name == "ScaledTanh") {
      take_alpha(1.0);
      take_beta(a.name == "Affine" ? 0.0 : 1.0);
    } else if (a.name == "LeakyRelu") {
      take_alpha(0.01);
    } else if (a.name == "ThresholdedRelu" || a.name == "Elu") {
      take_alpha(1.0);
    } else if (a.name == "HardSigmoid") {
      take_alpha(0.2);
      take_beta(0.5);
    }
    out.push_back(a);
  }
  return out;
}

int direction_count(const OpContext& ctx) {
  std::string d = ctx.attr_string("direction");
  if (d == "forward" || d == "reverse") return 1;
  if (d == "bidirectional") return 2;
  ctx.fail("direction '" + d + "' is not known");
}

Dim hidden_dim(const OpContext& ctx) {
  if (ctx.has_attr("hidden_size")) return Dim(ctx.attr_int("hidden_size"));
  const Shape& r = ctx.input_type(2).shape;
  if (r.has_rank() && r.rank() == 3) return r[2];
  return Dim::unknown();
}

std::vector<TensorType> recurrent_infer(const OpContext& ctx, Cell cell) {
  const TensorType& x = ctx.input_type(0);
  size_t outs = cell == Cell::Lstm ? 3 : 2;
  if (!x.shape.has_rank()) return std::vector<TensorType>(outs, {x.dtype, Shape::unranked()});
  if (x.shape.rank() != 3) ctx.fail("X must have rank 3");
  bool batch_first = ctx.attr_int("layout") != 0;
  Dim seq = x.shape[batch_first ? 1 : 0], batch = x.shape[batch_first ? 0 : 1];
  Dim dirs(direction_count(ctx)), hidden = hidden_dim(ctx);
  Shape y = batch_first ? Shape({batch, seq, dirs, hidden}) : Shape({seq, dirs, batch, hidden});
  Shape state = batch_first ? Shape({batch, dirs, hidden}) : Shape({dirs, batch, hidden});
  std::vector<TensorType> types = {{x.dtype, y}, {x.dtype, state}};
  if (cell == Cell::Lstm) types.push_back({x.dtype, state});
  return types;
}

std::vector<Tensor> recurrent_kernel(const OpContext& ctx, Cell cell) {
  const Tensor& x_in = value_of(ctx, 0);
  if (!is_floating(x_in.dtype())) unsupported(ctx, "needs a floating-point input");
  if (x_in.rank() != 3) ctx.fail("X must have rank 3");
  if (cell == Cell::Lstm && ctx.attr_int("input_forget") != 0)
    unsupported(ctx, "input_forget is not supported");
  const bool batch_first = ctx.attr_int("layout") != 0;
  const int64_t T = x_in.dims()[batch_first ? 1 : 0], B = x_in.dims()[batch_first ? 0 : 1],
                I = x_in.dims()[2];
  const int D = direction_count(ctx);
  const int64_t G = gate_count(cell);
  const Tensor& w_in = value_of(ctx, 1);
  const Tensor& r_in = value_of(ctx, 2);
  const int64_t H = r_in.dims().at(2);
  if (ctx.has_attr("hidden_size") && ctx.attr_int("hidden_size") != H)
    ctx.fail("hidden_size does not match R");
  if (w_in.dims() != std::vector<int64_t>{D, G * H, I} ||
      r_in.dims() != std::vector<int64_t>{D, G * H, H})
    ctx.fail("W or R has the wrong shape");
  auto opt = [&](size_t i) {
    return ctx.has_input(i) ? std::optional(value_of(ctx, i).to_doubles()) : std::nullopt;
  };
  const auto x = x_in.to_doubles(), w = w_in.to_doubles(), r = r_in.to_doubles();
  const auto bias = opt(3), h0 = opt(5);
  std::optional<std::vector<double>> c0, peep;
  if (cell == Cell::Lstm) {
    c0 = opt(6);
    peep = opt(7);
  }
  std::vector<int64_t> lens(size_t(B), T);
  if (ctx.has_input(4)) lens = value_of(ctx, 4).to_int64s();
  const auto acts = activations(ctx, cell, D);
  const size_t per = acts.size() / size_t(D);
  const double clip = ctx.has_attr("clip") ? ctx.attr_float("clip") : 0;
  const bool lbr = cell == Cell::Gru && ctx.attr_int("linear_before_reset") != 0;
  // Index helpers for the two layouts.
  auto x_at = [&](int64_t t, int64_t b) {
    return x.data() + (batch_first ? b * T + t : t * B + b) * I;
  };
  auto state_at = [&](int d, int64_t b) {
    return size_t(batch_first ? (b * D + d) * H : (d * B + b) * H);
  };
  std::vector<double> y(size_t(T * D * B * H), 0.0), yh(size_t(D * B * H), 0.0),
      yc(size_t(D * B * H), 0.0);
  auto y_at = [&](int64_t t, int d, int64_t b) {
    return size_t(batch_first ? ((b * T + t) * D + d) * H : ((t * D + d) * B + b) * H);
  };
  // Per-state inputs are stored [D, B, H] regardless of layout 0; with layout 1 as [B, D, H].
  std::vector<double> gx(size_t(G * H)), gh(size_t(G * H));
  for (int d = 0; d < D; ++d) {
    bool reverse = ctx.attr_string("direction") == "reverse" || d == 1;
    const double* W = w.data() + d * G * H * I;
    const double* R = r.data() + d * G * H * H;
    const double* Wb = bias ? bias->data() + d * 2 * G * H : nullptr;
    const double* Rb = bias ? Wb + G * H : nullptr;
    const Activation& f = acts[size_t(d) * per];
    const Activation& g = acts[size_t(d) * per + (per > 1 ? 1 : 0)];
    const Activation& hact = acts[size_t(d) * per + (per > 2 ? 2 : 0)];
    auto clipped = [&](double v) { return clip > 0 ? std::clamp(v, -clip, clip) : v; };
    for (int64_t b = 0; b < B; ++b) {
      std::vector<double> h(size_t(H), 0.0), c(size_t(H), 0.0);
      if (h0) std::copy_n(h0->data() + state_at(d, b), H, h.begin());
      if (c0) std::copy_n(c0->data() + state_at(d, b), H, c.begin());
      int64_t len = std::clamp<int64_t>(lens[size_t(b)], 0, T);
      for (int64_t step = 0; step < len; ++step) {
        int64_t t = reverse ? len - 1 - step : step;
        const double* xt = x_at(t, b);
        for (int64_t j = 0; j < G * H; ++j) {
          double sx = Wb ? Wb[j] : 0, sh = Rb ? Rb[j] : 0;
          for (int64_t i = 0; i < I; ++i) sx += xt[i] * W[j * I + i];
          for (int64_t k = 0; k < H; ++k) sh += h[size_t(k)] * R[j * H + k];
          gx[size_t(j)] = sx;
          gh[size_t(j)] = sh;
        }
        if (cell == Cell::Rnn) {
          for (int64_t j = 0; j < H; ++j) h[size_t(j)] = f(clipped(gx[size_t(j)] + gh[size_t(j)]));
        } else if (cell == Cell::Gru) {
          // gates z, r, h; the reset gate scales H(t-1) unit by unit before (or after) R_h.
          std::vector<double> z(static_cast<size_t>(H)), rg(z), hn(z);
          for (int64_t j = 0; j < H; ++j) {
            z[size_t(j)] = f(clipped(gx[size_t(j)] + gh[size_t(j)]));
            rg[size_t(j)] = f(clipped(gx[size_t(H + j)] + gh[size_t(H + j)]));
          }
          for (int64_t j = 0; j < H; ++j) {
            double pre;
            if (lbr) {
              pre = gx[size_t(2 * H + j)] + rg[size_t(j)] * gh[size_t(2 * H + j)];
            } else {
              double s = Rb ? Rb[2 * H + j] : 0;
              for (int64_t k = 0; k < H; ++k)
                s += rg[size_t(k)] * h[size_t(k)] * R[(2 * H + j) * H + k];
              pre = gx[size_t(2 * H + j)] + s;
            }
            double cand = g(clipped(pre));
            hn[size_t(j)] = (1 - z[size_t(j)]) * cand + z[size_t(j)] * h[size_t(j)];
          }
          h = hn;
        } else {
          // gates i, o, f, c; peepholes P = [Pi, Po, Pf]
          const double* P = peep ? peep->data() + d * 3 * H : nullptr;
          for (int64_t j = 0; j < H; ++j) {
            size_t J = size_t(j);
            double cp = c[J];
            double ig = f(clipped(gx[J] + gh[J] + (P ? P[j] * cp : 0)));
            double fg = f(clipped(gx[size_t(2 * H + j)] + gh[size_t(2 * H + j)] +
                                  (P ? P[2 * H + j] * cp : 0)));
            double cand = g(clipped(gx[size_t(3 * H + j)] + gh[size_t(3 * H + j)]));
            c[J] = fg * cp + ig * cand;
            double og =
                f(clipped(gx[size_t(H + j)] + gh[size_t(H + j)] + (P ? P[H + j] * c[J] : 0)));
            h[J] = og * hact(c[J]);
          }
        }
        std::copy(h.begin(), h.end(), y.begin() + int64_t(y_at(t, d, b)));
      }
      std::copy(h.begin(), h.end(), yh.begin() + int64_t(state_at(d, b)));
      std::copy(c.begin(), c.end(), yc.begin() + int64_t(state_at(d, b)));
    }
  }
  DType t = x_in.dtype();
  std::vector<int64_t> y_dims =
      batch_first ? std::vector<int64_t>{B, T, D, H} : std::vector<int64_t>{T, D, B, H};
  std::vector<int64_t> s_dims =
      batch_first ? std::vector<int64_t>{B, D, H} : std::vector<int64_t>{D, B, H};
  std::vector<Tensor> out = {Tensor::from_doubles(t, y_dims, y),
                             Tensor::from_doubles(t, s_dims, yh)};
  if (cell == Cell::Lstm) out.push_back(Tensor::from_doubles(t, s_dims, yc));
  return out;
}

}  // namespace

void register_recurrent_ops(OpTableBuilder& table) {
  for (auto [name, cell_binding] :
       {std::pair{"RNN", Cell::Rnn}, std::pair{"GRU", Cell::Gru}, std::pair{"LSTM", Cell::Lstm}}) {
    Cell cell = cell_binding;  // a lambda may not capture a structured binding (clang 14)
    OpDef d;
    d.name = name;
    d.min_inputs = 3;
    d.max_inputs = cell == Cell::Lstm ? 8 : 6;
    d.min_outputs = 0;
    d.max_outputs = cell == Cell::Lstm ? 3 : 2;
    d.attrs = {{"activation_alpha", AttrKind::Floats, std::nullopt},
               {"activation_beta", AttrKind::Floats, std::nullopt},
               {"activations", AttrKind::Strings, std::nullopt},
               {"clip", AttrKind::Float, std::nullopt},
               {"direction", AttrKind::String, AttrValue(std::string("forward"))},
               {"hidden_size", AttrKind::Int, std::nullopt},
               {"layout", AttrKind::Int, AttrValue(int64_t{0})}};
    if (cell == Cell::Lstm)
      d.attrs.push_back({"input_forget", AttrKind::Int, AttrValue(int64_t{0})});
    if (cell == Cell::Gru)
      d.attrs.push_back({"linear_before_reset", AttrKind::Int, AttrValue(int64_t{0})});
    d.fusion = FusionClass::Opaque;
    d.infer = [cell](const OpContext& ctx) { return recurrent_infer(ctx, cell); };
    d.work = [](const OpContext& ctx, const std::vector<TensorType>& outs) {
      OpWork w;
      for (size_t i = 0; i < ctx.num_inputs(); ++i)
        if (ctx.has_input(i)) w.bytes_read += type_bytes(ctx.input_type(i));
      for (const TensorType& t : outs) w.bytes_written += type_bytes(t);
      // Per step, per direction and batch row: the W and R mat-vecs of every gate.
      const TensorType& x = ctx.input_type(0);
      bool known = x.shape.has_rank() && x.shape.rank() == 3 && x.shape[2].is_static();
      double steps_rows = type_numel(x) / std::max(1.0, known ? double(x.shape[2].value()) : 1.0);
      double wr = type_numel(ctx.input_type(1)) + type_numel(ctx.input_type(2));
      w.flops = 2 * steps_rows * wr;
      return w;
    };
    d.kernel = [cell](const OpContext& ctx) { return recurrent_kernel(ctx, cell); };
    table.add(std::move(d));
  }
}

}  // namespace eqfuse::ir
