// BatchNormalization, LayerNormalization, InstanceNormalization (ir/ops/normalization.cpp).
#include <catch2/catch.hpp>
#include <cmath>

#include "single_op.h"

using namespace eqfuse;
using namespace eqfuse::ir;
using namespace eqfuse::test;

TEST_CASE("BatchNormalization in inference mode", "[fast]") {
  Tensor x = f32({1, 2, 2}, {1, 3, 10, 20});
  Tensor y = run1("BatchNormalization",
                  {x, f32({2}, {2, 1}), f32({2}, {0.5, 0}), f32({2}, {1, 10}), f32({2}, {4, 100})},
                  attrs({{"epsilon", 0.0}}));
  // channel 0: (x-1)/2*2+0.5 ; channel 1: (x-10)/10
  CHECK(y.to_doubles() == std::vector<double>{0.5, 2.5, 0, 1});
  CHECK_THROWS_AS(SingleOp("BatchNormalization",
                           {TensorType{DType::f32, Shape{1, 3, 4}},
                            TensorType{DType::f32, Shape{2}}, TensorType{DType::f32, Shape{3}},
                            TensorType{DType::f32, Shape{3}}, TensorType{DType::f32, Shape{3}}})
                      .infer(),
                  Error);
  try {
    SingleOp("BatchNormalization",
             {TensorType{DType::f32, Shape{1, 2}}, TensorType{DType::f32, Shape{2}},
              TensorType{DType::f32, Shape{2}}, TensorType{DType::f32, Shape{2}},
              TensorType{DType::f32, Shape{2}}},
             attrs({{"training_mode", int64_t{1}}}))
        .infer();
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(e.kind() == Error::Kind::Unsupported);
  }
}

TEST_CASE("LayerNormalization with Mean and InvStdDev outputs", "[fast]") {
  Tensor x = f32({2, 2}, {1, 3, -2, 2});
  SingleOp op("LayerNormalization", {x, f32({2}, {1, 2}), f32({1}, {10})},
              attrs({{"epsilon", 0.0}}), 3);
  std::vector<TensorType> types = op.infer();
  CHECK(types[1] == (TensorType{DType::f32, Shape{2, 1}}));
  std::vector<Tensor> out = op.run();
  CHECK(out[0].to_doubles() == std::vector<double>{9, 12, 9, 12});
  CHECK(out[1].to_doubles() == std::vector<double>{2, 0});
  CHECK(out[2].to_doubles() == std::vector<double>{1, 0.5});
  // axis 0 normalizes over everything.
  Tensor all = run1("LayerNormalization", {x, f32({}, {1})}, attrs({{"axis", int64_t{0}}}));
  double sum = 0;
  for (double v : all.to_doubles()) sum += v;
  CHECK(sum == Approx(0).margin(1e-6));
  CHECK_THROWS_AS(SingleOp("LayerNormalization",
                           {TensorType{DType::f32, Shape{2, 4}}, TensorType{DType::f32, Shape{3}}})
                      .infer(),
                  Error);
}

TEST_CASE("InstanceNormalization normalizes each (n, c) plane", "[fast]") {
  Tensor x = f32({1, 2, 2}, {1, 3, 5, 5});
  Tensor y = run1("InstanceNormalization", {x, f32({2}, {1, 1}), f32({2}, {0, 7})},
                  attrs({{"epsilon", 0.0}}));
  CHECK(y.to_doubles()[0] == Approx(-1));
  CHECK(y.to_doubles()[1] == Approx(1));
  CHECK(std::isnan(y.to_doubles()[2]));  // zero variance and epsilon 0
}
