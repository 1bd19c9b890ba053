#pragma once
// Names that ONNX subgraphs (If/Loop/Scan bodies) read from enclosing scopes. They are not node
// inputs, yet the values they name must exist before the node, survive pruning, and be written
// back on export; import and export both ask here.
#include <onnx/onnx_pb.h>

#include <set>
#include <string>

namespace eqfuse::frontend {

// Adds to `out` the names `graph` (and its own subgraphs) reads without defining them.
void collect_free_names(const onnx::GraphProto& graph, std::set<std::string>& out);
// The same for every subgraph attribute of one attribute or of one node.
void collect_attribute_free_names(const onnx::AttributeProto& attr, std::set<std::string>& out);
void collect_node_subgraph_names(const onnx::NodeProto& node, std::set<std::string>& out);

}  // namespace eqfuse::frontend
