#include "rules/prove/encode.h"

#include <fmt/format.h>

#include <optional>

#include "ir/broadcast.h"
#include "ir/kernel_body.h"
#include "ir/op_table.h"
#include "ir/scalar_expr.h"
#include "support/error.h"

namespace eqfuse::rules::prove {

namespace {

std::vector<int64_t> static_dims(const ir::Value& v) {
  if (!v.type.shape.is_static())
    fail(fmt::format("the prover needs static shapes; '{}' is {}", v.name, v.type.str()));
  return v.type.shape.static_dims();
}

[[noreturn]] void unsupported(const ir::Node& node, const std::string& why) {
  throw Error(fmt::format("{} '{}': {}", node.op_type, node.name, why), Error::Kind::Unsupported);
}

z3::expr floor(const z3::expr& x) {
  z3::expr i(x.ctx(), Z3_mk_real2int(x.ctx(), x));
  return z3::to_real(i);
}

z3::expr truth(z3::context& c, const z3::expr& cond) {
  return z3::ite(cond, c.real_val(1), c.real_val(0));
}

z3::expr to_int(const z3::expr& x) {
  return z3::expr(x.ctx(), Z3_mk_real2int(x.ctx(), x));
}

// Round half to even (std::nearbyint in the default rounding mode, ONNX Round): floor(x + 1/2),
// one less when x + 1/2 is a whole odd number (x was a tie and rounding up made it odd).
z3::expr round_half_even(const z3::expr& x) {
  z3::context& c = x.ctx();
  z3::expr shifted = x + c.real_val(1, 2);
  z3::expr f = to_int(shifted);
  z3::expr tie = z3::to_real(f) == shifted;
  z3::expr odd = z3::mod(f, c.int_val(2)) == c.int_val(1);
  return z3::to_real(z3::ite(tie && odd, f - c.int_val(1), f));
}

// Integer division and remainders as the interpreter computes them (ir/scalar_expr.cpp): div
// truncates toward zero, fmod takes the sign of the dividend, mod that of the divisor, and all
// three give 0 for a zero divisor. Z3's div/mod are Euclidean (0 <= mod < |b|), so the results
// are adjusted from there. Both operands are whole numbers read as reals.
enum class IntDivision { Div, Mod, FMod };
z3::expr integer_division(IntDivision kind, const z3::expr& ra, const z3::expr& rb) {
  z3::context& c = ra.ctx();
  z3::expr a = to_int(ra), b = to_int(rb);
  z3::expr zero = c.int_val(0), one = c.int_val(1);
  z3::expr q = a / b;                         // Euclidean quotient (b != 0 where it is used)
  z3::expr r = z3::mod(a, b);                 // 0 <= r < |b|
  z3::expr round_up = a < zero && r != zero;  // truncation differs from the Euclidean result
  z3::expr result(c);
  switch (kind) {
    case IntDivision::Div:
      result = z3::ite(round_up, q + z3::ite(b > zero, one, -one), q);
      break;
    case IntDivision::FMod:
      result = z3::ite(round_up, r - z3::ite(b > zero, b, -b), r);
      break;
    case IntDivision::Mod:
      result = z3::ite(b < zero && r != zero, r + b, r);
      break;
  }
  return z3::to_real(z3::ite(b == zero, zero, result));
}

// Floating fmod and mod (x - y * trunc(x / y), with the divisor's sign for mod) over the reals,
// x / y being x * recip(y) as everywhere else (the interpreter gives NaN for y = 0).
z3::expr real_fmod(Primitives& prims, const z3::expr& x, const z3::expr& y, bool divisor_sign) {
  z3::context& c = x.ctx();
  z3::expr zero = c.real_val(0);
  z3::expr q = x * prims.recip(y);
  z3::expr trunc = z3::ite(q >= zero, z3::to_real(to_int(q)), -z3::to_real(to_int(-q)));
  z3::expr r = x - y * trunc;
  if (!divisor_sign) return r;
  return z3::ite(r != zero && ((r < zero) != (y < zero)), r + y, r);
}

}  // namespace

// Encodes the nodes of one graph, in order.
class NodeEncoder {
 public:
  NodeEncoder(Encoder& enc, const ir::Graph& graph)
      : enc_(enc), prims_(enc.prims_), c_(prims_.ctx()), graph_(graph) {}

