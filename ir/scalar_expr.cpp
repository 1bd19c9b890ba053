#include "ir/scalar_expr.h"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <limits>

#include "support/error.h"
#include "support/sexpr.h"

namespace eqfuse::ir {

namespace {
struct OpInfo {
  ScalarOp op;
  std::string_view name;
  int arity;
};
constexpr std::array<OpInfo, kNumScalarOps> kOps = {{
    {ScalarOp::Input, "input", 0}, {ScalarOp::Const, "const", 0}, {ScalarOp::Attr, "attr", 0},
    {ScalarOp::Neg, "neg", 1},     {ScalarOp::Abs, "abs", 1},     {ScalarOp::Exp, "exp", 1},
    {ScalarOp::Log, "log", 1},     {ScalarOp::Sqrt, "sqrt", 1},   {ScalarOp::Recip, "recip", 1},
    {ScalarOp::Tanh, "tanh", 1},   {ScalarOp::Erf, "erf", 1},     {ScalarOp::Sin, "sin", 1},
    {ScalarOp::Cos, "cos", 1},     {ScalarOp::Tan, "tan", 1},     {ScalarOp::Asin, "asin", 1},
    {ScalarOp::Acos, "acos", 1},   {ScalarOp::Atan, "atan", 1},   {ScalarOp::Sinh, "sinh", 1},
    {ScalarOp::Cosh, "cosh", 1},   {ScalarOp::Asinh, "asinh", 1}, {ScalarOp::Acosh, "acosh", 1},
    {ScalarOp::Atanh, "atanh", 1}, {ScalarOp::Floor, "floor", 1}, {ScalarOp::Ceil, "ceil", 1},
    {ScalarOp::Round, "round", 1}, {ScalarOp::Sign, "sign", 1},   {ScalarOp::Not, "not", 1},
    {ScalarOp::IsNaN, "isnan", 1}, {ScalarOp::IsInf, "isinf", 1}, {ScalarOp::Add, "add", 2},
    {ScalarOp::Sub, "sub", 2},     {ScalarOp::Mul, "mul", 2},     {ScalarOp::Div, "div", 2},
    {ScalarOp::Pow, "pow", 2},     {ScalarOp::Max, "max", 2},     {ScalarOp::Min, "min", 2},
    {ScalarOp::Mod, "mod", 2},     {ScalarOp::FMod, "fmod", 2},   {ScalarOp::Eq, "eq", 2},
    {ScalarOp::Ne, "ne", 2},       {ScalarOp::Lt, "lt", 2},       {ScalarOp::Le, "le", 2},
    {ScalarOp::Gt, "gt", 2},       {ScalarOp::Ge, "ge", 2},       {ScalarOp::And, "and", 2},
    {ScalarOp::Or, "or", 2},       {ScalarOp::Xor, "xor", 2},     {ScalarOp::Select, "select", 3},
}};
static_assert(kOps.back().op == ScalarOp::Select);

template <typename T>
T truthy(T v) {
  return v != T(0) ? T(1) : T(0);
}
}  // namespace

std::string_view scalar_op_name(ScalarOp op) {
  return kOps[static_cast<size_t>(op)].name;
}
int scalar_op_arity(ScalarOp op) {
  return kOps[static_cast<size_t>(op)].arity;
}
std::optional<ScalarOp> parse_scalar_op(std::string_view name) {
  for (const OpInfo& info : kOps) {
    if (info.arity > 0 && info.name == name) return info.op;
  }
  return std::nullopt;
}

namespace sx {
ScalarExprPtr x(int64_t input) {
  auto e = std::make_shared<ScalarExpr>();
  e->op = ScalarOp::Input;
  e->input = input;
  return e;
}
ScalarExprPtr c(double value) {
  auto e = std::make_shared<ScalarExpr>();
  e->op = ScalarOp::Const;
  e->value = value;
  return e;
}
ScalarExprPtr attr(std::string name) {
  auto e = std::make_shared<ScalarExpr>();
  e->op = ScalarOp::Attr;
  e->attr = std::move(name);
  return e;
}
ScalarExprPtr make(ScalarOp op, std::vector<ScalarExprPtr> args) {
  if (static_cast<int>(args.size()) != scalar_op_arity(op)) {
    throw Error(fmt::format("scalar op {} takes {} operands, got {}", scalar_op_name(op),
                            scalar_op_arity(op), args.size()),
                Error::Kind::Internal);
  }
  auto e = std::make_shared<ScalarExpr>();
  e->op = op;
  e->args = std::move(args);
  return e;
}
#define EQFUSE_SX_UNARY(fn, OP)                \
  ScalarExprPtr fn(ScalarExprPtr a) {          \
    return make(ScalarOp::OP, {std::move(a)}); \
  }
#define EQFUSE_SX_BINARY(fn, OP)                             \
  ScalarExprPtr fn(ScalarExprPtr a, ScalarExprPtr b) {       \
    return make(ScalarOp::OP, {std::move(a), std::move(b)}); \
  }
EQFUSE_SX_UNARY(neg, Neg)
EQFUSE_SX_UNARY(abs, Abs)
EQFUSE_SX_UNARY(exp, Exp)
EQFUSE_SX_UNARY(log, Log)
EQFUSE_SX_UNARY(sqrt, Sqrt)
EQFUSE_SX_BINARY(add, Add)
EQFUSE_SX_BINARY(sub, Sub)
EQFUSE_SX_BINARY(mul, Mul)
EQFUSE_SX_BINARY(div, Div)
EQFUSE_SX_BINARY(max, Max)
EQFUSE_SX_BINARY(min, Min)
EQFUSE_SX_BINARY(lt, Lt)
EQFUSE_SX_BINARY(le, Le)
EQFUSE_SX_BINARY(gt, Gt)
#undef EQFUSE_SX_UNARY
#undef EQFUSE_SX_BINARY
ScalarExprPtr select(ScalarExprPtr c, ScalarExprPtr a, ScalarExprPtr b) {
  return make(ScalarOp::Select, {std::move(c), std::move(a), std::move(b)});
}
}  // namespace sx

namespace {
std::string number_str(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (v == std::trunc(v) && std::fabs(v) < 1e15) return fmt::format("{}", static_cast<int64_t>(v));
  return fmt::format("{}", v);  // shortest round-trip form
}
}  // namespace

std::string to_string(const ScalarExpr& e) {
  switch (e.op) {
    case ScalarOp::Input:
      return fmt::format("x{}", e.input);
    case ScalarOp::Const:
      return number_str(e.value);
    case ScalarOp::Attr:
      return "@" + e.attr;
    default:
      break;
  }
  // Appended piece by piece: GCC 12 at -O3 reports a false -Werror=restrict on
  // `"(" + std::string(...)`.
  std::string out = "(";
  out += scalar_op_name(e.op);
  for (const ScalarExprPtr& a : e.args) {
    out += ' ';
    out += to_string(*a);
  }
  out += ')';
  return out;
}

namespace {
ScalarExprPtr from_sexpr(const Sexpr& s) {
  if (s.is_list()) {
    if (s.items.empty() || s.items[0].kind != Sexpr::Kind::Symbol) {
      throw sexpr_error(s, "expected (op operands...)");
    }
    auto op = parse_scalar_op(s.items[0].text);
    if (!op) throw sexpr_error(s.items[0], "unknown scalar op '" + s.items[0].text + "'");
    if (static_cast<int>(s.items.size()) - 1 != scalar_op_arity(*op)) {
      throw sexpr_error(
          s, fmt::format("'{}' takes {} operands", s.items[0].text, scalar_op_arity(*op)));
    }
    std::vector<ScalarExprPtr> args;
    for (size_t i = 1; i < s.items.size(); ++i) args.push_back(from_sexpr(s.items[i]));
    return sx::make(*op, std::move(args));
  }
  if (s.kind == Sexpr::Kind::Integer || s.kind == Sexpr::Kind::Float) return sx::c(s.number);
  if (s.kind == Sexpr::Kind::Symbol && s.text.size() > 1 && s.text[0] == '@') {
    return sx::attr(s.text.substr(1));
  }
  if (s.kind == Sexpr::Kind::Symbol && s.text.size() > 1 && s.text[0] == 'x') {
    int64_t n = 0;
    for (size_t i = 1; i < s.text.size(); ++i) {
      if (s.text[i] < '0' || s.text[i] > '9') throw sexpr_error(s, "expected xN, @attr or number");
      n = n * 10 + (s.text[i] - '0');
    }
    return sx::x(n);
  }
  throw sexpr_error(s, "expected xN, @attr, a number or (op ...)");
}
}  // namespace

ScalarExprPtr parse_scalar_expr(std::string_view text) {
  return from_sexpr(parse_sexpr(text, "<scalar expr>"));
}

bool equal(const ScalarExpr& a, const ScalarExpr& b) {
  if (a.op != b.op || a.args.size() != b.args.size()) return false;
  switch (a.op) {
    case ScalarOp::Input:
      return a.input == b.input;
    case ScalarOp::Const:
      return a.value == b.value || (std::isnan(a.value) && std::isnan(b.value));
    case ScalarOp::Attr:
      return a.attr == b.attr;
    default:
      break;
  }
  for (size_t i = 0; i < a.args.size(); ++i) {
    if (!equal(*a.args[i], *b.args[i])) return false;
  }
  return true;
}

int64_t num_inputs(const ScalarExpr& e) {
  if (e.op == ScalarOp::Input) return e.input + 1;
  int64_t n = 0;
  for (const ScalarExprPtr& a : e.args) n = std::max(n, num_inputs(*a));
  return n;
}

int64_t op_count(const ScalarExpr& e) {
  if (e.args.empty()) return 0;
  int64_t n = 1;
  for (const ScalarExprPtr& a : e.args) n += op_count(*a);
  return n;
}

ScalarExprPtr substitute(const ScalarExprPtr& e,
                         const std::function<ScalarExprPtr(int64_t input)>& replacement) {
  if (e->op == ScalarOp::Input) {
    ScalarExprPtr r = replacement(e->input);
    return r ? r : e;
  }
  if (e->args.empty()) return e;
  std::vector<ScalarExprPtr> args;
  bool changed = false;
  for (const ScalarExprPtr& a : e->args) {
    args.push_back(substitute(a, replacement));
    changed |= args.back() != a;
  }
  return changed ? sx::make(e->op, std::move(args)) : e;
}

ScalarExprPtr fold_constants(const ScalarExprPtr& e) {
  if (e->args.empty()) return e;
  std::vector<ScalarExprPtr> args;
  bool all_const = true;
  for (const ScalarExprPtr& a : e->args) {
    args.push_back(fold_constants(a));
    all_const &= args.back()->op == ScalarOp::Const;
  }
  if (e->op == ScalarOp::Select && args[0]->op == ScalarOp::Const) {
    return args[0]->value != 0 ? args[1] : args[2];
  }
  if (all_const) {
    double v[3] = {0, 0, 0};
    for (size_t i = 0; i < args.size(); ++i) v[i] = args[i]->value;
    return sx::c(apply_scalar_op(e->op, v));
  }
  return sx::make(e->op, std::move(args));
}

ScalarExprPtr bind_attrs(const ScalarExprPtr& e,
                         const std::function<std::optional<double>(const std::string&)>& value) {
  std::function<ScalarExprPtr(const ScalarExprPtr&)> bind = [&](const ScalarExprPtr& n) {
    if (n->op == ScalarOp::Attr) {
      std::optional<double> v = value(n->attr);
      return v ? sx::c(*v) : n;
    }
    if (n->args.empty()) return n;
    std::vector<ScalarExprPtr> args;
    for (const ScalarExprPtr& a : n->args) args.push_back(bind(a));
    return sx::make(n->op, std::move(args));
  };
  return fold_constants(bind(e));
}

double apply_scalar_op(ScalarOp op, const double* a) {
  switch (op) {
    case ScalarOp::Input:
    case ScalarOp::Const:
    case ScalarOp::Attr:
      break;
    case ScalarOp::Neg:
      return -a[0];
    case ScalarOp::Abs:
      return std::fabs(a[0]);
    case ScalarOp::Exp:
      return std::exp(a[0]);
    case ScalarOp::Log:
      return std::log(a[0]);
    case ScalarOp::Sqrt:
      return std::sqrt(a[0]);
    case ScalarOp::Recip:
      return 1.0 / a[0];
    case ScalarOp::Tanh:
      return std::tanh(a[0]);
    case ScalarOp::Erf:
      return std::erf(a[0]);
    case ScalarOp::Sin:
      return std::sin(a[0]);
    case ScalarOp::Cos:
      return std::cos(a[0]);
    case ScalarOp::Tan:
      return std::tan(a[0]);
    case ScalarOp::Asin:
      return std::asin(a[0]);
    case ScalarOp::Acos:
      return std::acos(a[0]);
    case ScalarOp::Atan:
      return std::atan(a[0]);
    case ScalarOp::Sinh:
      return std::sinh(a[0]);
    case ScalarOp::Cosh:
      return std::cosh(a[0]);
    case ScalarOp::Asinh:
      return std::asinh(a[0]);
    case ScalarOp::Acosh:
      return std::acosh(a[0]);
    case ScalarOp::Atanh:
      return std::atanh(a[0]);
    case ScalarOp::Floor:
      return std::floor(a[0]);
    case ScalarOp::Ceil:
      return std::ceil(a[0]);
    case ScalarOp::Round:
      return std::nearbyint(a[0]);
    case ScalarOp::Sign:
      return a[0] > 0 ? 1.0 : a[0] < 0 ? -1.0 : a[0];  // keeps 0 and NaN
    case ScalarOp::Not:
      return a[0] == 0 ? 1.0 : 0.0;
    case ScalarOp::IsNaN:
      return std::isnan(a[0]) ? 1.0 : 0.0;
    case ScalarOp::IsInf:
      return std::isinf(a[0]) ? 1.0 : 0.0;
    case ScalarOp::Add:
      return a[0] + a[1];
    case ScalarOp::Sub:
      return a[0] - a[1];
    case ScalarOp::Mul:
      return a[0] * a[1];
    case ScalarOp::Div:
      return a[0] / a[1];
    case ScalarOp::Pow:
      return std::pow(a[0], a[1]);
    // NaN propagates through max/min, as numpy's maximum and ONNX's Max do.
    case ScalarOp::Max:
      return std::isnan(a[0]) || std::isnan(a[1]) ? NAN : std::max(a[0], a[1]);
    case ScalarOp::Min:
      return std::isnan(a[0]) || std::isnan(a[1]) ? NAN : std::min(a[0], a[1]);
    case ScalarOp::Mod: {
      double r = std::fmod(a[0], a[1]);
      if (r != 0 && ((r < 0) != (a[1] < 0))) r += a[1];
      return r;
    }
    case ScalarOp::FMod:
      return std::fmod(a[0], a[1]);
    case ScalarOp::Eq:
      return a[0] == a[1] ? 1.0 : 0.0;
    case ScalarOp::Ne:
      return a[0] != a[1] ? 1.0 : 0.0;
    case ScalarOp::Lt:
      return a[0] < a[1] ? 1.0 : 0.0;
    case ScalarOp::Le:
      return a[0] <= a[1] ? 1.0 : 0.0;
    case ScalarOp::Gt:
      return a[0] > a[1] ? 1.0 : 0.0;
    case ScalarOp::Ge:
      return a[0] >= a[1] ? 1.0 : 0.0;
    case ScalarOp::And:
      return truthy(a[0]) * truthy(a[1]);
    case ScalarOp::Or:
      return truthy(a[0]) + truthy(a[1]) > 0 ? 1.0 : 0.0;
    case ScalarOp::Xor:
      return truthy(a[0]) != truthy(a[1]) ? 1.0 : 0.0;
    case ScalarOp::Select:
      return a[0] != 0 ? a[1] : a[2];
  }
  throw Error("apply_scalar_op: not a primitive", Error::Kind::Internal);
}

namespace {
int64_t int_pow(int64_t base, int64_t exp) {
  if (exp < 0) {
    if (base == 1) return 1;
    if (base == -1) return (exp % 2) ? -1 : 1;
    return 0;  // truncation of 1/base^n
  }
  uint64_t result = 1;
  auto b = static_cast<uint64_t>(base);  // wraps like the C++ kernels would, without UB
  while (exp > 0) {
    if (exp & 1) result *= b;
    b *= b;
    exp >>= 1;
  }
  return static_cast<int64_t>(result);
}
int64_t to_int(double v) {
  if (std::isnan(v)) return 0;
  if (v >= 9.2e18) return std::numeric_limits<int64_t>::max();
  if (v <= -9.2e18) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}
int64_t wrap_add(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
int64_t wrap_sub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
int64_t wrap_mul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}
}  // namespace

int64_t apply_scalar_op_int(ScalarOp op, const int64_t* a) {
  switch (op) {
    case ScalarOp::Neg:
      return wrap_sub(0, a[0]);
    case ScalarOp::Abs:
      return a[0] < 0 ? wrap_sub(0, a[0]) : a[0];
    case ScalarOp::Floor:
    case ScalarOp::Ceil:
    case ScalarOp::Round:
      return a[0];
    case ScalarOp::Sign:
      return a[0] > 0 ? 1 : a[0] < 0 ? -1 : 0;
    case ScalarOp::Not:
      return a[0] == 0;
    case ScalarOp::IsNaN:
    case ScalarOp::IsInf:
      return 0;
    case ScalarOp::Add:
      return wrap_add(a[0], a[1]);
    case ScalarOp::Sub:
      return wrap_sub(a[0], a[1]);
    case ScalarOp::Mul:
      return wrap_mul(a[0], a[1]);
    case ScalarOp::Div:
      if (a[1] == 0) return 0;
      if (a[1] == -1) return wrap_sub(0, a[0]);
      return a[0] / a[1];
    case ScalarOp::Pow:
      return int_pow(a[0], a[1]);
    case ScalarOp::Max:
      return std::max(a[0], a[1]);
    case ScalarOp::Min:
      return std::min(a[0], a[1]);
    case ScalarOp::Mod: {
      if (a[1] == 0 || a[1] == -1) return 0;
      int64_t r = a[0] % a[1];
      if (r != 0 && ((r < 0) != (a[1] < 0))) r += a[1];
      return r;
    }
    case ScalarOp::FMod:
      if (a[1] == 0 || a[1] == -1) return 0;
      return a[0] % a[1];
    case ScalarOp::Eq:
      return a[0] == a[1];
    case ScalarOp::Ne:
      return a[0] != a[1];
    case ScalarOp::Lt:
      return a[0] < a[1];
    case ScalarOp::Le:
      return a[0] <= a[1];
    case ScalarOp::Gt:
      return a[0] > a[1];
    case ScalarOp::Ge:
      return a[0] >= a[1];
    case ScalarOp::And:
      return a[0] != 0 && a[1] != 0;
    case ScalarOp::Or:
      return a[0] != 0 || a[1] != 0;
    case ScalarOp::Xor:
      return (a[0] != 0) != (a[1] != 0);
    case ScalarOp::Select:
      return a[0] != 0 ? a[1] : a[2];
    default: {
      // Transcendental functions on integers: computed in double and truncated.
      double d[3] = {static_cast<double>(a[0]), 0, 0};
      return to_int(apply_scalar_op(op, d));
    }
  }
}

namespace {
template <typename T, typename Apply, typename FromConst>
T eval_tree(const ScalarExpr& e, const std::vector<T>& inputs, Apply apply, FromConst from_const) {
  switch (e.op) {
    case ScalarOp::Input:
      if (e.input < 0 || static_cast<size_t>(e.input) >= inputs.size()) {
        throw Error(fmt::format("scalar expression reads x{}, only {} inputs given", e.input,
                                inputs.size()),
                    Error::Kind::Internal);
      }
      return inputs[static_cast<size_t>(e.input)];
    case ScalarOp::Const:
      return from_const(e.value);
    case ScalarOp::Attr:
      throw Error("scalar expression has unbound attribute @" + e.attr, Error::Kind::Internal);
    default:
      break;
  }
  T args[3] = {T(0), T(0), T(0)};
  for (size_t i = 0; i < e.args.size(); ++i) {
    args[i] = eval_tree(*e.args[i], inputs, apply, from_const);
  }
  return apply(e.op, args);
}
}  // namespace

double evaluate(const ScalarExpr& e, const std::vector<double>& inputs) {
  return eval_tree<double>(e, inputs, apply_scalar_op, [](double v) { return v; });
}
int64_t evaluate_int(const ScalarExpr& e, const std::vector<int64_t>& inputs) {
  return eval_tree<int64_t>(e, inputs, apply_scalar_op_int, to_int);
}

}  // namespace eqfuse::ir
