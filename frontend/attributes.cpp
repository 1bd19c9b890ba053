#include "frontend/attributes.h"

#include <fmt/format.h>
#include <onnx/defs/schema.h>

#include "frontend/tensor_proto.h"
#include "support/error.h"

namespace eqfuse::frontend {

using onnx::AttributeProto;

namespace {

AttributeProto::AttributeType effective_type(const AttributeProto& proto) {
  if (proto.type() != AttributeProto::UNDEFINED) return proto.type();
  // Very old exporters left `type` unset; the populated field says what it is.
  if (proto.has_f()) return AttributeProto::FLOAT;
  if (proto.has_i()) return AttributeProto::INT;
  if (proto.has_s()) return AttributeProto::STRING;
  if (proto.has_t()) return AttributeProto::TENSOR;
  if (proto.has_g()) return AttributeProto::GRAPH;
  if (proto.floats_size() > 0) return AttributeProto::FLOATS;
  if (proto.ints_size() > 0) return AttributeProto::INTS;
  if (proto.strings_size() > 0) return AttributeProto::STRINGS;
  if (proto.graphs_size() > 0) return AttributeProto::GRAPHS;
  return AttributeProto::UNDEFINED;
}

std::string type_name(AttributeProto::AttributeType t) {
  return AttributeProto::AttributeType_Name(t);
}

const onnx::OpSchema* find_schema(const std::string& op_type, const std::string& domain,
                                  int opset) {
  std::string d = domain == "ai.onnx" ? "" : domain;
  return onnx::OpSchemaRegistry::Schema(op_type, opset, d);
}

}  // namespace

ir::AttrValue attr_from_proto(const AttributeProto& proto, const std::string& where) {
  switch (effective_type(proto)) {
    case AttributeProto::INT:
      return int64_t{proto.i()};
    case AttributeProto::FLOAT:
      return double{proto.f()};
    case AttributeProto::STRING:
      return proto.s();
    case AttributeProto::INTS:
      return std::vector<int64_t>(proto.ints().begin(), proto.ints().end());
    case AttributeProto::FLOATS:
      return std::vector<double>(proto.floats().begin(), proto.floats().end());
    case AttributeProto::STRINGS:
      return std::vector<std::string>(proto.strings().begin(), proto.strings().end());
    case AttributeProto::TENSOR:
      return tensor_from_proto(proto.t(),
                               fmt::format("{}: tensor attribute '{}'", where, proto.name()));
    case AttributeProto::UNDEFINED:
      if (proto.ref_attr_name().empty()) {
        throw Error(fmt::format("{}: attribute '{}' has no value", where, proto.name()));
      }
      [[fallthrough]];
    default: {
      ir::OpaqueAttribute opaque;
      proto.SerializeToString(&opaque.serialized);
      return opaque;
    }
  }
}

AttributeProto attr_to_proto(const std::string& name, const ir::AttrValue& value) {
  AttributeProto proto;
  if (const auto* opaque = std::get_if<ir::OpaqueAttribute>(&value)) {
    if (!proto.ParseFromString(opaque->serialized)) {
      throw Error(fmt::format("attribute '{}': corrupt opaque attribute", name),
                  Error::Kind::Internal);
    }
    proto.set_name(name);
    return proto;
  }
  proto.set_name(name);
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, int64_t>) {
          proto.set_type(AttributeProto::INT);
          proto.set_i(v);
        } else if constexpr (std::is_same_v<T, double>) {
          proto.set_type(AttributeProto::FLOAT);
          proto.set_f(static_cast<float>(v));
        } else if constexpr (std::is_same_v<T, std::string>) {
          proto.set_type(AttributeProto::STRING);
          proto.set_s(v);
        } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          proto.set_type(AttributeProto::INTS);
          for (int64_t x : v) proto.add_ints(x);
        } else if constexpr (std::is_same_v<T, std::vector<double>>) {
          proto.set_type(AttributeProto::FLOATS);
          for (double x : v) proto.add_floats(static_cast<float>(x));
        } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
          proto.set_type(AttributeProto::STRINGS);
          for (const auto& x : v) proto.add_strings(x);
        } else if constexpr (std::is_same_v<T, ir::Tensor>) {
          proto.set_type(AttributeProto::TENSOR);
          *proto.mutable_t() = tensor_to_proto(v, "");
        }
      },
      value);
  return proto;
}

void apply_schema_attributes(const std::string& op_type, const std::string& domain, int opset,
                             ir::Attributes& attrs, const std::string& where) {
  const onnx::OpSchema* schema = find_schema(op_type, domain, opset);
  if (!schema) return;
  const auto& specs = schema->attributes();
  for (const auto& [name, value] : attrs.entries()) {
    auto it = specs.find(name);
    if (it == specs.end()) continue;
    AttributeProto::AttributeType expected = it->second.type;
    AttributeProto::AttributeType got = AttributeProto::UNDEFINED;
    switch (ir::attr_kind(value)) {
      case ir::AttrKind::Int:
        got = AttributeProto::INT;
        break;
      case ir::AttrKind::Float:
        got = AttributeProto::FLOAT;
        break;
      case ir::AttrKind::String:
        got = AttributeProto::STRING;
        break;
      case ir::AttrKind::Ints:
        got = AttributeProto::INTS;
        break;
      case ir::AttrKind::Floats:
        got = AttributeProto::FLOATS;
        break;
      case ir::AttrKind::Strings:
        got = AttributeProto::STRINGS;
        break;
      case ir::AttrKind::Tensor:
        got = AttributeProto::TENSOR;
        break;
      case ir::AttrKind::Opaque: {
        AttributeProto proto;
        proto.ParseFromString(std::get<ir::OpaqueAttribute>(value).serialized);
        got = effective_type(proto);
        break;
      }
    }
    if (got == expected) continue;
    // An empty list carries no element type; accept it as a list of the expected kind.
    bool empty_list = (got == AttributeProto::INTS || got == AttributeProto::FLOATS) &&
                      (expected == AttributeProto::INTS || expected == AttributeProto::FLOATS);
    if (empty_list && std::visit(
                          [](const auto& v) {
                            using T = std::decay_t<decltype(v)>;
                            if constexpr (std::is_same_v<T, std::vector<int64_t>> ||
                                          std::is_same_v<T, std::vector<double>>) {
                              return v.empty();
                            } else {
                              return false;
                            }
                          },
                          value)) {
      continue;
    }
    throw Error(fmt::format("{}: attribute '{}' should be of type {}, got {}", where, name,
                            type_name(expected), type_name(got)));
  }
  for (const auto& [name, spec] : specs) {
    if (spec.required) {
      if (!attrs.has(name)) {
        throw Error(fmt::format("{}: required attribute '{}' is missing", where, name));
      }
      continue;
    }
    if (attrs.has(name) || spec.default_value.type() == AttributeProto::UNDEFINED) continue;
    attrs.set(name, attr_from_proto(spec.default_value, where));
  }
}

bool schema_has_attribute(const std::string& op_type, const std::string& domain, int opset,
                          const std::string& attr) {
  const onnx::OpSchema* schema = find_schema(op_type, domain, opset);
  return !schema || schema->attributes().count(attr) > 0;
}

}  // namespace eqfuse::frontend
