#pragma once
// What `eqfuse info` and `eqfuse run` say about a model, as text and as JSON: shapes, op
// histogram, parameters, opaque ops, missing weights.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace eqfuse::tools {

// JSON of a type: {"dtype": "f32", "shape": [1, "batch", "?"]} (shape null when unranked).
nlohmann::json type_json(const ir::TensorType& type);
// Whether `v` is a weight whose external file does not exist (a structure-only model's).
bool weight_missing(const ir::Value& v);
// The external weight files a graph refers to that do not exist.
std::vector<std::string> missing_weight_files(const ir::Graph& graph);
// "Op 'name'" of every opaque node (first few), for messages.
std::vector<std::string> opaque_node_labels(const ir::Graph& graph);

}  // namespace eqfuse::tools
