#include "ir/dtype.h"

#include <bit>
#include <cmath>

namespace eqfuse::ir {

size_t dtype_size(DType t) {
  switch (t) {
    case DType::f64:
    case DType::i64:
      return 8;
    case DType::f32:
    case DType::i32:
      return 4;
    case DType::f16:
    case DType::bf16:
      return 2;
    case DType::i8:
    case DType::u8:
    case DType::boolean:
      return 1;
  }
  return 0;
}

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::f32:
      return "f32";
    case DType::f16:
      return "f16";
    case DType::bf16:
      return "bf16";
    case DType::f64:
      return "f64";
    case DType::i8:
      return "i8";
    case DType::u8:
      return "u8";
    case DType::i32:
      return "i32";
    case DType::i64:
      return "i64";
    case DType::boolean:
      return "bool";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view name) {
  for (DType t : kAllDTypes) {
    if (dtype_name(t) == name) return t;
  }
  return std::nullopt;
}

bool is_floating(DType t) {
  return t == DType::f32 || t == DType::f16 || t == DType::bf16 || t == DType::f64;
}
bool is_integral(DType t) {
  return t == DType::i8 || t == DType::u8 || t == DType::i32 || t == DType::i64;
}

namespace {
struct OnnxCode {
  int32_t code;
  DType dtype;
};
constexpr OnnxCode kOnnxCodes[] = {{1, DType::f32},  {2, DType::u8},   {3, DType::i8},
                                   {6, DType::i32},  {7, DType::i64},  {9, DType::boolean},
                                   {10, DType::f16}, {11, DType::f64}, {16, DType::bf16}};
}  // namespace

std::optional<DType> dtype_from_onnx_code(int64_t code) {
  for (const OnnxCode& c : kOnnxCodes) {
    if (c.code == code) return c.dtype;
  }
  return std::nullopt;
}

int32_t onnx_dtype_code(DType t) {
  for (const OnnxCode& c : kOnnxCodes) {
    if (c.dtype == t) return c.code;
  }
  return 0;
}

float half_to_float(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1f;
  uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0) {
    // zero or subnormal: value = mantissa * 2^-24
    float v = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -v : v;
  }
  uint32_t bits;
  if (exponent == 31) {
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  }
  return std::bit_cast<float>(bits);
}

uint16_t float_to_half(float value) {
  uint32_t bits = std::bit_cast<uint32_t>(value);
  uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  uint32_t abs = bits & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // inf or nan
    return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
  }
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflows to inf
  if (abs < 0x38800000u) {
    // subnormal half (or zero): round abs * 2^24 to nearest even
    float f = std::bit_cast<float>(abs);
    float scaled = std::nearbyint(std::ldexp(f, 24));
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(scaled));
  }
  uint32_t mantissa_rounding = ((abs >> 13) & 1u) + 0xfffu;
  abs += mantissa_rounding;
  return static_cast<uint16_t>(sign | ((abs - 0x38000000u) >> 13));
}

float bfloat16_to_float(uint16_t bits) {
  return std::bit_cast<float>(uint32_t{bits} << 16);
}

uint16_t float_to_bfloat16(float value) {
  uint32_t bits = std::bit_cast<uint32_t>(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

}  // namespace eqfuse::ir
