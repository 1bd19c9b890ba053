// Layout ops (ir/ops/layout.cpp, layout_slicing.cpp): known answers worked out by hand, shape
// inference with symbolic dims, and errors.
#include <catch2/catch.hpp>

#include "single_op.h"

using namespace eqfuse;
using namespace eqfuse::ir;
using namespace eqfuse::test;

namespace {
std::vector<double> vals(const Tensor& t) {
  return t.to_doubles();
}
Shape sym(std::vector<Dim> d) {
  return Shape(std::move(d));
}
}  // namespace

TEST_CASE("Transpose permutes dims and data") {
  Tensor x = iota_f32({2, 3});
  Tensor y = run1("Transpose", {x});
  CHECK(y.dims() == std::vector<int64_t>{3, 2});
  CHECK(vals(y) == std::vector<double>{0, 3, 1, 4, 2, 5});
  Tensor z =
      run1("Transpose", {iota_f32({2, 3, 4})}, attrs({{"perm", std::vector<int64_t>{1, 0, 2}}}));
  CHECK(z.dims() == std::vector<int64_t>{3, 2, 4});
  // z[c, a, b] = x[a, c, b] = a*12 + c*4 + b
  CHECK(z.get(1 * 8 + 1 * 4 + 3) == 12 + 4 + 3);
  SingleOp s("Transpose", {TensorType{DType::f32, sym({Dim::symbol("b"), 4, 8})}},
             attrs({{"perm", std::vector<int64_t>{0, 2, 1}}}));
  CHECK(s.infer()[0].shape == sym({Dim::symbol("b"), 8, 4}));
  CHECK_THROWS(SingleOp("Transpose", {x}, attrs({{"perm", std::vector<int64_t>{0, 0}}})).infer());
}

TEST_CASE("Reshape handles 0, -1, allowzero and symbolic dims") {
  Tensor x = iota_f32({2, 3, 4});
  Tensor y = run1("Reshape", {x, i64({3}, {0, -1, 2})});
  CHECK(y.dims() == std::vector<int64_t>{2, 6, 2});
  CHECK(vals(y) == vals(x));
  TensorType b{DType::f32, sym({Dim::symbol("batch"), 128, 64})};
  CHECK(SingleOp("Reshape", {b, i64({3}, {0, -1, 16})}).infer()[0].shape ==
        sym({Dim::symbol("batch"), 512, 16}));
  CHECK(SingleOp("Reshape", {b, i64({4}, {0, 0, 4, 16})}).infer()[0].shape ==
        sym({Dim::symbol("batch"), 128, 4, 16}));
  // -1 absorbing the symbol is a symbolic product
  CHECK(SingleOp("Reshape", {b, i64({2}, {-1, 64})}).infer()[0].shape.str() == "[batch*128,64]");
  CHECK(SingleOp("Reshape", {b, i64({2}, {-1, 48})}).infer()[0].shape.str() ==
        "[(batch*8192)/48,48]");
  // a non-constant shape of known length gives unknown dims of that rank
  CHECK(SingleOp("Reshape", {b, TensorType{DType::i64, Shape{3}}}).infer()[0].shape ==
        sym({Dim::unknown(), Dim::unknown(), Dim::unknown()}));
  Tensor e(DType::f32, {0, 3});
  CHECK(SingleOp("Reshape", {e, i64({2}, {3, 0})}, attrs({{"allowzero", int64_t{1}}}))
            .run()[0]
            .dims() == std::vector<int64_t>{3, 0});
  CHECK_THROWS(SingleOp("Reshape", {x, i64({2}, {5, -1})}).infer());
  CHECK_THROWS(SingleOp("Reshape", {x, i64({2}, {-1, -1})}).infer());
}

TEST_CASE("Flatten, Squeeze and Unsqueeze") {
  CHECK(run1("Flatten", {iota_f32({2, 3, 4})}, attrs({{"axis", int64_t{2}}})).dims() ==
        std::vector<int64_t>{6, 4});
  CHECK(run1("Flatten", {iota_f32({2, 3})}, attrs({{"axis", int64_t{0}}})).dims() ==
        std::vector<int64_t>{1, 6});
  TensorType pooled{DType::f32, sym({Dim::symbol("N"), 512, 1, 1})};
  CHECK(SingleOp("Flatten", {pooled}).infer()[0].shape == sym({Dim::symbol("N"), 512}));
  CHECK(run1("Squeeze", {iota_f32({1, 3, 1})}).dims() == std::vector<int64_t>{3});
  CHECK(run1("Squeeze", {iota_f32({1, 3, 1}), i64({1}, {-1})}).dims() ==
        std::vector<int64_t>{1, 3});
  CHECK_THROWS(SingleOp("Squeeze", {iota_f32({1, 3}), i64({1}, {1})}).infer());
  CHECK(run1("Unsqueeze", {iota_f32({3}), i64({2}, {0, -1})}).dims() ==
        std::vector<int64_t>{1, 3, 1});
  CHECK(run1("Unsqueeze", {iota_f32({2, 3})}, attrs({{"axes", std::vector<int64_t>{1}}})).dims() ==
        std::vector<int64_t>{2, 1, 3});
}

