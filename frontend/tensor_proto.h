#pragma once
// Conversion between ONNX TensorProto / TypeProto and the IR's Tensor / TensorType. The IR
// knows nothing of ONNX (ir/dtype.h), so the mapping of element-type codes lives here, with
// the checks that turn a malformed or unsupported tensor into an Error naming it.
#include <onnx/onnx_pb.h>

#include <optional>
#include <string>

#include "ir/shape.h"
#include "ir/tensor.h"

namespace eqfuse::frontend {

// The IR dtype of an ONNX TensorProto::DataType code; nullopt for types eqfuse does not
// support (string, complex, uint16/32/64, int16, float8...).
std::optional<ir::DType> dtype_from_onnx(int32_t elem_type);
int32_t dtype_to_onnx(ir::DType dtype);
// "FLOAT", "STRING", ...: for messages.
std::string onnx_dtype_name(int32_t elem_type);

// The dtype of an ONNX element-type code, or an Error of kind Unsupported saying that `what`
// (e.g. "input 'x'") has an unsupported element type.
ir::DType require_dtype(int32_t elem_type, const std::string& what);

// A TensorProto's dims as a Shape (Error on negative dims).
std::vector<int64_t> tensor_dims(const onnx::TensorProto& proto, const std::string& what);

// The elements of an in-memory TensorProto (raw_data or typed fields). External data is not
// handled here (the importer references it lazily). Errors name `what`.
ir::Tensor tensor_from_proto(const onnx::TensorProto& proto, const std::string& what);
// A TensorProto holding `tensor` as raw_data.
onnx::TensorProto tensor_to_proto(const ir::Tensor& tensor, const std::string& name);

// The TensorType of an ONNX TypeProto; Error (Unsupported) for non-tensor types.
ir::TensorType type_from_proto(const onnx::TypeProto& type, const std::string& what);
void type_to_proto(const ir::TensorType& type, onnx::TypeProto* proto);

}  // namespace eqfuse::frontend
