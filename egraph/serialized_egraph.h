#pragma once
// The egraph-serialize JSON format as plain data: the exchange format between e-graph engines
// and extractors (egg, egglog and extraction-gym all read and write it), and how eqfuse dumps
// its own e-graphs (`--dump`) and reads the published Tensat e-graphs for extraction.
//
//   {"nodes": {NODE_ID: {"op": "...", "children": [NODE_ID...], "eclass": CLASS_ID, "cost": 1.5,
//                        "origin": "rule-name"}},
//    "root_eclasses": [CLASS_ID...], "class_data": {CLASS_ID: {...}}}
//
// A child is a node id; its e-class is that node's "eclass". Ids may be strings or numbers in
// the file and are kept as strings. Node order is the file's order (extractors break ties by
// it, so a round trip keeps results identical). "class_data" is optional and kept verbatim;
// other top-level fields are ignored. A node without "cost" costs 1. "origin" is eqfuse's
// provenance tag (what created the node, egraph.h), absent for nodes of the input; other readers
// ignore it.
//
// Build note: this file depends only on support/ and nlohmann_json, and is compiled into
// eqfuse_egraph (egraph/CMakeLists.txt); eqfuse_extract reads e-graphs through that library.
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace eqfuse::egraph {

struct SerializedNode {
  std::string id;
  std::string op;
  std::vector<std::string> children;  // node ids
  std::string eclass;
  double cost = 1.0;
  std::string origin;  // "" for a node of the input
};

struct SerializedEGraph {
  std::vector<SerializedNode> nodes;  // in file order
  std::vector<std::string> root_eclasses;
  nlohmann::json class_data;  // null when absent, else the file's object as is
};

// Parses and checks the format: every child names a node, every root names an e-class that has
// a node, ids are unique, costs are finite. Throws eqfuse::Error (BadInput) naming the file.
SerializedEGraph read_serialized_egraph(const std::filesystem::path& path);
// Same on text in memory; `source_name` goes into error messages.
SerializedEGraph parse_serialized_egraph(std::string_view text,
                                         std::string_view source_name = "<memory>");

// Writes the format back (nodes in order, ids as strings). Throws eqfuse::Error when the
// file cannot be written.
void write_serialized_egraph(const SerializedEGraph& egraph, const std::filesystem::path& path);
std::string serialized_egraph_to_json(const SerializedEGraph& egraph);

}  // namespace eqfuse::egraph