TEST_CASE("Concat joins along an axis, keeping symbols") {
  Tensor y = run1("Concat", {iota_f32({2, 1}), iota_f32({2, 2})}, attrs({{"axis", int64_t{-1}}}));
  CHECK(y.dims() == std::vector<int64_t>{2, 3});
  CHECK(vals(y) == std::vector<double>{0, 0, 1, 1, 2, 3});
  SingleOp s("Concat",
             {TensorType{DType::f32, sym({Dim::symbol("b"), 2})},
              TensorType{DType::f32, sym({Dim::symbol("b"), 3})}},
             attrs({{"axis", int64_t{1}}}));
  CHECK(s.infer()[0].shape == sym({Dim::symbol("b"), 5}));
  CHECK_THROWS(
      SingleOp("Concat", {iota_f32({2, 1}), iota_f32({3, 1})}, attrs({{"axis", int64_t{1}}}))
          .infer());
  // empty inputs (shape chains) are fine
  CHECK(vals(run1("Concat", {i64({0}, {}), i64({2}, {4, 5})}, attrs({{"axis", int64_t{0}}}))) ==
        std::vector<double>{4, 5});
}

TEST_CASE("Split by sizes, evenly, and unevenly with num_outputs") {
  SingleOp s("Split", {iota_f32({5, 2}), i64({2}, {2, 3})}, {}, 2);
  auto out = s.run();
  CHECK(vals(out[0]) == std::vector<double>{0, 1, 2, 3});
  CHECK(vals(out[1]) == std::vector<double>{4, 5, 6, 7, 8, 9});
  auto even = SingleOp("Split", {iota_f32({2, 4})}, attrs({{"axis", int64_t{1}}}), 2).run();
  CHECK(vals(even[1]) == std::vector<double>{2, 3, 6, 7});
  auto uneven = SingleOp("Split", {iota_f32({5})}, attrs({{"num_outputs", int64_t{3}}}), 3).infer();
  CHECK(uneven[0].shape == Shape{2});
  CHECK(uneven[2].shape == Shape{1});
  CHECK_THROWS(SingleOp("Split", {iota_f32({5})}, {}, 2).infer());
}

TEST_CASE("Slice with negative steps, clamping and axes") {
  Tensor x = iota_f32({3, 4});
  Tensor y = run1("Slice",
                  {x, i64({2}, {0, 1}), i64({2}, {2, 1000}), OpInput::omitted(), i64({2}, {1, 2})});
  CHECK(y.dims() == std::vector<int64_t>{2, 2});
  CHECK(vals(y) == std::vector<double>{1, 3, 5, 7});
  Tensor r = run1("Slice", {x, i64({1}, {-1}), i64({1}, {-1000}), i64({1}, {1}), i64({1}, {-1})});
  CHECK(vals(r) == std::vector<double>{3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8});
  Tensor stepped = run1("Slice", {x, i64({1}, {2}), i64({1}, {0}), i64({1}, {0}), i64({1}, {-2})});
  CHECK(vals(stepped) == std::vector<double>{8, 9, 10, 11});
  Tensor empty = run1("Slice", {x, i64({1}, {3}), i64({1}, {1}), i64({1}, {1})});
  CHECK(empty.dims() == std::vector<int64_t>{3, 0});
  // opset-1 attributes
  Tensor a = run1("Slice", {x},
                  attrs({{"starts", std::vector<int64_t>{1}}, {"ends", std::vector<int64_t>{2}}}));
  CHECK(vals(a) == std::vector<double>{4, 5, 6, 7});
  TensorType s{DType::f32, sym({Dim::symbol("seq"), 64})};
  CHECK(SingleOp("Slice", {s, i64({1}, {0}), i64({1}, {9223372036854775807.0}), i64({1}, {0})})
            .infer()[0]
            .shape == s.shape);
  CHECK(SingleOp("Slice", {s, i64({1}, {1}), i64({1}, {3}), i64({1}, {1})}).infer()[0].shape ==
        sym({Dim::symbol("seq"), 2}));
  CHECK_THROWS(
      SingleOp("Slice", {x, i64({1}, {0}), i64({1}, {1}), i64({1}, {0}), i64({1}, {0})}).infer());
}

