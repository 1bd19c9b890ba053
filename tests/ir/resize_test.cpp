// Resize and Upsample (ir/ops/resize.cpp) on tiny inputs whose answers are worked out by hand.
#include <catch2/catch.hpp>

#include "single_op.h"

using namespace eqfuse;
using namespace eqfuse::ir;
using namespace eqfuse::test;

namespace {
std::vector<double> vals(const Tensor& t) {
  return t.to_doubles();
}
void check_near(const Tensor& t, const std::vector<double>& want) {
  auto got = t.to_doubles();
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == Approx(want[i]).margin(1e-5));
}
Tensor scales(std::vector<double> s) {
  return Tensor::from_doubles(DType::f32, {int64_t(s.size())}, s);
}
}  // namespace

TEST_CASE("Resize nearest with half_pixel and round_prefer_floor") {
  Tensor x = f32({1, 1, 2, 2}, {1, 2, 3, 4});
  // x_orig = (o + 0.5)/2 - 0.5 = -0.25, 0.25, 0.75, 1.25 -> 0, 0, 1, 1
  Tensor y = run1("Resize", {x, OpInput::omitted(), scales({1, 1, 2, 2})});
  CHECK(vals(y) == std::vector<double>{1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4});
  // asymmetric + floor takes x_orig = o / 3 -> 0, 0, 0, 1, 1, 1
  Tensor a = run1("Resize", {f32({1, 2}, {1, 2}), OpInput::omitted(), scales({1, 3})},
                  attrs({{"coordinate_transformation_mode", std::string("asymmetric")},
                         {"nearest_mode", std::string("floor")}}));
  CHECK(vals(a) == std::vector<double>{1, 1, 1, 2, 2, 2});
  // round_prefer_ceil on 0.5 goes up: sizes 1x4 from 1x2, asymmetric: x = 0, 0.5, 1, 1.5
  Tensor c = run1("Resize",
                  {f32({1, 2}, {1, 2}), OpInput::omitted(), OpInput::omitted(), i64({2}, {1, 4})},
                  attrs({{"coordinate_transformation_mode", std::string("asymmetric")},
                         {"nearest_mode", std::string("round_prefer_ceil")}}));
  CHECK(vals(c) == std::vector<double>{1, 2, 2, 2});
}

TEST_CASE("Resize linear: align_corners, half_pixel downsampling, pytorch_half_pixel") {
  Tensor x = f32({1, 1, 2, 2}, {1, 2, 3, 4});
  Tensor ac = run1("Resize", {x, OpInput::omitted(), OpInput::omitted(), i64({4}, {1, 1, 3, 3})},
                   attrs({{"mode", std::string("linear")},
                          {"coordinate_transformation_mode", std::string("align_corners")}}));
  check_near(ac, {1, 1.5, 2, 2, 2.5, 3, 3, 3.5, 4});
  // ONNX's resize_downsample_scales_linear: rows at 1/3, columns at 1/3 and 2.
  Tensor d = run1("Resize", {iota_f32({1, 1, 2, 4}), OpInput::omitted(), scales({1, 1, 0.6, 0.6})},
                  attrs({{"mode", std::string("linear")}}));
  // (ONNX's example holds 1..8 and expects 2.6667, 4.3333; this input is 0..7.)
  check_near(d, {5.0 / 3, 10.0 / 3});
  // pytorch_half_pixel maps a single output to 0
  Tensor p = run1(
      "Resize", {f32({1, 3}, {4, 5, 6}), OpInput::omitted(), OpInput::omitted(), i64({2}, {1, 1})},
      attrs({{"mode", std::string("linear")},
             {"coordinate_transformation_mode", std::string("pytorch_half_pixel")}}));
  check_near(p, {4});
  // half_pixel upsampling clamps at the edges: x = -0.25, 0.25, 0.75, 1.25
  Tensor u = run1("Resize", {f32({1, 2}, {0, 4}), OpInput::omitted(), scales({1, 2})},
                  attrs({{"mode", std::string("linear")}}));
  check_near(u, {0, 1, 3, 4});
}

