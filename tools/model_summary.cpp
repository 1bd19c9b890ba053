#include "tools/model_summary.h"

#include <filesystem>
#include <set>

namespace eqfuse::tools {

nlohmann::json type_json(const ir::TensorType& type) {
  nlohmann::json j;
  j["dtype"] = std::string(ir::dtype_name(type.dtype));
  if (!type.shape.has_rank()) {
    j["shape"] = nullptr;
    return j;
  }
  nlohmann::json dims = nlohmann::json::array();
  for (const ir::Dim& d : type.shape.dims()) {
    if (d.is_static()) {
      dims.push_back(d.value());
    } else {
      dims.push_back(d.str());
    }
  }
  j["shape"] = dims;
  return j;
}

bool weight_missing(const ir::Value& v) {
  return v.external && !v.data && !std::filesystem::exists(v.external->file);
}

std::vector<std::string> missing_weight_files(const ir::Graph& graph) {
  std::set<std::string> missing;
  for (const ir::Value& v : graph.values())
    if (weight_missing(v)) missing.insert(v.external->file.string());
  return {missing.begin(), missing.end()};
}

std::vector<std::string> opaque_node_labels(const ir::Graph& graph) {
  std::vector<std::string> out;
  for (const ir::Node& n : graph.nodes()) {
    if (!n.is_opaque()) continue;
    std::string op = n.domain.empty() ? n.op_type : n.domain + "." + n.op_type;
    out.push_back(n.name.empty() ? op : op + " '" + n.name + "'");
  }
  return out;
}

}  // namespace eqfuse::tools
