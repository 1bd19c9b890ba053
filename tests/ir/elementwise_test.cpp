// Elementwise ops (ir/ops/elementwise.cpp): known answers by hand, broadcasting, integer and
// dtype rules, f16 rounding, inference errors.
#include <catch2/catch.hpp>
#include <cmath>

#include "ir/scalar_expr.h"
#include "single_op.h"

using namespace eqfuse;
using namespace eqfuse::ir;
using namespace eqfuse::test;

namespace {
std::vector<double> vals(const Tensor& t) {
  return t.to_doubles();
}
Tensor typed(DType d, std::vector<int64_t> dims, const std::vector<double>& v) {
  return Tensor::from_doubles(d, std::move(dims), v);
}
}  // namespace

TEST_CASE("binary arithmetic broadcasts like numpy", "[fast]") {
  Tensor a = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor b = f32({3}, {10, 20, 30});
  CHECK(vals(run1("Add", {a, b})) == std::vector<double>{11, 22, 33, 14, 25, 36});
  CHECK(vals(run1("Sub", {b, a})) == std::vector<double>{9, 18, 27, 6, 15, 24});
  Tensor col = f32({2, 1}, {2, 3});
  CHECK(vals(run1("Mul", {a, col})) == std::vector<double>{2, 4, 6, 12, 15, 18});
  CHECK(vals(run1("Div", {a, col})) ==
        std::vector<double>{0.5, 1, 1.5, double(4.0f / 3.0f), double(5.0f / 3.0f), 2});
  Tensor outer = run1("Add", {f32({3, 1}, {0, 10, 20}), f32({1, 2}, {1, 2})});
  CHECK(outer.dims() == std::vector<int64_t>{3, 2});
  CHECK(vals(outer) == std::vector<double>{1, 2, 11, 12, 21, 22});
}

TEST_CASE("integer Div truncates, Mod follows ONNX sign rules, Pow", "[fast]") {
  Tensor a = i64({4}, {7, -7, 7, -7});
  Tensor b = i64({4}, {2, 2, -2, -2});
  CHECK(vals(run1("Div", {a, b})) == std::vector<double>{3, -3, -3, 3});
  Tensor m = i64({4}, {3, 3, -3, -3});
  CHECK(vals(run1("Mod", {a, m})) == std::vector<double>{1, 2, -2, -1});
  CHECK(vals(run1("Mod", {a, m}, attrs({{"fmod", int64_t{1}}}))) ==
        std::vector<double>{1, -1, 1, -1});
  CHECK(vals(run1("Mod", {f32({2}, {-4.5, 4.5}), f32({2}, {2, -2})},
                  attrs({{"fmod", int64_t{1}}}))) == std::vector<double>{-0.5, 0.5});
  Tensor p = run1("Pow", {i64({3}, {2, 3, -2}), i64({3}, {10, 3, 3})});
  CHECK(p.dtype() == DType::i64);
  CHECK(vals(p) == std::vector<double>{1024, 27, -8});
  // Pow with an integer exponent on a float base keeps the base's dtype.
  Tensor pf = run1("Pow", {f32({2}, {2, 9}), i64({1}, {2})});
  CHECK(pf.dtype() == DType::f32);
  CHECK(vals(pf) == std::vector<double>{4, 81});
}

TEST_CASE("variadic Sum Mean Max Min", "[fast]") {
  Tensor a = f32({2}, {1, 5}), b = f32({2}, {3, -1}), c = f32({1}, {2});
  CHECK(vals(run1("Sum", {a, b, c})) == std::vector<double>{6, 6});
  CHECK(vals(run1("Mean", {a, b, c})) == std::vector<double>{2, 2});
  CHECK(vals(run1("Max", {a, b, c})) == std::vector<double>{3, 5});
  CHECK(vals(run1("Min", {a, b, c})) == std::vector<double>{1, -1});
  CHECK(vals(run1("Max", {a})) == std::vector<double>{1, 5});
  CHECK(std::isnan(run1("Max", {f32({1}, {NAN}), f32({1}, {1})}).get(0)));
}

