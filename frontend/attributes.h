#pragma once
// ONNX attributes in and out of the IR. On import every attribute of a default-domain node is
// checked against the ONNX op schema of the model's opset (a wrong type is an Error naming the
// node and attribute), and the schema's defaults are written in explicitly, so that later
// stages never need to know ONNX's defaults. Attributes eqfuse does not interpret (subgraphs,
// sparse tensors, type protos) travel as OpaqueAttribute and are written back unchanged.
#include <onnx/onnx_pb.h>

#include <string>

#include "ir/attribute.h"

namespace eqfuse::frontend {

// `where` names the node in errors ("node 'conv1' (Conv)").
ir::AttrValue attr_from_proto(const onnx::AttributeProto& proto, const std::string& where);
onnx::AttributeProto attr_to_proto(const std::string& name, const ir::AttrValue& value);

// Checks the attribute types of a node against the ONNX schema of `op_type` at `opset` and adds
// the schema's default values for absent attributes. Nodes without a known schema are left
// alone. Errors name `where`.
void apply_schema_attributes(const std::string& op_type, const std::string& domain, int opset,
                             ir::Attributes& attrs, const std::string& where);

// True when the ONNX schema of op_type at `opset` declares the attribute (used by export to
// drop attributes that only older opsets had).
bool schema_has_attribute(const std::string& op_type, const std::string& domain, int opset,
                          const std::string& attr);

}  // namespace eqfuse::frontend
