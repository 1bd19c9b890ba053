#pragma once
// ONNX export: any ir::Graph becomes an opset-17 ModelProto that onnx::checker accepts.
// Weights in memory become initializers; weights still in an external file (a structure-only
// model, or one never run) are written as external-data references to that file, so export
// never needs weights that are absent. Attributes the IR holds for constant "attribute-like"
// inputs (see frontend/upgrade.h) go back to being inputs where opset 17 wants inputs; opaque
// nodes and their OpaqueAttributes are written back unchanged.
#include <onnx/onnx_pb.h>

#include <filesystem>
#include <string>

#include "ir/graph.h"

namespace eqfuse::frontend {

// `model_dir` is the folder the model will be saved in: external-data locations are written
// relative to it. A weight whose file lies outside that folder is embedded when its data can
// be read, and referenced by a relative path (which importers refuse) otherwise.
onnx::ModelProto export_model_proto(const ir::Graph& graph, const std::filesystem::path& model_dir);
std::string export_onnx_bytes(const ir::Graph& graph, const std::filesystem::path& model_dir);
// Writes the model to `file` (Error naming it when it cannot be written).
void export_onnx(const ir::Graph& graph, const std::filesystem::path& file);

}  // namespace eqfuse::frontend
