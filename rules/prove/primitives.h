#pragma once
// The real-number vocabulary of the prover: exact rational numerals for the doubles found in op
// meanings and attributes, and the non-polynomial primitives (exp, log, tanh, erf, sqrt, pow,
// trigonometry, and the reciprocal 1/x) as Z3 uninterpreted functions.
//
// Why uninterpreted functions: Z3's nonlinear real arithmetic knows none of these functions, and
// a rule library needs only a few of their laws. Each law is stated once, here, and instantiated
// on the ground terms a query contains (`ground_axioms`), never as a quantified formula, so
// every query stays quantifier-free and decidable:
//   exp(t) > 0;  exp(a1+...+an) = exp(a1)*...*exp(an);  exp(-u)*exp(u) = 1;  log(exp(u)) = u;
//   t > 0 -> exp(log(t)) = t;  a,b > 0 -> log(a*b) = log(a) + log(b);
//   tanh, erf, sin, tan, asin, atan, sinh, asinh, atanh odd: f(-u) = -f(u);  -1 < tanh(t) < 1;
//   t >= 0 -> sqrt(t) >= 0 and sqrt(t)*sqrt(t) = t;  t != 0 -> t * recip(t) = 1.
// Division is multiplication by recip, so a/b is total (recip(0) is some real) and only laws that
// need b*(1/b) = 1 depend on b != 0: a rule like (x*y)/y -> x is refuted at y = 0.
// Composite functions (Sigmoid, Softmax, the normalizations) are built from these primitives by
// the encoder; no axiom restates a rule.
#include <z3++.h>

#include <string>
#include <string_view>
#include <vector>

namespace eqfuse::rules::prove {

// The exact rational a double stands for as written: 1e-05 is 1/100000 (not the binary double
// nearest to it), and a float32-rounded value (0.1f read back as double) is the decimal the
// float prints as. Throws Error for NaN and infinities (not reals).
z3::expr real_numeral(z3::context& ctx, double value);
// A Z3 numeral (rational or algebraic) as the nearest double.
double numeral_to_double(const z3::expr& e);

class Primitives {
 public:
  explicit Primitives(z3::context& ctx);
  z3::context& ctx() { return ctx_; }

  // Applies a primitive by name: "exp", "log", "sqrt", "tanh", "erf", "recip", "pow" (two
  // arguments), "sin", ... Simplifies on the way (exp(0) = 1, recip of a nonzero numeral, small
  // integer powers expanded) so that both sides of a rule meet in one normal form.
  z3::expr apply(std::string_view name, const std::vector<z3::expr>& args);
  z3::expr recip(const z3::expr& x) { return apply("recip", {x}); }

  // The laws above, instantiated on every primitive application inside `terms` (and on the
  // applications the laws themselves introduce).
  std::vector<z3::expr> ground_axioms(const std::vector<z3::expr>& terms);

 private:
  z3::func_decl function(std::string_view name, unsigned arity);
  z3::context& ctx_;
  std::vector<std::pair<std::string, z3::func_decl>> functions_;
};

}  // namespace eqfuse::rules::prove
