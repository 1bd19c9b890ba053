// Shape helpers (ir/broadcast.h): broadcasting with symbolic dims, axes, strides, iteration.
#include "ir/broadcast.h"

#include <catch2/catch.hpp>

#include "support/error.h"

using namespace eqfuse;
using namespace eqfuse::ir;

TEST_CASE("broadcast_shapes follows numpy and keeps symbols", "[fast]") {
  CHECK(broadcast_shapes(Shape{2, 1, 4}, Shape{3, 1}) == (Shape{2, 3, 4}));
  CHECK(broadcast_shapes(Shape{}, Shape{5}) == (Shape{5}));
  Dim n = Dim::symbol("n");
  CHECK(broadcast_shapes(Shape{n, 1}, Shape{1, 8}) == (Shape{n, 8}));
  CHECK(broadcast_shapes(Shape{n, 4}, Shape{n, 4}) == (Shape{n, 4}));
  CHECK(broadcast_shapes(Shape{n}, Shape{3}) == (Shape{3}));
  CHECK(broadcast_shapes(Shape{n}, Shape{Dim::symbol("m")}) == (Shape{Dim::unknown()}));
  CHECK_THROWS_AS(broadcast_shapes(Shape{2, 3}, Shape{4}), Error);
  CHECK(broadcast_shapes(Shape{2}, Shape::unranked()) == Shape::unranked());
  CHECK(broadcast_dims({4, 1}, {3}) == std::vector<int64_t>{4, 3});
  CHECK_THROWS_AS(broadcast_dims({2}, {3}), Error);
}

TEST_CASE("axes normalize and reject out-of-range values", "[fast]") {
  CHECK(normalize_axis(-1, 3) == 2);
  CHECK(normalize_axis(0, 3) == 0);
  CHECK_THROWS_AS(normalize_axis(3, 3), Error);
  CHECK_THROWS_AS(normalize_axis(-4, 3), Error);
  CHECK(normalize_axes({-1, 0}, 2) == std::vector<int64_t>{1, 0});
  CHECK_THROWS_AS(normalize_axes({1, -1}, 2), Error);
}

TEST_CASE("strides and the index iterator", "[fast]") {
  CHECK(row_major_strides({2, 3, 4}) == std::vector<int64_t>{12, 4, 1});
  CHECK(broadcast_strides({3, 1}, {2, 3, 4}) == std::vector<int64_t>{0, 1, 0});
  IndexIterator it({2, 3});
  size_t a = it.add_strides(broadcast_strides({3}, {2, 3}));
  size_t b = it.add_strides(broadcast_strides({2, 1}, {2, 3}));
  std::vector<int64_t> oa, ob;
  for (int i = 0; i < 6; ++i, it.next()) {
    oa.push_back(it.offset(a));
    ob.push_back(it.offset(b));
  }
  CHECK(oa == std::vector<int64_t>{0, 1, 2, 0, 1, 2});
  CHECK(ob == std::vector<int64_t>{0, 0, 0, 1, 1, 1});
  CHECK(it.offset(a) == 0);  // wrapped around
}
