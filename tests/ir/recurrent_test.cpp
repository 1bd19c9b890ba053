// RNN, GRU and LSTM (ir/ops/recurrent.cpp): one-unit cells worked by hand with the ONNX
// equations, and structural properties (reverse = forward over the reversed sequence,
// sequence_lens, layout 1, shape inference).
#include <catch2/catch.hpp>
#include <cmath>

#include "single_op.h"

using namespace eqfuse;
using namespace eqfuse::ir;
using namespace eqfuse::test;

namespace {
double sig(double x) {
  return 1 / (1 + std::exp(-x));
}
std::vector<double> vals(const Tensor& t) {
  return t.to_doubles();
}
void check_near(const std::vector<double>& got, const std::vector<double>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == Approx(want[i]).margin(1e-6));
}
}  // namespace

TEST_CASE("RNN one unit by hand") {
  Tensor x = f32({2, 1, 1}, {1, 2});
  Tensor w = f32({1, 1, 1}, {0.5}), r = f32({1, 1, 1}, {0.25}), b = f32({1, 2}, {0.125, 0.25});
  SingleOp op("RNN", {x, w, r, b}, attrs({{"hidden_size", int64_t{1}}}), 2);
  auto out = op.run();
  double h1 = std::tanh(0.5 + 0.375), h2 = std::tanh(1.0 + 0.25 * h1 + 0.375);
  check_near(vals(out[0]), {h1, h2});
  check_near(vals(out[1]), {h2});
  CHECK(op.infer()[0].shape == Shape{2, 1, 1, 1});
  // Relu activation and an initial state
  auto relu = SingleOp("RNN", {x, w, r, b, OpInput::omitted(), f32({1, 1, 1}, {-8})},
                       attrs({{"activations", std::vector<std::string>{"Relu"}}}), 2)
                  .run();
  check_near(vals(relu[0]), {0, 1.375});
}

TEST_CASE("LSTM one unit by hand, with peepholes") {
  Tensor x = f32({2, 1, 1}, {1, -1});
  // gate order i, o, f, c
  Tensor w = f32({1, 4, 1}, {0.5, -0.25, 0.75, 1.0});
  Tensor r = f32({1, 4, 1}, {0.1, 0.2, 0.3, 0.4});
  Tensor b = f32({1, 8}, {0.1, 0, 0, 0, 0, 0, 0.2, 0});
  Tensor p = f32({1, 3}, {0.5, 0.25, -0.5});  // Pi, Po, Pf
  SingleOp op("LSTM", {x, w, r, b, OpInput::omitted(), OpInput::omitted(), OpInput::omitted(), p},
              {}, 3);
  auto out = op.run();
  double h = 0, c = 0;
  std::vector<double> ys;
  for (double xt : {1.0, -1.0}) {
    double i = sig(0.5 * xt + 0.1 * h + 0.5 * c + 0.1);
    double f = sig(0.75 * xt + 0.3 * h - 0.5 * c + 0.2);
    double cand = std::tanh(1.0 * xt + 0.4 * h);
    c = f * c + i * cand;
    double o = sig(-0.25 * xt + 0.2 * h + 0.25 * c);
    h = o * std::tanh(c);
    ys.push_back(h);
  }
  check_near(vals(out[0]), ys);
  check_near(vals(out[1]), {h});
  check_near(vals(out[2]), {c});
  auto types = op.infer();
  REQUIRE(types.size() == 3);
  CHECK(types[2].shape == Shape{1, 1, 1});
}

TEST_CASE("GRU one unit by hand, both reset placements") {
  Tensor x = f32({2, 1, 1}, {1, 2});
  Tensor w = f32({1, 3, 1}, {0.5, -0.5, 1.0});  // z, r, h
  Tensor r = f32({1, 3, 1}, {0.25, 0.5, -0.75});
  Tensor b = f32({1, 6}, {0, 0, 0.1, 0, 0, 0.3});  // Wb then Rb; Rbh = 0.3
  for (int64_t lbr : {0, 1}) {
    auto out = SingleOp("GRU", {x, w, r, b}, attrs({{"linear_before_reset", lbr}}), 2).run();
    double h = 0;
    std::vector<double> ys;
    for (double xt : {1.0, 2.0}) {
      double z = sig(0.5 * xt + 0.25 * h);
      double rg = sig(-0.5 * xt + 0.5 * h);
      double pre =
          lbr ? 1.0 * xt + 0.1 + rg * (-0.75 * h + 0.3) : 1.0 * xt + 0.1 + (-0.75 * rg * h) + 0.3;
      double cand = std::tanh(pre);
      h = (1 - z) * cand + z * h;
      ys.push_back(h);
    }
    check_near(vals(out[0]), ys);
    check_near(vals(out[1]), {h});
  }
}

