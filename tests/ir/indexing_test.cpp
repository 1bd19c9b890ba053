// Indexing ops (ir/ops/indexing.cpp): known answers worked out by hand.
#include <catch2/catch.hpp>

#include "single_op.h"

using namespace eqfuse;
using namespace eqfuse::ir;
using namespace eqfuse::test;

namespace {
std::vector<double> vals(const Tensor& t) {
  return t.to_doubles();
}
}  // namespace

TEST_CASE("Gather rows and columns, negative indices, symbolic shapes") {
  Tensor x = iota_f32({3, 2});
  CHECK(vals(run1("Gather", {x, i64({2}, {2, -3})})) == std::vector<double>{4, 5, 0, 1});
  Tensor c = run1("Gather", {x, i64({1, 1}, {1})}, attrs({{"axis", int64_t{1}}}));
  CHECK(c.dims() == std::vector<int64_t>{3, 1, 1});
  CHECK(vals(c) == std::vector<double>{1, 3, 5});
  Tensor s = run1("Gather", {x, i64({}, {1})});
  CHECK(s.dims() == std::vector<int64_t>{2});
  SingleOp emb("Gather", {iota_f32({100, 16}),
                          TensorType{DType::i64, Shape({Dim::symbol("b"), Dim::symbol("s")})}});
  CHECK(emb.infer()[0].shape == Shape({Dim::symbol("b"), Dim::symbol("s"), 16}));
  // work reads the gathered rows, not the table
  SingleOp rows("Gather", {iota_f32({100, 16}), i64({2}, {0, 1})});
  CHECK(rows.work().bytes_read == 2 * 16 * 4 + 2 * 8);
  CHECK_THROWS(run1("Gather", {x, i64({1}, {3})}));
}

TEST_CASE("GatherElements and GatherND") {
  Tensor x = f32({2, 2}, {1, 2, 3, 4});
  CHECK(vals(run1("GatherElements", {x, i64({2, 2}, {0, 0, 1, 0})},
                  attrs({{"axis", int64_t{1}}}))) == std::vector<double>{1, 1, 4, 3});
  CHECK(vals(run1("GatherElements", {x, i64({1, 2}, {1, 0})})) == std::vector<double>{3, 2});
  CHECK(vals(run1("GatherND", {x, i64({2, 2}, {0, 0, 1, 1})})) == std::vector<double>{1, 4});
  CHECK(vals(run1("GatherND", {x, i64({2, 1}, {1, 0})})) == std::vector<double>{3, 4, 1, 2});
  Tensor b = iota_f32({2, 2, 2});
  Tensor g = run1("GatherND", {b, i64({2, 1}, {1, 0})}, attrs({{"batch_dims", int64_t{1}}}));
  CHECK(g.dims() == std::vector<int64_t>{2, 2});
  CHECK(vals(g) == std::vector<double>{2, 3, 4, 5});
}

TEST_CASE("ScatterElements and ScatterND with reductions") {
  Tensor d(DType::f32, {3});
  CHECK(vals(run1("ScatterElements", {d, i64({2}, {2, 0}), f32({2}, {5, 6})})) ==
        std::vector<double>{6, 0, 5});
  CHECK(vals(run1("ScatterElements", {f32({3}, {1, 1, 1}), i64({2}, {1, 1}), f32({2}, {2, 3})},
                  attrs({{"reduction", std::string("add")}}))) == std::vector<double>{1, 6, 1});
  CHECK(vals(run1("ScatterND", {iota_f32({2, 2}), i64({1, 1}, {1}), f32({1, 2}, {9, 8})})) ==
        std::vector<double>{0, 1, 9, 8});
  CHECK(vals(run1("ScatterND", {iota_f32({2, 2}), i64({1, 2}, {0, 1}), f32({1}, {4})},
                  attrs({{"reduction", std::string("mul")}}))) == std::vector<double>{0, 4, 2, 3});
}

TEST_CASE("Trilu keeps the upper or lower triangle") {
  Tensor x = f32({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  CHECK(vals(run1("Trilu", {x})) == std::vector<double>{1, 2, 3, 0, 5, 6, 0, 0, 9});
  CHECK(vals(run1("Trilu", {x, i64({}, {-1})}, attrs({{"upper", int64_t{0}}}))) ==
        std::vector<double>{0, 0, 0, 4, 0, 0, 7, 8, 0});
  CHECK(vals(run1("Trilu", {x, i64({}, {1})})) == std::vector<double>{0, 2, 3, 0, 0, 6, 0, 0, 0});
}

TEST_CASE("OneHot, NonZero and TopK") {
  Tensor oh = run1("OneHot", {i64({2}, {1, -1}), i64({}, {3}), f32({2}, {0, 1})});
  CHECK(oh.dims() == std::vector<int64_t>{2, 3});
  CHECK(vals(oh) == std::vector<double>{0, 1, 0, 0, 0, 1});
  Tensor oh0 = run1("OneHot", {i64({2}, {0, 2}), i64({}, {3}), f32({2}, {0, 1})},
                    attrs({{"axis", int64_t{0}}}));
  CHECK(vals(oh0) == std::vector<double>{1, 0, 0, 0, 0, 1});
  Tensor nz = run1("NonZero", {f32({2, 2}, {1, 0, 0, 3})});
  CHECK(nz.dims() == std::vector<int64_t>{2, 2});
  CHECK(vals(nz) == std::vector<double>{0, 1, 0, 1});
  CHECK(SingleOp("NonZero", {iota_f32({2, 3})}).infer()[0].shape == Shape({2, Dim::unknown()}));
  SingleOp top("TopK", {f32({2, 3}, {1, 3, 2, 5, 5, 4}), i64({1}, {2})}, {}, 2);
  auto t = top.run();
  CHECK(vals(t[0]) == std::vector<double>{3, 2, 5, 5});
  CHECK(vals(t[1]) == std::vector<double>{1, 2, 0, 1});
  auto small =
      SingleOp("TopK", {f32({3}, {1, 3, 2}), i64({1}, {1})}, attrs({{"largest", int64_t{0}}}), 2)
          .run();
  CHECK(vals(small[0]) == std::vector<double>{1});
  CHECK(top.infer()[1] == TensorType{DType::i64, Shape{2, 2}});
}