TEST_CASE("Resize cubic weights; exclude_outside renormalizes") {
  Tensor ramp = iota_f32({1, 8});
  Tensor y = run1("Resize", {ramp, OpInput::omitted(), scales({1, 2})},
                  attrs({{"mode", std::string("cubic")}}));
  REQUIRE(y.numel() == 16);
  // output 7 maps to 3.25 (t = 0.25, taps 2..5 inside). With A = -0.75 the weights are
  // -0.10546875, 0.87890625, 0.26171875, -0.03515625 (worked by hand): 3.296875.
  CHECK(y.get(7) == Approx(3.296875));
  // With A = -0.5 the Keys kernel reproduces linear data exactly.
  Tensor keys = run1("Resize", {ramp, OpInput::omitted(), scales({1, 2})},
                     attrs({{"mode", std::string("cubic")}, {"cubic_coeff_a", -0.5}}));
  CHECK(keys.get(7) == Approx(3.25));
  Tensor flat = run1("Resize", {f32({1, 3}, {2, 2, 2}), OpInput::omitted(), scales({1, 2})},
                     attrs({{"mode", std::string("cubic")}, {"exclude_outside", int64_t{1}}}));
  for (double v : vals(flat)) CHECK(v == Approx(2));
}

TEST_CASE("Resize tf_crop_and_resize extrapolates outside the crop") {
  Tensor x = f32({1, 4}, {1, 2, 3, 4});
  Tensor roi = f32({4}, {0, 0.5, 1, 1.5});
  // x_orig = 0.5*3 + o*1.0*3/2 = 1.5, 3, 4.5 (outside)
  Tensor y = run1("Resize", {x, roi, OpInput::omitted(), i64({2}, {1, 3})},
                  attrs({{"mode", std::string("linear")},
                         {"coordinate_transformation_mode", std::string("tf_crop_and_resize")},
                         {"extrapolation_value", 10.0}}));
  check_near(y, {2.5, 4, 10});
}

TEST_CASE("Resize sizes with axes and keep_aspect_ratio_policy; shape inference; Upsample") {
  Tensor x = iota_f32({1, 1, 2, 4});
  SingleOp keep("Resize", {x, OpInput::omitted(), OpInput::omitted(), i64({2}, {4, 4})},
                attrs({{"axes", std::vector<int64_t>{2, 3}},
                       {"keep_aspect_ratio_policy", std::string("not_larger")}}));
  CHECK(keep.infer()[0].shape == Shape{1, 1, 2, 4});
  SingleOp big("Resize", {x, OpInput::omitted(), OpInput::omitted(), i64({2}, {4, 4})},
               attrs({{"axes", std::vector<int64_t>{2, 3}},
                      {"keep_aspect_ratio_policy", std::string("not_smaller")}}));
  CHECK(big.infer()[0].shape == Shape{1, 1, 4, 8});
  CHECK(big.run()[0].dims() == std::vector<int64_t>{1, 1, 4, 8});
  TensorType sym{DType::f32, Shape({Dim::symbol("N"), 3, 16, 16})};
  CHECK(SingleOp("Resize", {sym, OpInput::omitted(), scales({1, 1, 2, 2})}).infer()[0].shape ==
        Shape({Dim::symbol("N"), 3, 32, 32}));
  CHECK(SingleOp("Resize", {sym, OpInput::omitted(), TensorType{DType::f32, Shape{4}}})
            .infer()[0]
            .shape.rank() == 4);
  // Upsample (opset 9): nearest on asymmetric coordinates
  Tensor up = run1("Upsample", {f32({1, 1, 1, 2}, {1, 2}), scales({1, 1, 2, 2})});
  CHECK(vals(up) == std::vector<double>{1, 1, 2, 2, 1, 1, 2, 2});
  CHECK(find_op("Resize")->fusion == FusionClass::Opaque);
}
