// Reductions, ArgMax/ArgMin, Softmax/LogSoftmax (ir/ops/reduction.cpp): known answers, axes as
// attribute or input, keepdims, noop_with_empty_axes, integer exactness, stability.
#include <catch2/catch.hpp>
#include <cmath>

#include "single_op.h"

using namespace eqfuse;
using namespace eqfuse::ir;
using namespace eqfuse::test;

namespace {
std::vector<double> vals(const Tensor& t) {
  return t.to_doubles();
}
using Ints = std::vector<int64_t>;
}  // namespace

TEST_CASE("Reduce ops over axes given as attribute or input", "[fast]") {
  Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  CHECK(vals(run1("ReduceSum", {x}, attrs({{"axes", Ints{1}}}))) == std::vector<double>{6, 15});
  Tensor keep = run1("ReduceSum", {x, i64({1}, {0})});
  CHECK(keep.dims() == Ints{1, 3});
  CHECK(vals(keep) == std::vector<double>{5, 7, 9});
  Tensor all = run1("ReduceMean", {x}, attrs({{"keepdims", int64_t{0}}}));
  CHECK(all.dims().empty());
  CHECK(all.get(0) == 3.5);
  CHECK(vals(run1("ReduceMax", {x}, attrs({{"axes", Ints{-1}}}))) == std::vector<double>{3, 6});
  CHECK(vals(run1("ReduceMin", {x}, attrs({{"axes", Ints{0}}}))) == std::vector<double>{1, 2, 3});
  CHECK(vals(run1("ReduceProd", {x}, attrs({{"axes", Ints{1}}}))) == std::vector<double>{6, 120});
  Tensor s = f32({2, 2}, {3, -4, -1, 1});
  CHECK(vals(run1("ReduceL1", {s}, attrs({{"axes", Ints{1}}}))) == std::vector<double>{7, 2});
  CHECK(vals(run1("ReduceL2", {s}, attrs({{"axes", Ints{1}}})))[0] == 5);
  CHECK(vals(run1("ReduceSumSquare", {s}, attrs({{"axes", Ints{1}}}))) ==
        std::vector<double>{25, 2});
  CHECK(run1("ReduceLogSum", {x}, attrs({{"axes", Ints{1}}})).get(0) == Approx(std::log(6.0)));
  Tensor big = f32({2}, {1000, 1000});
  CHECK(run1("ReduceLogSumExp", {big}).get(0) == Approx(1000 + std::log(2.0)));
  // noop_with_empty_axes keeps the input; empty axes otherwise reduce everything.
  CHECK(vals(run1("ReduceSum", {x, i64({0}, {})}, attrs({{"noop_with_empty_axes", int64_t{1}}}))) ==
        vals(x));
  CHECK(run1("ReduceSum", {x, i64({0}, {})}).get(0) == 21);
}

TEST_CASE("Reduce on integers is exact; inference with symbolic dims", "[fast]") {
  Tensor x(DType::i64, {2});
  x.data<int64_t>()[0] = (int64_t{1} << 60);
  x.data<int64_t>()[1] = 1;
  CHECK(run1("ReduceSum", {x}).data<int64_t>()[0] == (int64_t{1} << 60) + 1);
  Dim n = Dim::symbol("n");
  SingleOp s("ReduceMean", {TensorType{DType::f32, Shape{n, 8, 4}}}, attrs({{"axes", Ints{1}}}));
  CHECK(s.infer()[0].shape == (Shape{n, 1, 4}));
  SingleOp t("ReduceMean", {TensorType{DType::f32, Shape{n, 8}}, TensorType{DType::i64, Shape{1}}});
  CHECK(t.infer()[0].shape == (Shape{Dim::unknown(), Dim::unknown()}));  // axes not constant
  CHECK_THROWS_AS(
      SingleOp("ReduceSum", {TensorType{DType::f32, Shape{2}}}, attrs({{"axes", Ints{1}}})).infer(),
      Error);
  CHECK_THROWS_AS(
      SingleOp("ReduceSum", {TensorType{DType::f32, Shape{2}}}, attrs({{"axes", int64_t{0}}}))
          .infer(),
      Error);
}

TEST_CASE("ArgMax and ArgMin with keepdims and select_last_index", "[fast]") {
  Tensor x = f32({2, 3}, {1, 5, 5, 7, 0, 0});
  Tensor a = run1("ArgMax", {x}, attrs({{"axis", int64_t{1}}}));
  CHECK(a.dtype() == DType::i64);
  CHECK(a.dims() == Ints{2, 1});
  CHECK(vals(a) == std::vector<double>{1, 0});
  CHECK(
      vals(run1("ArgMax", {x}, attrs({{"axis", int64_t{1}}, {"select_last_index", int64_t{1}}}))) ==
      std::vector<double>{2, 0});
  Tensor b = run1("ArgMin", {x}, attrs({{"axis", int64_t{1}}, {"keepdims", int64_t{0}}}));
  CHECK(b.dims() == Ints{2});
  CHECK(vals(b) == std::vector<double>{0, 1});
  CHECK(vals(run1("ArgMin", {x},
                  attrs({{"axis", int64_t{-1}}, {"select_last_index", int64_t{1}}}))) ==
        std::vector<double>{0, 2});
  CHECK(vals(run1("ArgMax", {x})) == std::vector<double>{1, 0, 0});
}

TEST_CASE("ArgMax and ArgMin take a NaN as the extreme, as numpy does", "[fast]") {
  const double nan = std::nan("");
  Tensor x = f32({2, 4}, {1, nan, 3, nan, 2, 9, -4, 0});
  for (const char* op : {"ArgMax", "ArgMin"}) {
    INFO(op);
    CHECK(vals(run1(op, {x}, attrs({{"axis", int64_t{1}}, {"keepdims", int64_t{0}}}))) ==
          std::vector<double>{1, std::string(op) == "ArgMax" ? 1.0 : 2.0});
    CHECK(vals(run1(op, {x}, attrs({{"axis", int64_t{1}}, {"select_last_index", int64_t{1}}}))) ==
          std::vector<double>{3, std::string(op) == "ArgMax" ? 1.0 : 2.0});
  }
}

TEST_CASE("Softmax and LogSoftmax along an axis, stable for large inputs", "[fast]") {
  Tensor x = f32({2, 2}, {0, std::log(3.0), 1000, 1000});
  Tensor y = run1("Softmax", {x});
  CHECK(y.get(0) == Approx(0.25));
  CHECK(y.get(1) == Approx(0.75));
  CHECK(y.get(2) == Approx(0.5));
  Tensor l = run1("LogSoftmax", {x});
  CHECK(l.get(0) == Approx(std::log(0.25)));
  CHECK(l.get(3) == Approx(std::log(0.5)));
  Tensor c =
      run1("Softmax", {f32({2, 2}, {0, 0, 0, std::log(3.0)})}, attrs({{"axis", int64_t{0}}}));
  CHECK(c.get(1) == Approx(0.25));
  CHECK(c.get(3) == Approx(0.75));
  CHECK_THROWS_AS(SingleOp("Softmax", {TensorType{DType::i64, Shape{2}}}).infer(), Error);
  CHECK_THROWS_AS(
      SingleOp("Softmax", {TensorType{DType::f32, Shape{2}}}, attrs({{"axis", int64_t{1}}}))
          .infer(),
      Error);
}
