// ScalarExpr (ir/scalar_expr.h) and its compiled form (ir/scalar_program.h): printing, parsing,
// substitution, attribute binding, integer semantics, and the chunked program against the tree
// evaluator on broadcast inputs.
#include "ir/scalar_expr.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <random>

#include "ir/op_table.h"
#include "ir/scalar_program.h"
#include "support/error.h"

using namespace eqfuse;
using namespace eqfuse::ir;

TEST_CASE("scalar expressions print and parse as s-expressions", "[fast]") {
  ScalarExprPtr relu = sx::max(sx::x(0), sx::c(0));
  CHECK(to_string(relu) == "(max x0 0)");
  ScalarExprPtr leaky =
      sx::select(sx::lt(sx::x(0), sx::c(0)), sx::mul(sx::attr("alpha"), sx::x(0)), sx::x(0));
  CHECK(to_string(leaky) == "(select (lt x0 0) (mul @alpha x0) x0)");
  CHECK(equal(*parse_scalar_expr(to_string(leaky)), *leaky));
  CHECK(to_string(parse_scalar_expr("(add x1 0.5)")) == "(add x1 0.5)");
  CHECK(to_string(sx::c(-INFINITY)) == "-inf");
  CHECK_THROWS_AS(parse_scalar_expr("(add x0)"), Error);
  CHECK_THROWS_AS(parse_scalar_expr("(frob x0 x1)"), Error);
  CHECK(num_inputs(*parse_scalar_expr("(select x2 x0 1)")) == 3);
  CHECK(op_count(*leaky) == 3);
}

TEST_CASE("every elementwise op of the table has a printable, parsable meaning", "[fast]") {
  int n = 0;
  for (const OpDef* def : all_ops()) {
    if (!def->scalar) continue;
    ++n;
    INFO(def->name << ": " << to_string(def->scalar));
    CHECK(equal(*parse_scalar_expr(to_string(def->scalar)), *def->scalar));
  }
  CHECK(n >= 50);
}

TEST_CASE("substitute composes expressions (fusion)", "[fast]") {
  // relu(x0 + x1) as one expression over two inputs.
  ScalarExprPtr relu = sx::max(sx::x(0), sx::c(0));
  ScalarExprPtr fused =
      substitute(relu, [](int64_t i) { return i == 0 ? sx::add(sx::x(0), sx::x(1)) : nullptr; });
  CHECK(to_string(fused) == "(max (add x0 x1) 0)");
  CHECK(evaluate(*fused, {-3, 1}) == 0);
  CHECK(evaluate(*fused, {3, 1}) == 4);
}

TEST_CASE("bind_attrs folds constants and selects", "[fast]") {
  ScalarExprPtr mod = parse_scalar_expr("(select @fmod (fmod x0 x1) (mod x0 x1))");
  auto bound = bind_attrs(mod, [](const std::string&) { return 0.0; });
  CHECK(to_string(bound) == "(mod x0 x1)");
  CHECK(to_string(bind_attrs(parse_scalar_expr("(mul (add @a 1) x0)"),
                             [](const std::string&) { return 2.0; })) == "(mul 3 x0)");
  CHECK_THROWS_AS(evaluate(*mod, {1, 2}), Error);  // unbound attribute
}

TEST_CASE("integer semantics: truncating div, mod signs, pow", "[fast]") {
  auto ev = [](const char* text, int64_t a, int64_t b) {
    return evaluate_int(*parse_scalar_expr(text), {a, b});
  };
  CHECK(ev("(div x0 x1)", -7, 2) == -3);
  CHECK(ev("(div x0 x1)", 7, -2) == -3);
  CHECK(ev("(div x0 x1)", 7, 0) == 0);
  CHECK(ev("(mod x0 x1)", -7, 3) == 2);
  CHECK(ev("(mod x0 x1)", 7, -3) == -2);
  CHECK(ev("(fmod x0 x1)", -7, 3) == -1);
  CHECK(ev("(fmod x0 x1)", 7, -3) == 1);
  CHECK(ev("(pow x0 x1)", 3, 4) == 81);
  CHECK(ev("(pow x0 x1)", 2, -1) == 0);
  CHECK(evaluate(*parse_scalar_expr("(mod x0 x1)"), {-7.5, 2}) == 0.5);
  CHECK(evaluate(*parse_scalar_expr("(round x0)"), {2.5}) == 2);
  CHECK(evaluate(*parse_scalar_expr("(round x0)"), {-1.5}) == -2);
  CHECK(std::isnan(evaluate(*parse_scalar_expr("(max x0 x1)"), {NAN, 1})));
}

TEST_CASE("the compiled program agrees with the tree evaluator", "[fast]") {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(-3, 3);
  ScalarExprPtr e =
      parse_scalar_expr("(select (lt x0 x1) (mul (tanh x0) (exp x2)) (sub (max x1 0.5) x2))");
  Tensor a(DType::f32, {3, 1, 700}), b(DType::f32, {4, 1}), c(DType::f64, {});
  for (Tensor* t : {&a, &b, &c}) {
    for (int64_t i = 0; i < t->numel(); ++i) t->set(i, u(rng));
  }
  Tensor out = evaluate_elementwise(*e, {&a, &b, &c}, DType::f64);
  REQUIRE(out.dims() == std::vector<int64_t>{3, 4, 700});
  for (int64_t i0 = 0; i0 < 3; ++i0) {
    for (int64_t i1 = 0; i1 < 4; ++i1) {
      for (int64_t i2 = 0; i2 < 700; i2 += 37) {
        double want = evaluate(*e, {a.get(i0 * 700 + i2), b.get(i1), c.get(0)});
        CHECK(out.get((i0 * 4 + i1) * 700 + i2) == want);
      }
    }
  }
  // Integers stay exact beyond 2^53.
  Tensor big(DType::i64, {2});
  big.data<int64_t>()[0] = (int64_t{1} << 60) + 1;
  Tensor one = Tensor::from_vector<int64_t>(DType::i64, {}, {1});
  Tensor sum = evaluate_elementwise(*parse_scalar_expr("(add x0 x1)"), {&big, &one}, DType::i64);
  CHECK(sum.data<int64_t>()[0] == (int64_t{1} << 60) + 2);
}
