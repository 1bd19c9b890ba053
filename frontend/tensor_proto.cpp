#include "frontend/tensor_proto.h"

#include <fmt/format.h>

#include <cstring>

#include "support/error.h"

namespace eqfuse::frontend {

using onnx::TensorProto;

std::optional<ir::DType> dtype_from_onnx(int32_t elem_type) {
  return ir::dtype_from_onnx_code(elem_type);
}

int32_t dtype_to_onnx(ir::DType dtype) {
  return ir::onnx_dtype_code(dtype);
}

std::string onnx_dtype_name(int32_t elem_type) {
  if (TensorProto::DataType_IsValid(elem_type)) {
    return TensorProto::DataType_Name(static_cast<TensorProto::DataType>(elem_type));
  }
  return fmt::format("unknown element type {}", elem_type);
}

ir::DType require_dtype(int32_t elem_type, const std::string& what) {
  if (auto dtype = dtype_from_onnx(elem_type)) return *dtype;
  throw Error(fmt::format("{} has element type {}, which eqfuse does not support", what,
                          onnx_dtype_name(elem_type)),
              Error::Kind::Unsupported);
}

std::vector<int64_t> tensor_dims(const TensorProto& proto, const std::string& what) {
  std::vector<int64_t> dims(proto.dims().begin(), proto.dims().end());
  for (int64_t d : dims) {
    if (d < 0) throw Error(fmt::format("{} has a negative dimension {}", what, d));
  }
  return dims;
}

namespace {

template <typename Field>
void check_count(const Field& field, int64_t numel, const std::string& what) {
  if (static_cast<int64_t>(field.size()) != numel) {
    throw Error(
        fmt::format("{} holds {} values but its shape needs {}", what, field.size(), numel));
  }
}

}  // namespace

ir::Tensor tensor_from_proto(const TensorProto& proto, const std::string& what) {
  if (proto.data_location() == TensorProto::EXTERNAL) {
    throw Error(fmt::format("{} stores its data externally, which is not allowed here", what));
  }
  if (proto.has_segment()) throw Error(fmt::format("{} is segmented; not supported", what));
  ir::DType dtype = require_dtype(proto.data_type(), what);
  std::vector<int64_t> dims = tensor_dims(proto, what);
  int64_t numel = 1;
  for (int64_t d : dims) {
    if (d != 0 && numel > (int64_t{1} << 40) / d) {
      throw Error(fmt::format("{} is implausibly large", what));
    }
    numel *= d;
  }
  ir::Tensor t(dtype, dims);
  if (proto.has_raw_data()) {
    const std::string& raw = proto.raw_data();
    if (raw.size() != t.byte_size()) {
      throw Error(fmt::format("{} has {} bytes of raw data but {}{} needs {}", what, raw.size(),
                              ir::dtype_name(dtype), ir::Shape::from_dims(dims).str(),
                              t.byte_size()));
    }
    if (!raw.empty()) std::memcpy(t.raw(), raw.data(), raw.size());
    if (dtype == ir::DType::boolean) {
      auto* bytes = reinterpret_cast<uint8_t*>(t.raw());
      for (int64_t i = 0; i < numel; ++i) bytes[i] = bytes[i] != 0 ? 1 : 0;
    }
    return t;
  }
  switch (dtype) {
    case ir::DType::f32: {
      check_count(proto.float_data(), numel, what);
      auto out = t.data<float>();
      for (int64_t i = 0; i < numel; ++i) out[i] = proto.float_data(static_cast<int>(i));
      break;
    }
    case ir::DType::f64: {
      check_count(proto.double_data(), numel, what);
      auto out = t.data<double>();
      for (int64_t i = 0; i < numel; ++i) out[i] = proto.double_data(static_cast<int>(i));
      break;
    }
    case ir::DType::i64: {
      check_count(proto.int64_data(), numel, what);
      auto out = t.data<int64_t>();
      for (int64_t i = 0; i < numel; ++i) out[i] = proto.int64_data(static_cast<int>(i));
      break;
    }
    case ir::DType::f16:
    case ir::DType::bf16: {
      check_count(proto.int32_data(), numel, what);
      auto out = t.data<uint16_t>();
      for (int64_t i = 0; i < numel; ++i) {
        out[i] = static_cast<uint16_t>(proto.int32_data(static_cast<int>(i)));
      }
      break;
    }
    case ir::DType::i32:
    case ir::DType::i8:
    case ir::DType::u8:
    case ir::DType::boolean: {
      check_count(proto.int32_data(), numel, what);
      for (int64_t i = 0; i < numel; ++i) t.set(i, proto.int32_data(static_cast<int>(i)));
      break;
    }
  }
  return t;
}

TensorProto tensor_to_proto(const ir::Tensor& tensor, const std::string& name) {
  TensorProto proto;
  proto.set_name(name);
  proto.set_data_type(dtype_to_onnx(tensor.dtype()));
  for (int64_t d : tensor.dims()) proto.add_dims(d);
  proto.set_raw_data(reinterpret_cast<const char*>(tensor.raw()), tensor.byte_size());
  return proto;
}

ir::TensorType type_from_proto(const onnx::TypeProto& type, const std::string& what) {
  if (type.value_case() != onnx::TypeProto::kTensorType) {
    const char* kind = type.value_case() == onnx::TypeProto::kSequenceType       ? "a sequence"
                       : type.value_case() == onnx::TypeProto::kMapType          ? "a map"
                       : type.value_case() == onnx::TypeProto::kOptionalType     ? "an optional"
                       : type.value_case() == onnx::TypeProto::kSparseTensorType ? "a sparse tensor"
                                                                                 : "no type";
    throw Error(fmt::format("{} is {}; eqfuse supports dense tensors only", what, kind),
                Error::Kind::Unsupported);
  }
  const auto& tt = type.tensor_type();
  ir::TensorType out;
  out.dtype = require_dtype(tt.elem_type(), what);
  if (!tt.has_shape()) {
    out.shape = ir::Shape::unranked();
    return out;
  }
  std::vector<ir::Dim> dims;
  for (const auto& d : tt.shape().dim()) {
    if (d.has_dim_value()) {
      if (d.dim_value() < 0) {
        throw Error(fmt::format("{} has a negative dimension {}", what, d.dim_value()));
      }
      dims.emplace_back(d.dim_value());
    } else if (d.has_dim_param() && !d.dim_param().empty()) {
      dims.push_back(ir::Dim::symbol(d.dim_param()));
    } else {
      dims.push_back(ir::Dim::unknown());
    }
  }
  out.shape = ir::Shape(std::move(dims));
  return out;
}

void type_to_proto(const ir::TensorType& type, onnx::TypeProto* proto) {
  auto* tt = proto->mutable_tensor_type();
  tt->set_elem_type(dtype_to_onnx(type.dtype));
  if (!type.shape.has_rank()) return;
  auto* shape = tt->mutable_shape();
  for (const ir::Dim& d : type.shape.dims()) {
    auto* dim = shape->add_dim();
    if (d.is_static()) {
      dim->set_dim_value(d.value());
    } else if (!d.symbol_name().empty()) {
      dim->set_dim_param(d.symbol_name());
    }
  }
}

}  // namespace eqfuse::frontend
