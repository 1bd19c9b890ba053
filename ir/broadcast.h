#pragma once
// Shape helpers every op group shares: numpy broadcasting (over shapes with symbolic dims for
// inference, over integer dims for kernels), axis normalization, row-major strides, and a
// multi-index iterator that walks an output while tracking offsets into several inputs. They
// exist so that each op entry states its rule in a line and all ops agree on the edge cases
// (negative axes, size-1 dims against symbols, empty tensors).
#include <cstdint>
#include <string_view>
#include <vector>

#include "ir/shape.h"

namespace eqfuse::ir {

// numpy broadcasting of two shapes. Dims align from the right; 1 stretches to the other dim;
// equal dims (static or the same symbol) stay; a symbol against a static n > 1 becomes n (the
// only size that can work); two different symbols give an unknown dim. Static sizes that differ
// and are not 1 throw Error (BadInput) saying which dims clash. Unranked in gives unranked out.
Shape broadcast_shapes(const Shape& a, const Shape& b);
Shape broadcast_shapes(const std::vector<Shape>& shapes);  // left fold; empty -> scalar
// The same over concrete dims (kernels).
std::vector<int64_t> broadcast_dims(const std::vector<int64_t>& a, const std::vector<int64_t>& b);

// An axis in [-rank, rank) as a value in [0, rank); Error (BadInput) when out of range.
int64_t normalize_axis(int64_t axis, int64_t rank);
// Each axis normalized; Error on duplicates.
std::vector<int64_t> normalize_axes(const std::vector<int64_t>& axes, int64_t rank);

// Row-major (C order) element strides of dims; the last stride is 1.
std::vector<int64_t> row_major_strides(const std::vector<int64_t>& dims);
// Strides for reading a tensor of `in_dims` as if broadcast to `out_dims` (right-aligned):
// a broadcast (size-1 or missing) dim gets stride 0. Result has out_dims.size() entries.
std::vector<int64_t> broadcast_strides(const std::vector<int64_t>& in_dims,
                                       const std::vector<int64_t>& out_dims);

// Walks every multi-index of `dims` in row-major order and keeps, for each registered stride
// set, the flat offset of the current index (so broadcast inputs are read without division):
//
//   IndexIterator it(out_dims);
//   size_t a = it.add_strides(broadcast_strides(a_dims, out_dims));
//   for (int64_t i = 0; i < n; ++i, it.next()) out[i] = x[it.offset(a)];
//
// For speed the innermost dim can be handled by the caller: iterate with
// `next_outer()` over all dims but the last and read inner_stride(k) for the last.
class IndexIterator {
 public:
  explicit IndexIterator(std::vector<int64_t> dims);
  size_t add_strides(std::vector<int64_t> strides);  // returns the stride set's id
  const std::vector<int64_t>& index() const { return index_; }
  int64_t offset(size_t set) const { return offsets_[set]; }
  // Advances to the next multi-index (wraps to all zeros after the last).
  void next();
  // Advances over all dims but the last (the last stays 0); for inner-loop specialization.
  void next_outer();
  int64_t inner_size() const { return dims_.empty() ? 1 : dims_.back(); }
  int64_t inner_stride(size_t set) const { return dims_.empty() ? 0 : strides_[set].back(); }

 private:
  void advance(size_t ndims);
  std::vector<int64_t> dims_;
  std::vector<int64_t> index_;
  std::vector<std::vector<int64_t>> strides_;
  std::vector<int64_t> offsets_;
};

}  // namespace eqfuse::ir
