#pragma once
// Helpers shared by the structured op groups (layout, indexing, generator, conv, pooling,
// resize, recurrent): axis checks that name the node, byte counts for work(), and a strided
// copy that moves elements of any dtype by their byte size. Layout ops (Transpose, Slice,
// Expand, DepthToSpace) are all "read the input through a strided view", so they share one
// copy loop instead of each carrying its own.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "ir/op_table.h"
#include "ir/tensor.h"

namespace eqfuse::ir::structured {

// An axis in [-rank, rank) as a value in [0, rank); fails naming the node otherwise.
inline int64_t axis_in(const OpContext& ctx, int64_t axis, int64_t rank,
                       const char* what = "axis") {
  if (axis < -rank || axis >= rank) {
    ctx.fail(std::string(what) + " " + std::to_string(axis) + " is out of range for rank " +
             std::to_string(rank));
  }
  return axis < 0 ? axis + rank : axis;
}

// Elements and bytes of a tensor of this type for work estimates; a dynamic dim counts as 1.
inline double type_numel(const TensorType& t) {
  double n = 1;
  if (!t.shape.has_rank()) return n;
  for (const Dim& d : t.shape.dims()) n *= d.is_static() ? double(d.value()) : 1.0;
  return n;
}
inline double type_bytes(const TensorType& t) {
  return type_numel(t) * double(dtype_size(t.dtype));
}

// Work of an op that reads its first input once and writes its outputs: a pure data move.
inline OpWork move_work(const OpContext& ctx, const std::vector<TensorType>& outs) {
  OpWork w;
  if (ctx.has_input(0)) w.bytes_read = type_bytes(ctx.input_type(0));
  for (const TensorType& t : outs) w.bytes_written += type_bytes(t);
  return w;
}

inline std::vector<int64_t> strides_of(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) s[i - 1] = s[i] * dims[i];
  return s;
}

// A ranked shape of `rank` unknown dims: what data-dependent ops give when only rank is known.
inline Shape unknown_dims(size_t rank) {
  return Shape(std::vector<Dim>(rank, Dim::unknown()));
}

// The value of input i, which a kernel needs (present inputs always have values there).
inline const Tensor& value_of(const OpContext& ctx, size_t i) {
  const Tensor* t = ctx.input_value(i);
  if (!t) ctx.fail("input " + std::to_string(i) + " has no value");
  return *t;
}

// Static dims of input i's type, failing when they are not static.
inline std::vector<int64_t> static_input_dims(const OpContext& ctx, size_t i) {
  const TensorType& t = ctx.input_type(i);
  if (!t.shape.is_static()) ctx.fail("input " + std::to_string(i) + " needs a static shape");
  return t.shape.static_dims();
}

[[noreturn]] inline void unsupported(const OpContext& ctx, const std::string& message) {
  throw Error(ctx.label() + ": " + message, Error::Kind::Unsupported);
}

namespace detail {
template <typename T>
void strided_copy_typed(const T* src, T* dst, int64_t base, const std::vector<int64_t>& in_strides,
                        const std::vector<int64_t>& out_dims) {
  const size_t rank = out_dims.size();
  int64_t total = 1;
  for (int64_t d : out_dims) total *= d;
  if (total == 0) return;
  if (rank == 0) {
    dst[0] = src[base];
    return;
  }
  const int64_t inner = out_dims[rank - 1];
  const int64_t inner_stride = in_strides[rank - 1];
  std::vector<int64_t> idx(rank, 0);
  int64_t off = base;
  for (int64_t o = 0; o < total; o += inner) {
    if (inner_stride == 1) {
      std::memcpy(dst + o, src + off, size_t(inner) * sizeof(T));
    } else {
      for (int64_t k = 0; k < inner; ++k) dst[o + k] = src[off + k * inner_stride];
    }
    for (size_t a = rank - 1; a-- > 0;) {
      off += in_strides[a];
      if (++idx[a] < out_dims[a]) break;
      off -= in_strides[a] * out_dims[a];
      idx[a] = 0;
    }
  }
}
}  // namespace detail

// out[i0..ik] = in[base + sum_j ij * in_strides[j]] for every index of out_dims (strides may be
// zero for broadcast or negative for reversed slices).
inline Tensor strided_copy(const Tensor& in, int64_t base, const std::vector<int64_t>& in_strides,
                           const std::vector<int64_t>& out_dims) {
  Tensor out(in.dtype(), out_dims);
  switch (dtype_size(in.dtype())) {
    case 1:
      detail::strided_copy_typed(reinterpret_cast<const uint8_t*>(in.raw()),
                                 reinterpret_cast<uint8_t*>(out.raw()), base, in_strides, out_dims);
      break;
    case 2:
      detail::strided_copy_typed(reinterpret_cast<const uint16_t*>(in.raw()),
                                 reinterpret_cast<uint16_t*>(out.raw()), base, in_strides,
                                 out_dims);
      break;
    case 4:
      detail::strided_copy_typed(reinterpret_cast<const uint32_t*>(in.raw()),
                                 reinterpret_cast<uint32_t*>(out.raw()), base, in_strides,
                                 out_dims);
      break;
    default:
      detail::strided_copy_typed(reinterpret_cast<const uint64_t*>(in.raw()),
                                 reinterpret_cast<uint64_t*>(out.raw()), base, in_strides,
                                 out_dims);
      break;
  }
  return out;
}

// Copies element `src_index` of `src` to element `dst_index` of `dst` (same dtype).
inline void copy_element(const Tensor& src, int64_t src_index, Tensor& dst, int64_t dst_index) {
  const size_t es = dtype_size(src.dtype());
  std::memcpy(dst.raw() + size_t(dst_index) * es, src.raw() + size_t(src_index) * es, es);
}

// The ONNX TensorProto data type code of an attribute (Cast's `to`, EyeLike's `dtype`).
inline DType dtype_from_onnx_code(const OpContext& ctx, int64_t code) {
  if (auto t = ir::dtype_from_onnx_code(code)) return *t;
  unsupported(ctx, "data type code " + std::to_string(code) + " is not supported");
}

// Product of dims: static when all are, a symbolic product (batch*64) when some are not.
inline Dim dims_product(const std::vector<Dim>& dims, size_t begin, size_t end) {
  SymInt n(1);
  for (size_t i = begin; i < end; ++i) {
    if (dims[i].is_static() && dims[i].value() == 0) return Dim(0);
    n = n * dims[i].sym();
  }
  return Dim::from_sym(n);
}

}  // namespace eqfuse::ir::structured
