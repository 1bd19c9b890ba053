#pragma once
// Element types of tensors. The set is ONNX's common one; conversion from and to ONNX's
// TensorProto codes lives in frontend/, not here, so the IR knows nothing of ONNX.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace eqfuse::ir {

enum class DType : uint8_t { f32, f16, bf16, f64, i8, u8, i32, i64, boolean };

inline constexpr DType kAllDTypes[] = {DType::f32, DType::f16, DType::bf16,
                                       DType::f64, DType::i8,  DType::u8,
                                       DType::i32, DType::i64, DType::boolean};

size_t dtype_size(DType t);            // bytes per element
std::string_view dtype_name(DType t);  // "f32", "i64", "bool", ...
std::optional<DType> parse_dtype(std::string_view name);
bool is_floating(DType t);  // f32 f16 bf16 f64
bool is_integral(DType t);  // i8 u8 i32 i64 (not bool)

// ONNX TensorProto data type codes (1 FLOAT, 7 INT64, ...). They live here, not only in the
// frontend, because ops carry them in attributes (Cast's `to`, EyeLike's `dtype`).
std::optional<DType> dtype_from_onnx_code(int64_t code);  // nullopt: a type eqfuse lacks
int32_t onnx_dtype_code(DType t);

// IEEE half and bfloat16 are stored as their 16-bit patterns.
float half_to_float(uint16_t bits);
uint16_t float_to_half(float value);  // round to nearest even
float bfloat16_to_float(uint16_t bits);
uint16_t float_to_bfloat16(float value);  // round to nearest even

}  // namespace eqfuse::ir