TEST_CASE("unary math and activations", "[fast]") {
  Tensor x = f32({5}, {-2, -0.5, 0, 0.5, 2});
  CHECK(vals(run1("Relu", {x})) == std::vector<double>{0, 0, 0, 0.5, 2});
  CHECK(vals(run1("Abs", {x})) == std::vector<double>{2, 0.5, 0, 0.5, 2});
  CHECK(vals(run1("Neg", {x})) == std::vector<double>{2, 0.5, 0, -0.5, -2});
  CHECK(vals(run1("Sign", {x})) == std::vector<double>{-1, -1, 0, 1, 1});
  CHECK(vals(run1("LeakyRelu", {x}, attrs({{"alpha", 0.5}}))) ==
        std::vector<double>{-1, -0.25, 0, 0.5, 2});
  CHECK(vals(run1("Floor", {x})) == std::vector<double>{-2, -1, 0, 0, 2});
  CHECK(vals(run1("Ceil", {x})) == std::vector<double>{-2, -0, 0, 1, 2});
  CHECK(vals(run1("Round", {f32({4}, {0.5, 1.5, 2.5, -0.5})})) == std::vector<double>{0, 2, 2, -0});
  CHECK(vals(run1("HardSigmoid", {x})) == std::vector<double>{0.1f, 0.4f, 0.5, 0.6f, 0.9f});
  CHECK(vals(run1("HardSwish", {f32({3}, {-4, 0, 4})})) == std::vector<double>{0, 0, 4});
  Tensor s = run1("Sigmoid", {x});
  for (int i = 0; i < 5; ++i) CHECK(s.get(i) == Approx(1 / (1 + std::exp(-x.get(i)))));
  Tensor e = run1("Elu", {x});
  CHECK(e.get(0) == Approx(std::exp(-2.0) - 1));
  CHECK(e.get(4) == 2);
  Tensor sp = run1("Softplus", {x});
  CHECK(sp.get(0) == Approx(std::log1p(std::exp(-2.0))));
  CHECK(run1("Softsign", {x}).get(0) == Approx(-2.0 / 3));
  CHECK(run1("Erf", {x}).get(4) == Approx(std::erf(2.0)));
  CHECK(run1("Sqrt", {f32({1}, {9})}).get(0) == 3);
  CHECK(run1("Reciprocal", {f32({1}, {4})}).get(0) == 0.25);
  Tensor selu = run1("Selu", {x});
  CHECK(selu.get(4) == Approx(2 * 1.0507009873554805));
  CHECK(selu.get(0) == Approx(1.0507009873554805 * 1.6732632423543772 * (std::exp(-2.0) - 1)));
  CHECK(vals(run1("PRelu", {x, f32({1}, {0.1})})) == std::vector<double>{-0.2f, -0.05f, 0, 0.5, 2});
}

TEST_CASE("Clip takes bounds from inputs or attributes", "[fast]") {
  Tensor x = f32({4}, {-5, -1, 1, 5});
  CHECK(vals(run1("Clip", {x, f32({}, {-2}), f32({}, {2})})) == std::vector<double>{-2, -1, 1, 2});
  CHECK(vals(run1("Clip", {x, OpInput::omitted(), f32({}, {0})})) ==
        std::vector<double>{-5, -1, 0, 0});
  CHECK(vals(run1("Clip", {x})) == std::vector<double>{-5, -1, 1, 5});
  CHECK(vals(run1("Clip", {x}, attrs({{"min", 0.0}, {"max", 3.0}}))) ==
        std::vector<double>{0, 0, 1, 3});
  CHECK(vals(run1("Clip", {i64({3}, {-9, 4, 9}), i64({}, {0}), i64({}, {5})})) ==
        std::vector<double>{0, 4, 5});
}

