#pragma once
// ONNX import: a model file (opsets 7-17) becomes an ir::Graph in opset-17 semantics.
//
// What import does, in order: parse (an empty, truncated or garbage file is an Error naming
// it); ONNX shape inference with data propagation; weights (external data is referenced, not
// read: a structure-only model whose weights file is absent still imports; a location that
// is absolute or escapes the model's folder is refused); nodes sorted topologically (a
// dangling name or a real cycle is an Error naming it); each node's attributes checked against
// its ONNX schema and completed with the schema's defaults, old-opset forms upgraded
// (frontend/upgrade.h), output types inferred by the op table (ours wins over ONNX's for ops
// in the table; opaque ops keep ONNX's), and constant subgraphs folded: Constant nodes,
// Identity on weights, Shape of statically shaped values and any small node whose inputs are
// all constants (evaluated with ir::evaluate_node), so the shape-computing chains exporters
// write disappear. The onnx checker is not consulted: it refuses structure-only models.
#include <filesystem>
#include <string>

#include "ir/graph.h"

namespace eqfuse::frontend {

struct ImportOptions {
  bool fold_constants = true;
  // Largest constant (in elements) that folding may create or read.
  int64_t fold_limit = int64_t{1} << 22;
};

// Errors (eqfuse::Error) name the file and the node or value at fault; an unsupported element
// type or opset is of kind Unsupported, anything malformed of kind BadInput.
ir::Graph import_onnx(const std::filesystem::path& file, const ImportOptions& options = {});
// The same from bytes; external data locations resolve against `model_dir`.
ir::Graph import_onnx_bytes(const std::string& bytes, const std::filesystem::path& model_dir,
                            const std::string& source_name, const ImportOptions& options = {});

}  // namespace eqfuse::frontend