  Encoding run() {
    Encoding out;
    for (ir::ValueId id : graph_.inputs()) {
      const ir::Value& v = graph_.value(id);
      Terms t;
      int64_t n = ir::product(static_dims(v));
      // Integer inputs range over the integers (the reals they are read as are whole numbers).
      bool integral = ir::is_integral(v.type.dtype);
      for (int64_t i = 0; i < n; ++i) {
        std::string name = fmt::format("{}[{}]", v.name, i);
        t.push_back(integral ? z3::to_real(c_.int_const(name.c_str()))
                             : c_.real_const(name.c_str()));
      }
      values_.emplace(id, t);
      out.inputs.push_back(std::move(t));
    }
    for (const ir::Node& node : graph_.nodes()) encode(node);
    for (ir::ValueId id : graph_.outputs()) out.outputs.push_back(terms(id));
    return out;
  }

 private:
  const Terms& terms(ir::ValueId id) {
    auto it = values_.find(id);
    if (it != values_.end()) return it->second;
    const ir::Value& v = graph_.value(id);
    if (!v.is_weight()) fail(fmt::format("value '{}' has no encoding", v.name));
    auto data = graph_.weight_data(id);
    Terms t;
    for (int64_t i = 0; i < data->numel(); ++i) t.push_back(real_numeral(c_, data->get(i)));
    return values_.emplace(id, std::move(t)).first->second;
  }

  void set_output(const ir::Node& node, size_t k, Terms t) {
    const ir::Value& v = graph_.value(node.outputs[k]);
    if (static_cast<int64_t>(t.size()) != ir::product(static_dims(v)))
      unsupported(node, "encoding size does not match the inferred type " + v.type.str());
    values_.emplace(node.outputs[k], std::move(t));
  }

  void encode(const ir::Node& node) {
    if (node.is_opaque()) unsupported(node, "opaque op");
    ir::OpContext ctx = ir::make_context(graph_, node);
    ir::ScalarExprPtr scalar;
    try {
      scalar = ir::node_scalar_expr(ctx);
    } catch (const Error&) {
      scalar = nullptr;
    }
    const std::string& op = node.op_type;
    if (scalar) return elementwise(node, *scalar);
    if (op == "Softmax" || op == "LogSoftmax") return softmax(node, ctx, op == "LogSoftmax");
    if (op == "LayerNormalization") return layer_norm(node, ctx);
    if (op == "BatchNormalization") return batch_norm(node, ctx);
    structured(node);
  }

  z3::expr scalar(const ir::ScalarExpr& e, const std::vector<z3::expr>& x) {
    using ir::ScalarOp;
    auto arg = [&](size_t i) { return scalar(*e.args[i], x); };
    z3::expr zero = c_.real_val(0);
    switch (e.op) {
      case ScalarOp::Input:
        return x.at(static_cast<size_t>(e.input));
      case ScalarOp::Const:
        return real_numeral(c_, e.value);
      case ScalarOp::Attr:
        fail("unbound attribute @" + e.attr + " in an op meaning");
      case ScalarOp::Neg:
        return -arg(0);
      case ScalarOp::Abs: {
        z3::expr a = arg(0);
        return z3::ite(a >= zero, a, -a);
      }
      case ScalarOp::Sign: {
        z3::expr a = arg(0);
        return z3::ite(a > zero, c_.real_val(1), z3::ite(a < zero, c_.real_val(-1), zero));
      }
      case ScalarOp::Floor:
        return floor(arg(0));
      case ScalarOp::Ceil:
        return -floor(-arg(0));
      case ScalarOp::Recip:
        return prims_.recip(arg(0));
      case ScalarOp::Not:
        return truth(c_, arg(0) == zero);
      case ScalarOp::IsNaN:
      case ScalarOp::IsInf:
        return zero;  // reals are finite
      case ScalarOp::Add:
        return arg(0) + arg(1);
      case ScalarOp::Sub:
        return arg(0) - arg(1);
      case ScalarOp::Mul:
        return arg(0) * arg(1);
      case ScalarOp::Div:
        if (integral_) return integer_division(IntDivision::Div, arg(0), arg(1));
        return arg(0) * prims_.recip(arg(1));
      case ScalarOp::Pow:
        return prims_.apply("pow", {arg(0), arg(1)});
      case ScalarOp::Max: {
        z3::expr a = arg(0), b = arg(1);
        return z3::ite(a >= b, a, b);
      }
      case ScalarOp::Min: {
        z3::expr a = arg(0), b = arg(1);
        return z3::ite(a <= b, a, b);
      }
      case ScalarOp::Eq:
        return truth(c_, arg(0) == arg(1));
      case ScalarOp::Ne:
        return truth(c_, arg(0) != arg(1));
      case ScalarOp::Lt:
        return truth(c_, arg(0) < arg(1));
      case ScalarOp::Le:
        return truth(c_, arg(0) <= arg(1));
      case ScalarOp::Gt:
        return truth(c_, arg(0) > arg(1));
      case ScalarOp::Ge:
        return truth(c_, arg(0) >= arg(1));
      case ScalarOp::And:
        return truth(c_, arg(0) != zero && arg(1) != zero);
      case ScalarOp::Or:
        return truth(c_, arg(0) != zero || arg(1) != zero);
      case ScalarOp::Xor:
        return truth(c_, (arg(0) != zero) != (arg(1) != zero));
      case ScalarOp::Select:
        return z3::ite(arg(0) != zero, arg(1), arg(2));
      case ScalarOp::Round:
        return round_half_even(arg(0));
      case ScalarOp::Mod:
        if (integral_) return integer_division(IntDivision::Mod, arg(0), arg(1));
        return real_fmod(prims_, arg(0), arg(1), true);
      case ScalarOp::FMod:
        if (integral_) return integer_division(IntDivision::FMod, arg(0), arg(1));
        return real_fmod(prims_, arg(0), arg(1), false);
      default:
        // exp, log, sqrt, tanh, erf, trigonometric and hyperbolic functions.
        return prims_.apply(ir::scalar_op_name(e.op), {arg(0)});
    }
  }

