// Pooling ops (ir/ops/pooling.cpp): answers worked out by hand (several are ONNX's own
// documented examples), shape inference and work.
#include <catch2/catch.hpp>

#include "single_op.h"

using namespace eqfuse;
using namespace eqfuse::ir;
using namespace eqfuse::test;

namespace {
std::vector<double> vals(const Tensor& t) {
  return t.to_doubles();
}
Tensor ones_based(std::vector<int64_t> dims) {  // 1, 2, 3, ...
  Tensor t(DType::f32, std::move(dims));
  for (int64_t i = 0; i < t.numel(); ++i) t.set(i, double(i + 1));
  return t;
}
std::vector<int64_t> v(std::initializer_list<int64_t> l) {
  return l;
}
}  // namespace

TEST_CASE("MaxPool values and indices in both storage orders") {
  Tensor x = iota_f32({1, 1, 4, 4});
  SingleOp mp("MaxPool", {x}, attrs({{"kernel_shape", v({2, 2})}, {"strides", v({2, 2})}}), 2);
  auto out = mp.run();
  CHECK(vals(out[0]) == std::vector<double>{5, 7, 13, 15});
  CHECK(vals(out[1]) == std::vector<double>{5, 7, 13, 15});
  CHECK(mp.infer()[1] == TensorType{DType::i64, Shape{1, 1, 2, 2}});
  auto col = SingleOp("MaxPool", {x},
                      attrs({{"kernel_shape", v({2, 2})},
                             {"strides", v({2, 2})},
                             {"storage_order", int64_t{1}}}),
                      2)
                 .run();
  CHECK(vals(col[1]) == std::vector<double>{5, 13, 7, 15});
  // indices count the batch and channel offsets
  auto two =
      SingleOp("MaxPool", {iota_f32({1, 2, 2, 2})}, attrs({{"kernel_shape", v({2, 2})}}), 2).run();
  CHECK(vals(two[1]) == std::vector<double>{3, 7});
}

TEST_CASE("MaxPool pads, ceil_mode, dilations and auto_pad (ONNX examples)") {
  Tensor x5 = ones_based({1, 1, 5, 5});
  Tensor p = run1("MaxPool", {x5}, attrs({{"kernel_shape", v({5, 5})}, {"pads", v({2, 2, 2, 2})}}));
  CHECK(vals(p) == std::vector<double>{13, 14, 15, 15, 15, 18, 19, 20, 20, 20, 23, 24, 25,
                                       25, 25, 23, 24, 25, 25, 25, 23, 24, 25, 25, 25});
  Tensor x4 = ones_based({1, 1, 4, 4});
  Tensor c =
      run1("MaxPool", {x4},
           attrs({{"kernel_shape", v({3, 3})}, {"strides", v({2, 2})}, {"ceil_mode", int64_t{1}}}));
  CHECK(vals(c) == std::vector<double>{11, 12, 15, 16});
  Tensor d = run1("MaxPool", {x4}, attrs({{"kernel_shape", v({2, 2})}, {"dilations", v({2, 2})}}));
  CHECK(vals(d) == std::vector<double>{11, 12, 15, 16});
  Tensor same = run1("MaxPool", {x5},
                     attrs({{"kernel_shape", v({3, 3})},
                            {"strides", v({2, 2})},
                            {"auto_pad", std::string("SAME_UPPER")}}));
  CHECK(vals(same) == std::vector<double>{7, 9, 10, 17, 19, 20, 22, 24, 25});
  Tensor one_d =
      run1("MaxPool", {f32({1, 1, 5}, {1, 5, 2, 4, 3})}, attrs({{"kernel_shape", v({2})}}));
  CHECK(vals(one_d) == std::vector<double>{5, 5, 4, 4});
  TensorType sym{DType::f32, Shape({Dim::symbol("N"), 64, 112, 112})};
  SingleOp s(
      "MaxPool", {sym},
      attrs({{"kernel_shape", v({3, 3})}, {"strides", v({2, 2})}, {"pads", v({1, 1, 1, 1})}}));
  CHECK(s.infer()[0].shape == Shape({Dim::symbol("N"), 64, 56, 56}));
  CHECK_THROWS(SingleOp("MaxPool", {x4}).infer());  // kernel_shape is required
}

TEST_CASE("AveragePool with and without the padding in the count") {
  Tensor x = ones_based({1, 1, 3, 3});
  Tensor a = run1("AveragePool", {x}, attrs({{"kernel_shape", v({2, 2})}}));
  CHECK(vals(a) == std::vector<double>{3, 4, 6, 7});
  Tensor ex =
      run1("AveragePool", {x}, attrs({{"kernel_shape", v({3, 3})}, {"pads", v({1, 1, 1, 1})}}));
  // corner window holds 1,2,4,5
  CHECK(ex.get(0) == 3.0);
  CHECK(ex.get(4) == 5.0);
  Tensor in = run1("AveragePool", {x},
                   attrs({{"kernel_shape", v({3, 3})},
                          {"pads", v({1, 1, 1, 1})},
                          {"count_include_pad", int64_t{1}}}));
  CHECK(in.get(0) == Approx(12.0 / 9));
  CHECK(in.get(4) == 5.0);
  Tensor lp = run1("LpPool", {f32({1, 1, 2}, {3, 4})}, attrs({{"kernel_shape", v({2})}}));
  CHECK(lp.get(0) == Approx(5.0));
  SingleOp w("AveragePool", {iota_f32({1, 2, 4, 4})},
             attrs({{"kernel_shape", v({2, 2})}, {"strides", v({2, 2})}}));
  CHECK(w.work().flops == 2 * 4 * 4);
  CHECK(find_op("AveragePool")->fusion == FusionClass::Reduction);
}

TEST_CASE("Global pools reduce every spatial axis") {
  Tensor x = iota_f32({1, 2, 2, 2});
  Tensor g = run1("GlobalAveragePool", {x});
  CHECK(g.dims() == std::vector<int64_t>{1, 2, 1, 1});
  CHECK(vals(g) == std::vector<double>{1.5, 5.5});
  CHECK(vals(run1("GlobalMaxPool", {x})) == std::vector<double>{3, 7});
  TensorType sym{DType::f32, Shape({Dim::symbol("N"), 512, 7, 7})};
  CHECK(SingleOp("GlobalAveragePool", {sym}).infer()[0].shape ==
        Shape({Dim::symbol("N"), 512, 1, 1}));
}