TEST_CASE("comparisons and logic give bool", "[fast]") {
  Tensor a = f32({3}, {1, 2, 3}), b = f32({1}, {2});
  Tensor lt = run1("Less", {a, b});
  CHECK(lt.dtype() == DType::boolean);
  CHECK(vals(lt) == std::vector<double>{1, 0, 0});
  CHECK(vals(run1("GreaterOrEqual", {a, b})) == std::vector<double>{0, 1, 1});
  CHECK(vals(run1("Equal", {i64({3}, {1, 2, 3}), i64({1}, {2})})) == std::vector<double>{0, 1, 0});
  Tensor t = typed(DType::boolean, {4}, {0, 0, 1, 1}), u = typed(DType::boolean, {4}, {0, 1, 0, 1});
  CHECK(vals(run1("And", {t, u})) == std::vector<double>{0, 0, 0, 1});
  CHECK(vals(run1("Or", {t, u})) == std::vector<double>{0, 1, 1, 1});
  CHECK(vals(run1("Xor", {t, u})) == std::vector<double>{0, 1, 1, 0});
  CHECK(vals(run1("Not", {t})) == std::vector<double>{1, 1, 0, 0});
  Tensor special = f32({3}, {NAN, INFINITY, -INFINITY});
  CHECK(vals(run1("IsNaN", {special})) == std::vector<double>{1, 0, 0});
  CHECK(vals(run1("IsInf", {special})) == std::vector<double>{0, 1, 1});
  CHECK(vals(run1("IsInf", {special}, attrs({{"detect_negative", int64_t{0}}}))) ==
        std::vector<double>{0, 1, 0});
  CHECK_THROWS_AS(SingleOp("And", {a, a}).infer(), Error);  // And takes bool
}

TEST_CASE("Where selects with broadcasting", "[fast]") {
  Tensor c = typed(DType::boolean, {2, 1}, {1, 0});
  Tensor y = run1("Where", {c, i64({2}, {1, 2}), i64({}, {9})});
  CHECK(y.dtype() == DType::i64);
  CHECK(y.dims() == std::vector<int64_t>{2, 2});
  CHECK(vals(y) == std::vector<double>{1, 2, 9, 9});
}

TEST_CASE("Cast and CastLike convert; f16 rounds", "[fast]") {
  Tensor x = f32({4}, {1.7, -1.7, 300, 0});
  CHECK(vals(run1("Cast", {x}, attrs({{"to", std::string("i32")}}))) ==
        std::vector<double>{1, -1, 300, 0});
  CHECK(vals(run1("Cast", {x}, attrs({{"to", int64_t{9}}}))) == std::vector<double>{1, 1, 1, 0});
  Tensor h = run1("Cast", {f32({1}, {1.0009765625 + 1e-4})}, attrs({{"to", std::string("f16")}}));
  CHECK(h.dtype() == DType::f16);
  CHECK(h.get(0) == 1.0009765625);
  Tensor like = run1("CastLike", {x, i64({1}, {0})});
  CHECK(like.dtype() == DType::i64);
  CHECK(like.dims() == std::vector<int64_t>{4});
  // f16 arithmetic is done in float and rounded once.
  Tensor a = typed(DType::f16, {1}, {2048}), b = typed(DType::f16, {1}, {1});
  CHECK(run1("Add", {a, b}).get(0) == 2048);  // 2049 is not representable: ties to even
}

TEST_CASE("elementwise inference: symbolic dims, dtype checks, arity", "[fast]") {
  TensorType a{DType::f32, Shape{Dim::symbol("n"), 1}};
  TensorType b{DType::f32, Shape{8}};
  CHECK(SingleOp("Add", {a, b}).infer()[0] == (TensorType{DType::f32, Shape{Dim::symbol("n"), 8}}));
  CHECK_THROWS_AS(SingleOp("Add", {a, TensorType{DType::i64, Shape{8}}}).infer(), Error);
  CHECK_THROWS_AS(
      SingleOp("Add", {TensorType{DType::f32, Shape{3}}, TensorType{DType::f32, Shape{4}}}).infer(),
      Error);
  CHECK_THROWS_AS(SingleOp("Add", {a}).infer(), Error);
  CHECK_THROWS_AS(SingleOp("Exp", {TensorType{DType::i64, Shape{2}}}).infer(), Error);
  CHECK_THROWS_AS(SingleOp("LeakyRelu", {a}, attrs({{"alpha", std::string("x")}})).infer(), Error);
  OpWork w = SingleOp("Relu", {TensorType{DType::f32, Shape{10, 10}}}).work();
  CHECK(w.flops == 100);
  CHECK(w.bytes_read == 400);
  CHECK(w.bytes_written == 400);
  CHECK(to_string(find_op("HardSwish")->scalar) == "(mul x0 (max 0 (min 1 (add (div x0 6) 0.5))))");
}