  void elementwise(const ir::Node& node, const ir::ScalarExpr& e) {
    const ir::Value& out = graph_.value(node.outputs[0]);
    // Integer ops divide as integers (the interpreter computes them in int64; Z3 over the
    // unbounded integers, so wrap-around on overflow is outside what a proof covers).
    integral_ = ir::is_integral(out.type.dtype);
    // Cast's meaning is the identity over the reals only when nothing is rounded away: a cast
    // of a float to an integer truncates, one to bool tests for zero.
    if ((node.op_type == "Cast" || node.op_type == "CastLike") && !node.inputs.empty() &&
        node.inputs[0] != ir::kNoValue &&
        ir::is_floating(graph_.value(node.inputs[0]).type.dtype) &&
        !ir::is_floating(out.type.dtype))
      unsupported(node, "a cast from a float to an integer or bool type");
    std::vector<int64_t> dims = static_dims(out);
    ir::IndexIterator it(dims);
    std::vector<const Terms*> ins;
    for (ir::ValueId in : node.inputs) {
      if (in == ir::kNoValue) unsupported(node, "omitted input of an elementwise op");
      ins.push_back(&terms(in));
      it.add_strides(ir::broadcast_strides(static_dims(graph_.value(in)), dims));
    }
    Terms result;
    int64_t n = ir::product(dims);
    std::vector<z3::expr> x;
    for (int64_t i = 0; i < n; ++i, it.next()) {
      x.clear();
      for (size_t k = 0; k < ins.size(); ++k)
        x.push_back((*ins[k])[static_cast<size_t>(it.offset(k))]);
      try {
        result.push_back(scalar(e, x));
      } catch (const Error& err) {
        unsupported(node, err.what());
      }
    }
    set_output(node, 0, std::move(result));
  }

