// Generator ops (ir/ops/generator.cpp): Constant, ConstantOfShape, Shape, Size, Range, EyeLike.
#include <catch2/catch.hpp>

#include "single_op.h"

using namespace eqfuse;
using namespace eqfuse::ir;
using namespace eqfuse::test;

TEST_CASE("Constant from each attribute form") {
  CHECK(SingleOp("Constant", {}, attrs({{"value", f32({2}, {1, 2})}})).run()[0].to_doubles() ==
        std::vector<double>{1, 2});
  auto f = SingleOp("Constant", {}, attrs({{"value_float", 2.5}}));
  CHECK(f.infer()[0] == TensorType{DType::f32, Shape()});
  CHECK(f.run()[0].get(0) == 2.5);
  auto ints = SingleOp("Constant", {}, attrs({{"value_ints", std::vector<int64_t>{3, 4}}}));
  CHECK(ints.infer()[0] == TensorType{DType::i64, Shape{2}});
  CHECK(SingleOp("Constant", {}, attrs({{"value_floats", std::vector<double>{1, 2, 3}}}))
            .run()[0]
            .numel() == 3);
  CHECK(SingleOp("Constant", {}, attrs({{"value_int", int64_t{7}}})).run()[0].get(0) == 7);
  CHECK_THROWS(SingleOp("Constant", {}).infer());
}

TEST_CASE("ConstantOfShape fills with its value") {
  auto c = SingleOp("ConstantOfShape", {i64({2}, {2, 3})},
                    attrs({{"value", Tensor::from_doubles(DType::i64, {1}, {5})}}));
  CHECK(c.infer()[0] == TensorType{DType::i64, Shape{2, 3}});
  CHECK(c.run()[0].to_doubles() == std::vector<double>(6, 5));
  auto z = SingleOp("ConstantOfShape", {i64({1}, {3})}).run()[0];
  CHECK(z.dtype() == DType::f32);
  CHECK(z.to_doubles() == std::vector<double>(3, 0));
  auto dyn = SingleOp("ConstantOfShape", {TensorType{DType::i64, Shape{2}}});
  CHECK(dyn.infer()[0].shape == Shape({Dim::unknown(), Dim::unknown()}));
}

TEST_CASE("Shape with start and end, Size") {
  Tensor x(DType::f32, {2, 3, 4});
  CHECK(SingleOp("Shape", {x}).run()[0].to_doubles() == std::vector<double>{2, 3, 4});
  CHECK(SingleOp("Shape", {x}, attrs({{"start", int64_t{-2}}})).run()[0].to_doubles() ==
        std::vector<double>{3, 4});
  CHECK(SingleOp("Shape", {x}, attrs({{"start", int64_t{1}}, {"end", int64_t{-1}}}))
            .run()[0]
            .to_doubles() == std::vector<double>{3});
  TensorType sym{DType::f32, Shape({Dim::symbol("b"), 8})};
  CHECK(SingleOp("Shape", {sym}).infer()[0] == TensorType{DType::i64, Shape{2}});
  CHECK(SingleOp("Size", {x}).run()[0].get(0) == 24);
  CHECK(SingleOp("Size", {x}).infer()[0] == TensorType{DType::i64, Shape()});
}

TEST_CASE("Range counts like ONNX for ints and floats") {
  CHECK(SingleOp("Range", {i64({}, {1}), i64({}, {10}), i64({}, {3})}).run()[0].to_doubles() ==
        std::vector<double>{1, 4, 7});
  CHECK(SingleOp("Range", {i64({}, {10}), i64({}, {4}), i64({}, {-3})}).run()[0].to_doubles() ==
        std::vector<double>{10, 7});
  CHECK(SingleOp("Range", {i64({}, {5}), i64({}, {1}), i64({}, {1})}).run()[0].numel() == 0);
  auto f = SingleOp("Range", {f32({}, {0}), f32({}, {1}), f32({}, {0.25})});
  CHECK(f.infer()[0].shape == Shape{4});
  CHECK(f.run()[0].to_doubles() == std::vector<double>{0, 0.25, 0.5, 0.75});
  auto dyn = SingleOp("Range", {TensorType{DType::i64, Shape()}, i64({}, {4}), i64({}, {1})});
  CHECK(dyn.infer()[0].shape == Shape({Dim::unknown()}));
}

TEST_CASE("EyeLike with offset and dtype") {
  auto e = SingleOp("EyeLike", {Tensor(DType::f32, {2, 3})},
                    attrs({{"k", int64_t{1}}, {"dtype", int64_t{7}}}));
  CHECK(e.infer()[0] == TensorType{DType::i64, Shape{2, 3}});
  CHECK(e.run()[0].to_doubles() == std::vector<double>{0, 1, 0, 0, 0, 1});
}