TEST_CASE("Expand and Tile") {
  Tensor y = run1("Expand", {f32({3, 1}, {1, 2, 3}), i64({3}, {2, 1, 2})});
  CHECK(y.dims() == std::vector<int64_t>{2, 3, 2});
  CHECK(vals(y) == std::vector<double>{1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3});
  TensorType b{DType::f32, sym({Dim::symbol("b"), 1})};
  CHECK(SingleOp("Expand", {b, i64({2}, {1, 4})}).infer()[0].shape == sym({Dim::symbol("b"), 4}));
  CHECK_THROWS(SingleOp("Expand", {iota_f32({3}), i64({1}, {4})}).infer());
  Tensor t = run1("Tile", {f32({2, 2}, {1, 2, 3, 4}), i64({2}, {2, 1})});
  CHECK(vals(t) == std::vector<double>{1, 2, 3, 4, 1, 2, 3, 4});
  Tensor t2 = run1("Tile", {f32({2}, {1, 2}), i64({1}, {3})});
  CHECK(vals(t2) == std::vector<double>{1, 2, 1, 2, 1, 2});
}

TEST_CASE("Pad in constant, reflect, edge and wrap modes") {
  Tensor x = f32({1, 3}, {1, 2, 3});
  Tensor pads = i64({4}, {0, 2, 0, 1});
  CHECK(vals(run1("Pad", {x, pads, f32({}, {9})})) == std::vector<double>{9, 9, 1, 2, 3, 9});
  CHECK(vals(run1("Pad", {x, pads}, attrs({{"mode", std::string("reflect")}}))) ==
        std::vector<double>{3, 2, 1, 2, 3, 2});
  CHECK(vals(run1("Pad", {x, pads}, attrs({{"mode", std::string("edge")}}))) ==
        std::vector<double>{1, 1, 1, 2, 3, 3});
  CHECK(vals(run1("Pad", {x, pads}, attrs({{"mode", std::string("wrap")}}))) ==
        std::vector<double>{2, 3, 1, 2, 3, 1});
  // negative pads crop; attribute form of opset 2
  CHECK(vals(run1("Pad", {x}, attrs({{"pads", std::vector<int64_t>{0, -1, 0, 0}}}))) ==
        std::vector<double>{2, 3});
  // axes input (opset 18)
  CHECK(vals(run1("Pad", {x, i64({2}, {1, 0}), OpInput::omitted(), i64({1}, {1})})) ==
        std::vector<double>{0, 1, 2, 3});
}

TEST_CASE("Identity, Dropout, DepthToSpace and SpaceToDepth") {
  CHECK(vals(run1("Identity", {f32({2}, {1, 2})})) == std::vector<double>{1, 2});
  SingleOp drop("Dropout", {f32({2}, {1, 2})}, {}, 2);
  auto d = drop.run();
  CHECK(vals(d[0]) == std::vector<double>{1, 2});
  CHECK(d[1].dtype() == DType::boolean);
  CHECK(drop.infer()[1].dtype == DType::boolean);
  Tensor x = iota_f32({1, 4, 1, 1});
  Tensor dcr = run1("DepthToSpace", {x}, attrs({{"blocksize", int64_t{2}}}));
  CHECK(dcr.dims() == std::vector<int64_t>{1, 1, 2, 2});
  CHECK(vals(dcr) == std::vector<double>{0, 1, 2, 3});
  Tensor x2 = iota_f32({1, 8, 1, 1});
  // DCR: out[0,c,i,j] = x[(i*2+j)*2 + c]; CRD: x[c*4 + i*2 + j]
  CHECK(vals(run1("DepthToSpace", {x2}, attrs({{"blocksize", int64_t{2}}}))) ==
        std::vector<double>{0, 2, 4, 6, 1, 3, 5, 7});
  CHECK(vals(run1("DepthToSpace", {x2},
                  attrs({{"blocksize", int64_t{2}}, {"mode", std::string("CRD")}}))) ==
        std::vector<double>{0, 1, 2, 3, 4, 5, 6, 7});
  Tensor s = iota_f32({1, 1, 2, 2});
  Tensor sd = run1("SpaceToDepth", {s}, attrs({{"blocksize", int64_t{2}}}));
  CHECK(sd.dims() == std::vector<int64_t>{1, 4, 1, 1});
  CHECK(vals(sd) == std::vector<double>{0, 1, 2, 3});
  Tensor back =
      run1("DepthToSpace",
           {run1("SpaceToDepth", {iota_f32({1, 2, 4, 6})}, attrs({{"blocksize", int64_t{2}}}))},
           attrs({{"blocksize", int64_t{2}}}));
  CHECK(vals(back) == vals(iota_f32({1, 2, 4, 6})));
}

TEST_CASE("layout work counts the bytes moved") {
  SingleOp t("Transpose", {iota_f32({4, 8})});
  CHECK(t.work().bytes_read == 128);
  CHECK(t.work().bytes_written == 128);
  CHECK(t.work().flops == 0);
  CHECK(find_op("Slice")->fusion == FusionClass::Layout);
}
