#include "ir/graph.h"

#include <unordered_set>

#include <fmt/format.h>

#include <algorithm>
#include <fstream>

#include "support/error.h"

namespace eqfuse::ir {

ValueId Graph::add_value(std::string name, TensorType type) {
  if (name.empty()) name = unique_name("v");
  if (by_name_.count(name)) throw Error(fmt::format("value '{}' is defined twice", name));
  auto id = static_cast<ValueId>(values_.size());
  by_name_.emplace(name, id);
  Value v;
  v.name = std::move(name);
  v.type = std::move(type);
  values_.push_back(std::move(v));
  return id;
}

ValueId Graph::add_input(std::string name, TensorType type) {
  ValueId id = add_value(std::move(name), std::move(type));
  inputs_.push_back(id);
  return id;
}

ValueId Graph::add_weight(std::string name, Tensor data) {
  return add_weight(std::move(name), std::make_shared<const Tensor>(std::move(data)));
}

ValueId Graph::add_weight(std::string name, std::shared_ptr<const Tensor> data) {
  ValueId id = add_value(std::move(name), data->type());
  values_[id].data = std::move(data);
  return id;
}

ValueId Graph::add_external_weight(std::string name, TensorType type, ExternalData where) {
  ValueId id = add_value(std::move(name), std::move(type));
  values_[id].external = std::move(where);
  return id;
}

NodeId Graph::add_node(Node node) {
  auto id = static_cast<NodeId>(nodes_.size());
  const std::string label = node.name.empty() ? node.op_type : node.name;
  for (ValueId in : node.inputs) {
    if (in == kNoValue) continue;
    if (in >= values_.size()) {
      throw Error(fmt::format("node '{}' reads an unknown value id {}", label, in));
    }
    const Value& v = values_[in];
    bool defined = v.producer != kNoNode || v.is_weight() ||
                   std::find(inputs_.begin(), inputs_.end(), in) != inputs_.end();
    if (!defined) {
      throw Error(fmt::format("node '{}' reads '{}' before it is defined", label, v.name));
    }
  }
  for (uint32_t k = 0; k < node.outputs.size(); ++k) {
    ValueId out = node.outputs[k];
    if (out >= values_.size()) {
      throw Error(fmt::format("node '{}' writes an unknown value id {}", label, out));
    }
    Value& v = values_[out];
    if (v.producer != kNoNode || v.is_weight() ||
        std::find(inputs_.begin(), inputs_.end(), out) != inputs_.end()) {
      throw Error(fmt::format("node '{}' redefines value '{}'", label, v.name));
    }
    v.producer = id;
    v.output_index = k;
  }
  nodes_.push_back(std::move(node));
  return id;
}

void Graph::add_output(ValueId value) {
  outputs_.push_back(value);
}

std::vector<ValueId> Graph::weights() const {
  std::vector<ValueId> out;
  for (ValueId i = 0; i < values_.size(); ++i) {
    if (values_[i].is_weight()) out.push_back(i);
  }
  return out;
}

std::optional<ValueId> Graph::find_value(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  if (it == by_name_.end()) return std::nullopt;
  return it->second;
}

std::string Graph::unique_name(const std::string& base) const {
  if (!by_name_.count(base)) return base;
  for (size_t k = 1;; ++k) {
    std::string candidate = fmt::format("{}_{}", base, k);
    if (!by_name_.count(candidate)) return candidate;
  }
}

std::vector<std::string> Graph::unique_node_names() const {
  std::vector<std::string> names;
  std::unordered_set<std::string> used;
  for (const Node& n : nodes_) {
    std::string name = n.name;
    for (int k = 1; !name.empty() && used.count(name); ++k) name = fmt::format("{}_{}", n.name, k);
    used.insert(name);
    names.push_back(std::move(name));
  }
  return names;
}

std::shared_ptr<const Tensor> Graph::weight_data(ValueId id) const {
  const Value& v = value(id);
  if (v.data) return v.data;
  if (!v.external) throw Error(fmt::format("value '{}' is not a weight", v.name));
  if (auto it = loaded_.find(id); it != loaded_.end()) return it->second;
  if (!v.type.shape.is_static()) {
    throw Error(fmt::format("weight '{}' has a dynamic shape {}", v.name, v.type.shape.str()));
  }
  Tensor t(v.type.dtype, v.type.shape.static_dims());
  const ExternalData& ext = *v.external;
  std::ifstream in(ext.file, std::ios::binary);
  if (!in) {
    throw Error(fmt::format("weights of '{}' are missing: cannot open external data file {}",
                            v.name, ext.file.string()));
  }
  if (ext.length && *ext.length != t.byte_size()) {
    throw Error(fmt::format("weight '{}': external data length {} does not match {} ({} bytes)",
                            v.name, *ext.length, v.type.str(), t.byte_size()));
  }
  in.seekg(static_cast<std::streamoff>(ext.offset));
  in.read(reinterpret_cast<char*>(t.raw()), static_cast<std::streamsize>(t.byte_size()));
  if (!in || static_cast<size_t>(in.gcount()) != t.byte_size()) {
    throw Error(
        fmt::format("weight '{}': external data file {} is too short (needs {} bytes at "
                    "offset {})",
                    v.name, ext.file.string(), t.byte_size(), ext.offset));
  }
  auto data = std::make_shared<const Tensor>(std::move(t));
  loaded_.emplace(id, data);
  return data;
}

int64_t Graph::parameter_count() const {
  int64_t n = 0;
  for (const Value& v : values_) {
    if (v.is_weight()) n += v.type.shape.numel().value_or(0);
  }
  return n;
}

int64_t Graph::parameter_bytes() const {
  int64_t n = 0;
  for (const Value& v : values_) {
    if (v.is_weight()) {
      n += v.type.shape.numel().value_or(0) * static_cast<int64_t>(dtype_size(v.type.dtype));
    }
  }
  return n;
}

std::vector<std::vector<NodeId>> Graph::consumers() const {
  std::vector<std::vector<NodeId>> out(values_.size());
  for (NodeId n = 0; n < nodes_.size(); ++n) {
    for (ValueId in : nodes_[n].inputs) {
      if (in != kNoValue) out[in].push_back(n);
    }
  }
  return out;
}

}  // namespace eqfuse::ir