TEST_CASE("bidirectional: the reverse half is a forward pass over the reversed sequence") {
  Tensor x = f32({3, 2, 2}, {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2});
  Tensor xr = f32({3, 2, 2}, {0.9, 1.0, 1.1, 1.2, 0.5, 0.6, 0.7, 0.8, 0.1, 0.2, 0.3, 0.4});
  Tensor w1 = f32({1, 6, 2}, {0.1, -0.2, 0.3, 0.4, -0.5, 0.6, 0.7, 0.8, -0.9, 0.1, 0.2, 0.3});
  Tensor r1 = f32({1, 6, 2}, {0.2, 0.1, -0.1, 0.3, 0.5, -0.4, 0.2, 0.2, 0.1, -0.3, 0.4, 0.1});
  Tensor w2(DType::f32, {2, 6, 2}), r2(DType::f32, {2, 6, 2});
  for (int64_t i = 0; i < 12; ++i) {
    w2.set(i, w1.get(i));
    w2.set(12 + i, w1.get(i));
    r2.set(i, r1.get(i));
    r2.set(12 + i, r1.get(i));
  }
  Attributes bi = attrs({{"direction", std::string("bidirectional")}, {"hidden_size", int64_t{2}}});
  SingleOp both("GRU", {x, w2, r2}, bi, 2);
  CHECK(both.infer()[0].shape == Shape{3, 2, 2, 2});
  auto y = both.run();
  auto fwd = SingleOp("GRU", {xr, w1, r1}, {}, 2).run();
  // Y[t, 1, b, :] == fwd over reversed input at T-1-t
  for (int64_t t = 0; t < 3; ++t)
    for (int64_t k = 0; k < 4; ++k)
      CHECK(y[0].get(((t * 2 + 1) * 2) * 2 + k) == Approx(fwd[0].get((2 - t) * 4 + k)));
  for (int64_t k = 0; k < 4; ++k) CHECK(y[1].get(4 + k) == Approx(fwd[1].get(k)));
}

TEST_CASE("sequence_lens stops each batch row; layout 1 transposes") {
  Tensor x = f32({2, 2, 1}, {1, 2, 3, 4});  // [seq, batch, input]
  Tensor w = f32({1, 1, 1}, {0.5}), r = f32({1, 1, 1}, {0.5});
  Tensor lens = Tensor::from_doubles(DType::i32, {2}, {2, 1});
  auto out = SingleOp("RNN", {x, w, r, OpInput::omitted(), lens}, {}, 2).run();
  double a1 = std::tanh(0.5), a2 = std::tanh(1.5 + 0.5 * a1), b1 = std::tanh(1.0);
  check_near(vals(out[0]), {a1, b1, a2, 0});
  check_near(vals(out[1]), {a2, b1});
  Tensor xb = f32({2, 2, 1}, {1, 3, 2, 4});  // [batch, seq, input]
  SingleOp l1("RNN", {xb, w, r}, attrs({{"layout", int64_t{1}}}), 2);
  CHECK(l1.infer()[0].shape == Shape{2, 2, 1, 1});
  auto o1 = l1.run();
  double b2 = std::tanh(2.0 + 0.5 * b1);
  check_near(vals(o1[0]), {a1, a2, b1, b2});
  check_near(vals(o1[1]), {a2, b2});
  TensorType sym{DType::f32, Shape({Dim::symbol("seq"), Dim::symbol("batch"), 1})};
  CHECK(
      SingleOp("LSTM", {sym, Tensor(DType::f32, {1, 12, 1}), Tensor(DType::f32, {1, 12, 3})}, {}, 3)
          .infer()[0]
          .shape == Shape({Dim::symbol("seq"), 1, Dim::symbol("batch"), 3}));
  CHECK(find_op("LSTM")->fusion == FusionClass::Opaque);
}
