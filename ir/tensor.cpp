#include "ir/tensor.h"

#include <fmt/format.h>
#include <cmath>

namespace eqfuse::ir {

Tensor::Tensor(DType dtype, std::vector<int64_t> dims) : dtype_(dtype), dims_(std::move(dims)) {
  numel_ = 1;
  for (int64_t d : dims_) {
    if (d < 0) throw Error("negative dimension in tensor shape", Error::Kind::BadInput);
    numel_ *= d;
  }
  bytes_.assign(static_cast<size_t>(numel_) * dtype_size(dtype_), std::byte{0});
}

Tensor Tensor::from_doubles(DType dtype, std::vector<int64_t> dims,
                            const std::vector<double>& values) {
  return from_vector<double>(dtype, std::move(dims), values);
}

double Tensor::get(int64_t i) const {
  const std::byte* p = bytes_.data() + static_cast<size_t>(i) * dtype_size(dtype_);
  auto load = [p]<typename T>(T) {
    T v;
    std::memcpy(&v, p, sizeof(T));
    return v;
  };
  switch (dtype_) {
    case DType::f32:
      return load(float{});
    case DType::f64:
      return load(double{});
    case DType::f16:
      return half_to_float(load(uint16_t{}));
    case DType::bf16:
      return bfloat16_to_float(load(uint16_t{}));
    case DType::i8:
      return load(int8_t{});
    case DType::u8:
      return load(uint8_t{});
    case DType::i32:
      return load(int32_t{});
    case DType::i64:
      return static_cast<double>(load(int64_t{}));
    case DType::boolean:
      return load(uint8_t{}) != 0 ? 1.0 : 0.0;
  }
  return 0;
}

namespace {
// Float-to-integer conversion that never invokes undefined behaviour (NaN and out-of-range
// values saturate), as the interpreter must not crash on any input.
template <typename I>
I to_integer(double v) {
  if (std::isnan(v)) return 0;
  double t = std::trunc(v);
  if (t <= static_cast<double>(std::numeric_limits<I>::min())) return std::numeric_limits<I>::min();
  if (t >= static_cast<double>(std::numeric_limits<I>::max())) return std::numeric_limits<I>::max();
  return static_cast<I>(t);
}
}  // namespace

void Tensor::set(int64_t i, double value) {
  std::byte* p = bytes_.data() + static_cast<size_t>(i) * dtype_size(dtype_);
  auto store = [p]<typename T>(T v) { std::memcpy(p, &v, sizeof(T)); };
  switch (dtype_) {
    case DType::f32:
      store(static_cast<float>(value));
      break;
    case DType::f64:
      store(value);
      break;
    case DType::f16:
      store(float_to_half(static_cast<float>(value)));
      break;
    case DType::bf16:
      store(float_to_bfloat16(static_cast<float>(value)));
      break;
    case DType::i8:
      store(to_integer<int8_t>(value));
      break;
    case DType::u8:
      store(to_integer<uint8_t>(value));
      break;
    case DType::i32:
      store(to_integer<int32_t>(value));
      break;
    case DType::i64:
      store(to_integer<int64_t>(value));
      break;
    case DType::boolean:
      store(static_cast<uint8_t>(value != 0.0));
      break;
  }
}

std::vector<double> Tensor::to_doubles() const {
  std::vector<double> out(static_cast<size_t>(numel_));
  for (int64_t i = 0; i < numel_; ++i) out[static_cast<size_t>(i)] = get(i);
  return out;
}

std::vector<int64_t> Tensor::to_int64s() const {
  std::vector<int64_t> out(static_cast<size_t>(numel_));
  if (dtype_ == DType::i64) {
    if (!out.empty()) std::memcpy(out.data(), bytes_.data(), bytes_.size());
    return out;
  }
  for (int64_t i = 0; i < numel_; ++i) out[static_cast<size_t>(i)] = to_integer<int64_t>(get(i));
  return out;
}

Tensor Tensor::cast(DType to) const {
  Tensor out(to, dims_);
  if (to == dtype_) {
    out.bytes_ = bytes_;
    return out;
  }
  for (int64_t i = 0; i < numel_; ++i) out.set(i, get(i));
  return out;
}

Tensor Tensor::reshaped(std::vector<int64_t> dims) const {
  Tensor out(dtype_, std::move(dims));
  if (out.numel_ != numel_) {
    throw Error(fmt::format("cannot reshape {} elements to {}", numel_, out.type().shape.str()),
                Error::Kind::BadInput);
  }
  out.bytes_ = bytes_;
  return out;
}

bool Tensor::same_bits(const Tensor& other) const {
  return dtype_ == other.dtype_ && dims_ == other.dims_ && bytes_ == other.bytes_;
}

std::string Tensor::str(size_t max_elements) const {
  std::string out = type().str() + "{";
  for (int64_t i = 0; i < numel_ && static_cast<size_t>(i) < max_elements; ++i) {
    if (i) out += ", ";
    out += fmt::format("{:g}", get(i));
  }
  if (static_cast<size_t>(numel_) > max_elements) out += ", ...";
  return out + "}";
}

}  // namespace eqfuse::ir