  // Softmax and LogSoftmax along one axis (opset 13), from exp, sum, recip and log.
  void softmax(const ir::Node& node, const ir::OpContext& ctx, bool log) {
    const Terms& x = terms(node.inputs[0]);
    std::vector<int64_t> dims = static_dims(graph_.value(node.inputs[0]));
    int64_t axis = ir::normalize_axis(ctx.attr_int("axis"), static_cast<int64_t>(dims.size()));
    int64_t n = dims[static_cast<size_t>(axis)];
    int64_t inner = 1, outer = 1;
    for (size_t d = 0; d < dims.size(); ++d) {
      if (static_cast<int64_t>(d) < axis) outer *= dims[d];
      if (static_cast<int64_t>(d) > axis) inner *= dims[d];
    }
    Terms y(x.size(), c_.real_val(0));
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t j = 0; j < inner; ++j) {
        auto at = [&](int64_t i) { return static_cast<size_t>((o * n + i) * inner + j); };
        z3::expr sum = c_.real_val(0);
        for (int64_t i = 0; i < n; ++i) sum = sum + prims_.apply("exp", {x[at(i)]});
        for (int64_t i = 0; i < n; ++i) {
          y[at(i)] = log ? x[at(i)] - prims_.apply("log", {sum})
                         : prims_.apply("exp", {x[at(i)]}) * prims_.recip(sum);
        }
      }
    }
    set_output(node, 0, std::move(y));
  }

  // (x - mean) / sqrt(var + eps), mean and var over `count` elements of x read at `index`.
  std::vector<z3::expr> normalize(const std::vector<z3::expr>& xs, double eps) {
    z3::expr n = c_.real_val(static_cast<int>(xs.size()));
    z3::expr sum = c_.real_val(0);
    for (const z3::expr& v : xs) sum = sum + v;
    z3::expr mean = sum * prims_.recip(n);
    z3::expr sq = c_.real_val(0);
    for (const z3::expr& v : xs) sq = sq + (v - mean) * (v - mean);
    z3::expr inv =
        prims_.recip(prims_.apply("sqrt", {sq * prims_.recip(n) + real_numeral(c_, eps)}));
    std::vector<z3::expr> out;
    for (const z3::expr& v : xs) out.push_back((v - mean) * inv);
    return out;
  }

  void layer_norm(const ir::Node& node, const ir::OpContext& ctx) {
    if (node.outputs.size() > 1) unsupported(node, "only the first output is encoded");
    const Terms& x = terms(node.inputs[0]);
    std::vector<int64_t> dims = static_dims(graph_.value(node.inputs[0]));
    int64_t axis = ir::normalize_axis(ctx.attr_int("axis"), static_cast<int64_t>(dims.size()));
    std::vector<int64_t> norm_dims(dims.begin() + axis, dims.end());
    int64_t n = ir::product(norm_dims);
    int64_t outer = static_cast<int64_t>(x.size()) / std::max<int64_t>(n, 1);
    auto param = [&](size_t slot) -> std::optional<std::pair<const Terms*, std::vector<int64_t>>> {
      if (slot >= node.inputs.size() || node.inputs[slot] == ir::kNoValue) return std::nullopt;
      std::vector<int64_t> pd = static_dims(graph_.value(node.inputs[slot]));
      std::vector<int64_t> map;
      ir::IndexIterator it(norm_dims);
      it.add_strides(ir::broadcast_strides(pd, norm_dims));
      for (int64_t i = 0; i < n; ++i, it.next()) map.push_back(it.offset(0));
      return std::make_pair(&terms(node.inputs[slot]), map);
    };
    auto scale = param(1);
    auto bias = param(2);
    Terms y;
    for (int64_t o = 0; o < outer; ++o) {
      std::vector<z3::expr> xs(x.begin() + o * n, x.begin() + (o + 1) * n);
      std::vector<z3::expr> ys = normalize(xs, ctx.attr_float("epsilon"));
      for (int64_t i = 0; i < n; ++i) {
        z3::expr v = ys[static_cast<size_t>(i)];
        size_t k = static_cast<size_t>(i);
        if (scale) v = v * (*scale->first)[static_cast<size_t>(scale->second[k])];
        if (bias) v = v + (*bias->first)[static_cast<size_t>(bias->second[k])];
        y.push_back(v);
      }
    }
    set_output(node, 0, std::move(y));
  }

  void batch_norm(const ir::Node& node, const ir::OpContext& ctx) {
    if (node.outputs.size() > 1 || (ctx.has_attr("training_mode") && ctx.attr_int("training_mode")))
      unsupported(node, "only inference mode is encoded");
    const Terms& x = terms(node.inputs[0]);
    std::vector<int64_t> dims = static_dims(graph_.value(node.inputs[0]));
    if (dims.size() < 2) unsupported(node, "input of rank < 2");
    const Terms& scale = terms(node.inputs[1]);
    const Terms& bias = terms(node.inputs[2]);
    const Terms& mean = terms(node.inputs[3]);
    const Terms& var = terms(node.inputs[4]);
    int64_t channels = dims[1];
    int64_t inner = ir::product(std::vector<int64_t>(dims.begin() + 2, dims.end()));
    z3::expr eps = real_numeral(c_, ctx.attr_float("epsilon"));
    Terms y;
    for (size_t i = 0; i < x.size(); ++i) {
      size_t ch = static_cast<size_t>((static_cast<int64_t>(i) / inner) % channels);
      z3::expr inv = prims_.recip(prims_.apply("sqrt", {var[ch] + eps}));
      y.push_back((x[i] - mean[ch]) * inv * scale[ch] + bias[ch]);
    }
    set_output(node, 0, std::move(y));
  }

  // A multi-affine op or a max/min window, read off the kernel.
  void structured(const ir::Node& node) {
    std::vector<ProbeInput> inputs;
    std::vector<ir::Tensor> fixed_storage(node.inputs.size());
    std::string key = node.op_type + node.attrs.str();
    for (size_t s = 0; s < node.inputs.size(); ++s) {
      ProbeInput in;
      ir::ValueId id = node.inputs[s];
      if (id == ir::kNoValue) {
        in.present = false;
        key += "|-";
        inputs.push_back(in);
        continue;
      }
      const ir::Value& v = graph_.value(id);
      in.dims = static_dims(v);
      in.dtype = v.type.dtype;
      if (v.is_weight()) {
        fixed_storage[s] = *graph_.weight_data(id);
      } else if (!ir::is_floating(v.type.dtype)) {
        // An integer value computed inside the graph (a shape): fixed when it is all numerals.
        const Terms& t = terms(id);
        fixed_storage[s] = ir::Tensor(v.type.dtype, in.dims);
        for (size_t i = 0; i < t.size(); ++i) {
          if (!t[i].is_numeral()) unsupported(node, "symbolic integer input");
          fixed_storage[s].set(static_cast<int64_t>(i), numeral_to_double(t[i]));
        }
      }
      if (v.is_weight() || !ir::is_floating(v.type.dtype)) {
        in.fixed = &fixed_storage[s];
        key += "|=" + fixed_storage[s].str(1 << 20);
      } else {
        key += "|" + v.type.str();
      }
      inputs.push_back(in);
    }
    auto poly = enc_.polynomials_.find(key);
    if (poly == enc_.polynomials_.end() && !enc_.windows_.count(key)) {
      if (auto p = probe_multiaffine(graph_, node, inputs)) {
        poly = enc_.polynomials_.emplace(key, std::move(*p)).first;
      } else if (auto w = probe_window(graph_, node, inputs)) {
        enc_.windows_.emplace(key, std::move(*w));
      } else {
        unsupported(node, "its kernel is neither multi-affine nor a max/min window at " +
                              key.substr(node.op_type.size()));
      }
    }
    std::vector<const Terms*> args;
    for (size_t s = 0; s < node.inputs.size(); ++s)
      args.push_back(inputs[s].present && !inputs[s].fixed ? &terms(node.inputs[s]) : nullptr);
    if (poly != enc_.polynomials_.end()) {
      const Polynomials& p = poly->second;
      if (p.size() < node.outputs.size()) unsupported(node, "kernel gave too few outputs");
      for (size_t k = 0; k < node.outputs.size(); ++k) {
        Terms out;
        for (const auto& element : p[k]) {
          z3::expr sum = c_.real_val(0);
          for (const Monomial& m : element) {
            z3::expr term = rational(m.coefficient);
            for (const Factor& f : m.factors)
              term = term * (*args[f.input])[static_cast<size_t>(f.element)];
            sum = sum + term;
          }
          out.push_back(sum);
        }
        set_output(node, k, std::move(out));
      }
      return;
    }
    const Windows& w = enc_.windows_.at(key);
    for (size_t k = 0; k < node.outputs.size(); ++k) {
      Terms out;
      for (const auto& window : w.outputs.at(k)) {
        z3::expr best = (*args[0])[static_cast<size_t>(window[0])];
        for (int64_t i : window) {
          z3::expr v = (*args[0])[static_cast<size_t>(i)];
          best = w.is_min ? z3::ite(v < best, v, best) : z3::ite(v > best, v, best);
        }
        out.push_back(best);
      }
      set_output(node, k, std::move(out));
    }
  }

  // Probed coefficients are small rationals (1, 1/3, alpha) computed in floating point.
  z3::expr rational(double v) {
    for (int64_t den = 1; den <= 10000; ++den) {
      double num = std::round(v * static_cast<double>(den));
      if (std::abs(num / static_cast<double>(den) - v) <= 1e-7 * std::abs(v) &&
          std::abs(num) < 1e15)
        return c_.real_val(fmt::format("{}/{}", static_cast<int64_t>(num), den).c_str());
    }
    return real_numeral(c_, v);
  }

  Encoder& enc_;
  Primitives& prims_;
  z3::context& c_;
  const ir::Graph& graph_;
  std::map<ir::ValueId, Terms> values_;
  bool integral_ = false;  // the elementwise op being encoded computes over integers
};

Encoding Encoder::encode(const ir::Graph& graph) {
  // A kernel means its body: the encoding is the body's ops, expanded in place.
  if (ir::has_kernels(graph)) {
    ir::Graph inlined = ir::inline_kernels(graph);
    return NodeEncoder(*this, inlined).run();
  }
  return NodeEncoder(*this, graph).run();
}

}  // namespace eqfuse::rules::prove
