#include "ir/broadcast.h"

#include <fmt/format.h>

#include <algorithm>

#include "support/error.h"

namespace eqfuse::ir {

namespace {
Dim broadcast_dim(const Dim& a, const Dim& b, const Shape& sa, const Shape& sb) {
  if (a == b) return a;
  if (a.is_static() && a.value() == 1) return b;
  if (b.is_static() && b.value() == 1) return a;
  if (a.is_static() && b.is_static()) {
    throw Error(fmt::format("shapes {} and {} do not broadcast: {} against {}", sa.str(), sb.str(),
                            a.value(), b.value()));
  }
  if (a.is_static()) return a;
  if (b.is_static()) return b;
  return Dim::unknown();
}
}  // namespace

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  if (!a.has_rank() || !b.has_rank()) return Shape::unranked();
  size_t rank = std::max(a.rank(), b.rank());
  std::vector<Dim> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    Dim da = i < rank - a.rank() ? Dim(1) : a[i - (rank - a.rank())];
    Dim db = i < rank - b.rank() ? Dim(1) : b[i - (rank - b.rank())];
    out[i] = broadcast_dim(da, db, a, b);
  }
  return Shape(std::move(out));
}

Shape broadcast_shapes(const std::vector<Shape>& shapes) {
  Shape out;
  for (const Shape& s : shapes) out = broadcast_shapes(out, s);
  return out;
}

std::vector<int64_t> broadcast_dims(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da == db || db == 1) {
      out[i] = da;
    } else if (da == 1) {
      out[i] = db;
    } else {
      throw Error(fmt::format("shapes {} and {} do not broadcast", Shape::from_dims(a).str(),
                              Shape::from_dims(b).str()));
    }
  }
  return out;
}

int64_t normalize_axis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) {
    throw Error(fmt::format("axis {} is out of range for rank {}", axis, rank));
  }
  return axis < 0 ? axis + rank : axis;
}

std::vector<int64_t> normalize_axes(const std::vector<int64_t>& axes, int64_t rank) {
  std::vector<int64_t> out;
  out.reserve(axes.size());
  for (int64_t a : axes) {
    int64_t n = normalize_axis(a, rank);
    if (std::find(out.begin(), out.end(), n) != out.end()) {
      throw Error(fmt::format("axis {} is given twice", a));
    }
    out.push_back(n);
  }
  return out;
}

std::vector<int64_t> row_major_strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size());
  int64_t acc = 1;
  for (size_t i = dims.size(); i-- > 0;) {
    s[i] = acc;
    acc *= dims[i];
  }
  return s;
}

std::vector<int64_t> broadcast_strides(const std::vector<int64_t>& in_dims,
                                       const std::vector<int64_t>& out_dims) {
  std::vector<int64_t> in_strides = row_major_strides(in_dims);
  std::vector<int64_t> s(out_dims.size(), 0);
  size_t lead = out_dims.size() - in_dims.size();
  for (size_t i = 0; i < in_dims.size(); ++i) {
    s[lead + i] = in_dims[i] == 1 ? 0 : in_strides[i];
  }
  return s;
}

IndexIterator::IndexIterator(std::vector<int64_t> dims)
    : dims_(std::move(dims)), index_(dims_.size(), 0) {}

size_t IndexIterator::add_strides(std::vector<int64_t> strides) {
  strides_.push_back(std::move(strides));
  offsets_.push_back(0);
  return strides_.size() - 1;
}

void IndexIterator::advance(size_t ndims) {
  for (size_t d = ndims; d-- > 0;) {
    if (++index_[d] < dims_[d]) {
      for (size_t k = 0; k < strides_.size(); ++k) offsets_[k] += strides_[k][d];
      return;
    }
    index_[d] = 0;
    for (size_t k = 0; k < strides_.size(); ++k) offsets_[k] -= strides_[k][d] * (dims_[d] - 1);
  }
}

void IndexIterator::next() {
  advance(dims_.size());
}

void IndexIterator::next_outer() {
  if (!dims_.empty()) advance(dims_.size() - 1);
}

}  // namespace eqfuse::ir
