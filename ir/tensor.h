#pragma once
// A tensor with a static shape that owns its elements (row-major, dense). Weights, constants,
// interpreter values and test data are Tensors.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "ir/shape.h"
#include "support/error.h"

namespace eqfuse::ir {

// The C++ element type that stores each DType (f16/bf16 keep their bit patterns).
template <DType T>
struct StorageOf;
template <>
struct StorageOf<DType::f32> {
  using type = float;
};
template <>
struct StorageOf<DType::f64> {
  using type = double;
};
template <>
struct StorageOf<DType::f16> {
  using type = uint16_t;
};
template <>
struct StorageOf<DType::bf16> {
  using type = uint16_t;
};
template <>
struct StorageOf<DType::i8> {
  using type = int8_t;
};
template <>
struct StorageOf<DType::u8> {
  using type = uint8_t;
};
template <>
struct StorageOf<DType::i32> {
  using type = int32_t;
};
template <>
struct StorageOf<DType::i64> {
  using type = int64_t;
};
template <>
struct StorageOf<DType::boolean> {
  using type = bool;
};

class Tensor {
 public:
  Tensor() = default;                              // f32 scalar 0
  Tensor(DType dtype, std::vector<int64_t> dims);  // zero-filled
  // A tensor holding `values` (converted to `dtype`).
  static Tensor from_doubles(DType dtype, std::vector<int64_t> dims,
                             const std::vector<double>& values);
  template <typename T>
  static Tensor from_vector(DType dtype, std::vector<int64_t> dims, const std::vector<T>& values);

  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& dims() const { return dims_; }
  size_t rank() const { return dims_.size(); }
  int64_t numel() const { return numel_; }
  TensorType type() const { return {dtype_, Shape::from_dims(dims_)}; }
  size_t byte_size() const { return bytes_.size(); }
  std::byte* raw() { return bytes_.data(); }
  const std::byte* raw() const { return bytes_.data(); }

  // Typed access; T must be the storage type of dtype() (checked).
  template <typename T>
  std::span<T> data() {
    check_storage<T>();
    return {reinterpret_cast<T*>(bytes_.data()), static_cast<size_t>(numel_)};
  }
  template <typename T>
  std::span<const T> data() const {
    check_storage<T>();
    return {reinterpret_cast<const T*>(bytes_.data()), static_cast<size_t>(numel_)};
  }

  // Element i converted to or from double, whatever the dtype (slow path for generic code).
  double get(int64_t i) const;
  void set(int64_t i, double value);
  std::vector<double> to_doubles() const;
  std::vector<int64_t> to_int64s() const;  // for shape-like tensors (i32/i64 and others)

  // This tensor converted to another dtype (ONNX Cast semantics for finite values).
  Tensor cast(DType to) const;
  // Same elements, new dims (element counts must agree).
  Tensor reshaped(std::vector<int64_t> dims) const;

  bool same_bits(const Tensor& other) const;
  bool operator==(const Tensor& other) const { return same_bits(other); }
  std::string str(size_t max_elements = 8) const;  // "f32[2,2]{1, 2, 3, 4}"

 private:
  template <typename T>
  void check_storage() const {
    if (sizeof(T) != dtype_size(dtype_) ||
        (std::is_floating_point_v<T> != (dtype_ == DType::f32 || dtype_ == DType::f64))) {
      throw Error("tensor of " + std::string(dtype_name(dtype_)) + " accessed with wrong type",
                  Error::Kind::Internal);
    }
  }

  DType dtype_ = DType::f32;
  std::vector<int64_t> dims_;
  int64_t numel_ = 1;
  std::vector<std::byte> bytes_ = std::vector<std::byte>(4);
};

template <typename T>
Tensor Tensor::from_vector(DType dtype, std::vector<int64_t> dims, const std::vector<T>& values) {
  Tensor t(dtype, std::move(dims));
  if (static_cast<int64_t>(values.size()) != t.numel()) {
    throw Error("tensor needs " + std::to_string(t.numel()) + " values, got " +
                    std::to_string(values.size()),
                Error::Kind::Internal);
  }
  for (size_t i = 0; i < values.size(); ++i) t.set(static_cast<int64_t>(i), double(values[i]));
  return t;
}

}  // namespace eqfuse::ir
