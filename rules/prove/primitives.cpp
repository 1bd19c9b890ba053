#include "rules/prove/primitives.h"

#include <fmt/format.h>

#include <cmath>
#include <optional>
#include <set>

#include "support/error.h"

namespace eqfuse::rules::prove {

namespace {

// "1e-05" -> "1/100000", "-2.5" -> "-25/10": a decimal spelling as an exact rational.
std::string decimal_to_rational(const std::string& text) {
  std::string digits;
  bool negative = false;
  int64_t exponent = 0;
  size_t i = 0;
  if (i < text.size() && (text[i] == '-' || text[i] == '+')) negative = text[i++] == '-';
  bool after_point = false;
  for (; i < text.size(); ++i) {
    char ch = text[i];
    if (ch == '.') {
      after_point = true;
    } else if (ch >= '0' && ch <= '9') {
      digits += ch;
      if (after_point) --exponent;
    } else if (ch == 'e' || ch == 'E') {
      exponent += std::stoll(text.substr(i + 1));
      break;
    }
  }
  size_t nz = digits.find_first_not_of('0');
  digits = nz == std::string::npos ? "0" : digits.substr(nz);
  std::string num = digits;
  std::string den = "1";
  if (exponent > 0) num += std::string(static_cast<size_t>(exponent), '0');
  if (exponent < 0) den += std::string(static_cast<size_t>(-exponent), '0');
  return (negative && digits != "0" ? "-" : "") + num + "/" + den;
}

bool is_numeral_value(const z3::expr& e, int value) {
  if (!e.is_numeral()) return false;
  int64_t v = 0;
  return e.is_numeral_i64(v) && v == value;
}

bool is_kind(const z3::expr& e, Z3_decl_kind kind) {
  return e.is_app() && e.decl().decl_kind() == kind;
}

// u when e is -u (Z3 writes it (* -1 u)).
std::optional<z3::expr> negated(const z3::expr& e) {
  if (is_kind(e, Z3_OP_UMINUS)) return e.arg(0);
  if (is_kind(e, Z3_OP_MUL) && e.num_args() == 2 && is_numeral_value(e.arg(0), -1)) return e.arg(1);
  return std::nullopt;
}

const std::set<std::string> kOdd = {"tanh", "erf",  "sin",   "tan",  "asin",
                                    "atan", "sinh", "asinh", "atanh"};

}  // namespace

z3::expr real_numeral(z3::context& ctx, double value) {
  if (!std::isfinite(value)) fail(fmt::format("the prover cannot encode {} as a real", value));
  std::string text = fmt::format("{}", value);
  float f = static_cast<float>(value);
  if (static_cast<double>(f) == value) {
    std::string short_text = fmt::format("{}", f);
    if (short_text.size() < text.size()) text = short_text;
  }
  return ctx.real_val(decimal_to_rational(text).c_str());
}

double numeral_to_double(const z3::expr& e) {
  std::string s = Z3_get_numeral_decimal_string(e.ctx(), e, 30);
  if (!s.empty() && s.back() == '?') s.pop_back();
  return std::stod(s);
}

Primitives::Primitives(z3::context& ctx) : ctx_(ctx) {}

z3::func_decl Primitives::function(std::string_view name, unsigned arity) {
  for (auto& [n, f] : functions_)
    if (n == name) return f;
  z3::sort r = ctx_.real_sort();
  z3::func_decl f = arity == 1 ? ctx_.function(std::string(name).c_str(), r, r)
                               : ctx_.function(std::string(name).c_str(), r, r, r);
  functions_.emplace_back(std::string(name), f);
  return f;
}

z3::expr Primitives::apply(std::string_view name, const std::vector<z3::expr>& args_in) {
  std::vector<z3::expr> args;
  for (const z3::expr& a : args_in) args.push_back(a.simplify());
  const z3::expr& x = args[0];
  if (name == "recip") {
    if (x.is_numeral() && !is_numeral_value(x, 0)) return (ctx_.real_val(1) / x).simplify();
    if (is_kind(x, Z3_OP_MUL)) {  // recip(a*b) = recip(a)*recip(b) holds for all reals
      z3::expr out = ctx_.real_val(1);
      for (unsigned i = 0; i < x.num_args(); ++i) out = out * recip(x.arg(i));
      return out;
    }
    if (x.is_app() && x.decl().name().str() == "recip") return x.arg(0);
  }
  if (name == "exp" && is_numeral_value(x, 0)) return ctx_.real_val(1);
  if (name == "log" && x.is_app() && x.decl().name().str() == "exp") return x.arg(0);
  if (name == "pow") {
    const z3::expr& p = args[1];
    int64_t n = 0;
    if (p.is_numeral() && p.is_numeral_i64(n) && n >= -8 && n <= 8) {
      z3::expr out = ctx_.real_val(1);
      for (int64_t i = 0; i < (n < 0 ? -n : n); ++i) out = out * x;
      return n < 0 ? recip(out) : out;
    }
    if (p.is_numeral() && numeral_to_double(p) == 0.5) return apply("sqrt", {x});
    return function("pow", 2)(x, p);
  }
  if (kOdd.count(std::string(name)) && is_numeral_value(x, 0)) return ctx_.real_val(0);
  if (name == "sqrt" && is_numeral_value(x, 0)) return ctx_.real_val(0);
  if (name == "sqrt" && is_numeral_value(x, 1)) return ctx_.real_val(1);
  return function(name, 1)(x);
}

std::vector<z3::expr> Primitives::ground_axioms(const std::vector<z3::expr>& terms) {
  std::vector<z3::expr> axioms;
  std::vector<z3::expr> work(terms.begin(), terms.end());
  std::set<unsigned> seen;
  z3::expr zero = ctx_.real_val(0);
  z3::expr one = ctx_.real_val(1);
  while (!work.empty()) {
    z3::expr t = work.back();
    work.pop_back();
    if (!seen.insert(t.id()).second || !t.is_app()) continue;
    for (unsigned i = 0; i < t.num_args(); ++i) work.push_back(t.arg(i));
    if (t.decl().decl_kind() != Z3_OP_UNINTERPRETED || t.num_args() == 0) continue;
    std::string name = t.decl().name().str();
    z3::expr a = t.arg(0);
    if (name == "exp") {
      axioms.push_back(t > zero);
      if (is_kind(a, Z3_OP_ADD)) {
        z3::expr product = one;
        for (unsigned i = 0; i < a.num_args(); ++i) {
          z3::expr e = apply("exp", {a.arg(i)});
          work.push_back(e);
          product = product * e;
        }
        axioms.push_back(t == product);
      }
      if (auto u = negated(a)) {
        z3::expr e = apply("exp", {*u});
        work.push_back(e);
        axioms.push_back(t * e == one);
      }
    } else if (name == "log") {
      if (a.is_app() && a.decl().name().str() == "exp") axioms.push_back(t == a.arg(0));
      z3::expr e = apply("exp", {t});
      work.push_back(e);
      axioms.push_back(z3::implies(a > zero, e == a));
      if (is_kind(a, Z3_OP_MUL) && a.num_args() == 2) {
        z3::expr l0 = apply("log", {a.arg(0)});
        z3::expr l1 = apply("log", {a.arg(1)});
        axioms.push_back(z3::implies(a.arg(0) > zero && a.arg(1) > zero, t == l0 + l1));
      }
    } else if (kOdd.count(name)) {
      if (auto u = negated(a)) {
        z3::expr e = apply(name, {*u});
        work.push_back(e);
        axioms.push_back(t == -e);
      }
      if (name == "tanh") axioms.push_back(t > -one && t < one);
    } else if (name == "sqrt") {
      axioms.push_back(z3::implies(a >= zero, t >= zero && t * t == a));
    } else if (name == "recip") {
      axioms.push_back(z3::implies(a != zero, a * t == one));
    }
  }
  return axioms;
}

}  // namespace eqfuse::rules::prove
