#include "frontend/onnx_import.h"

#include <fmt/format.h>
#include <onnx/checker.h>
#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include <fstream>
#include <queue>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "frontend/attributes.h"
#include "frontend/subgraph_scope.h"
#include "frontend/tensor_proto.h"
#include "frontend/upgrade.h"
#include "ir/interpreter.h"
#include "ir/kernel_body.h"
#include "ir/op_table.h"
#include "ir/prune.h"
#include "ir/shape_values.h"
#include "support/error.h"

namespace eqfuse::frontend {

namespace fs = std::filesystem;
using ir::Graph;
using ir::ValueId;

namespace {

constexpr int kMinOpset = 7;
constexpr int kMaxOpset = 17;

std::string node_label(const onnx::NodeProto& node, size_t index) {
  return node.name().empty() ? fmt::format("node #{} ({})", index, node.op_type())
                             : fmt::format("node '{}' ({})", node.name(), node.op_type());
}

bool is_default_domain(const std::string& domain) {
  return domain.empty() || domain == "ai.onnx";
}

// libonnx 1.13's shape inference divides by some attributes without checking them (a Conv with
// a zero stride raised SIGFPE in convPoolShapeInference). A graph, or any subgraph, with one
// that is not positive skips ONNX's inference; the op table's own shape rule then names the node.
bool has_unchecked_divisor(const onnx::GraphProto& graph) {
  for (const auto& n : graph.node()) {
    for (const auto& a : n.attribute()) {
      if (a.name() == "strides" || a.name() == "dilations" || a.name() == "kernel_shape" ||
          a.name() == "blocksize") {
        if (a.has_i() && a.i() <= 0) return true;
        for (int64_t v : a.ints()) {
          if (v <= 0) return true;
        }
      }
      if (a.has_g() && has_unchecked_divisor(a.g())) return true;
      for (const auto& g : a.graphs()) {
        if (has_unchecked_divisor(g)) return true;
      }
    }
  }
  return false;
}

// Whether any node, in any subgraph, is an op the op table lacks: only for those are ONNX's
// inferred types of use (ours win for every op in the table).
bool has_opaque_op(const onnx::GraphProto& graph) {
  for (const auto& n : graph.node()) {
    if (!ir::find_op(n.op_type(), n.domain())) return true;
    for (const auto& a : n.attribute()) {
      if (a.has_g() && has_opaque_op(a.g())) return true;
      for (const auto& g : a.graphs()) {
        if (has_opaque_op(g)) return true;
      }
    }
  }
  return false;
}

bool is_random_op(const std::string& op) {
  return op == "RandomNormal" || op == "RandomUniform" || op == "RandomNormalLike" ||
         op == "RandomUniformLike" || op == "Multinomial" || op == "Bernoulli";
}

// Prefers static dims; ours (the op table's) wins a conflict only when both are static, and
// that conflict is an error: the model contradicts itself.
ir::TensorType merge_types(const ir::TensorType& ours, const ir::TensorType& declared,
                           const std::string& value, const std::string& label) {
  auto conflict = [&] {
    throw Error(fmt::format("inconsistent shapes: value '{}' is declared {} but {} gives {}", value,
                            declared.str(), label, ours.str()));
  };
  if (ours.dtype != declared.dtype) conflict();
  if (!declared.shape.has_rank()) return ours;
  if (!ours.shape.has_rank()) return {ours.dtype, declared.shape};
  if (ours.shape.rank() != declared.shape.rank()) conflict();
  ir::TensorType out = ours;
  for (size_t i = 0; i < ours.shape.rank(); ++i) {
    const ir::Dim& a = ours.shape[i];
    const ir::Dim& b = declared.shape[i];
    if (a.is_static() && b.is_static() && a.value() != b.value()) conflict();
    if (!a.is_static() && (b.is_static() || a.symbol_name().empty())) out.shape[i] = b;
  }
  return out;
}

class Importer final : public NodeSink {
 public:
  Importer(fs::path model_dir, std::string source, const ImportOptions& options)
      : model_dir_(std::move(model_dir)), source_(std::move(source)), options_(options) {}

  Graph run(onnx::ModelProto& model);
  // Imports a control-flow body; `formal` gives types to body inputs declared without one.
  Graph run_body(const onnx::GraphProto& body, const std::vector<ir::TensorType>& formal,
                 const Graph& enclosing);

  const Graph& graph() const override { return g_; }
  std::vector<ValueId> emit(NodeSpec node) override;
  ValueId add_constant(const std::string& base_name, ir::Tensor value) override {
    return g_.add_weight(fresh_name(base_name), std::move(value));
  }
  std::string fresh_name(const std::string& base) override {
    std::string name = g_.unique_name(base);
    while (reserved_.count(name)) name = g_.unique_name(name + "_");
    return name;
  }

 private:
  void read_opsets(const onnx::ModelProto& model);
  void add_initializer(const onnx::TensorProto& t);
  std::vector<size_t> topological_order(const onnx::GraphProto& g);
  void import_node(const onnx::NodeProto& node, size_t index);
  void import_subgraphs(const onnx::NodeProto& node, NodeSpec& spec, const std::string& label);
  void add_outputs(const onnx::GraphProto& graph);
  void add_constant_node(const onnx::NodeProto& node, const std::string& label);
  std::optional<ir::TensorType> declared_type(const std::string& name) const;
  bool try_fold(const ir::Node& node, const std::vector<ir::TensorType>& types,
                const std::vector<std::string>& outputs, std::vector<ValueId>& result);

  Graph g_;
  fs::path model_dir_;
  std::string source_;
  ImportOptions options_;
  int opset_ = 0;
  std::unordered_map<std::string, const onnx::TypeProto*> declared_;
  std::unordered_set<std::string> reserved_;  // every name the model uses
};

void Importer::read_opsets(const onnx::ModelProto& model) {
  g_.opsets.clear();
  for (const auto& op : model.opset_import()) {
    if (is_default_domain(op.domain())) {
      opset_ = static_cast<int>(op.version());
    } else {
      g_.opsets[op.domain()] = op.version();
    }
  }
  if (opset_ == 0) {
    if (model.opset_import_size() == 0 && model.ir_version() < 3) {
      throw Error("model has no opset_import (IR version < 3); eqfuse reads opsets 7-17",
                  Error::Kind::Unsupported);
    }
    if (model.opset_import_size() == 0) throw Error("model has no opset_import");
    opset_ = kMaxOpset;  // only custom domains are imported: the default domain is unused
  }
  if (opset_ < kMinOpset || opset_ > kMaxOpset) {
    throw Error(fmt::format("model uses ONNX opset {}; eqfuse reads opsets {}-{}", opset_,
                            kMinOpset, kMaxOpset),
                Error::Kind::Unsupported);
  }
  g_.opsets[""] = kMaxOpset;
}

void Importer::add_initializer(const onnx::TensorProto& t) {
  std::string what = fmt::format("initializer '{}'", t.name());
  if (t.name().empty()) throw Error("an initializer has no name");
  if (g_.find_value(t.name())) throw Error(fmt::format("{} is defined twice", what));
  if (t.data_location() != onnx::TensorProto::EXTERNAL) {
    g_.add_weight(t.name(), tensor_from_proto(t, what));
    return;
  }
  ir::ExternalData where;
  std::string location;
  for (const auto& kv : t.external_data()) {
    try {
      if (kv.key() == "location") location = kv.value();
      if (kv.key() == "offset") where.offset = std::stoull(kv.value());
      if (kv.key() == "length") where.length = std::stoull(kv.value());
    } catch (const std::exception&) {
      throw Error(fmt::format("{}: bad external data {} '{}'", what, kv.key(), kv.value()));
    }
  }
  if (location.empty()) throw Error(fmt::format("{}: external data without a location", what));
  fs::path rel = fs::path(location).lexically_normal();
  if (rel.is_absolute() || rel.has_root_name() || rel.has_root_directory()) {
    throw Error(
        fmt::format("{}: external data location '{}' is absolute; it must be relative to "
                    "the model's folder",
                    what, location));
  }
  if (rel.empty() || *rel.begin() == "..") {
    throw Error(
        fmt::format("{}: external data location '{}' escapes the model's folder", what, location));
  }
  where.file = fs::absolute(model_dir_ / rel);
  ir::TensorType type{require_dtype(t.data_type(), what),
                      ir::Shape::from_dims(tensor_dims(t, what))};
  g_.add_external_weight(t.name(), type, where);
}

std::vector<size_t> Importer::topological_order(const onnx::GraphProto& g) {
  std::unordered_map<std::string, size_t> producer;  // value name -> node index
  std::unordered_set<std::string> available;         // graph inputs and initializers
  for (const auto& t : g.initializer()) available.insert(t.name());
  for (const auto& v : g.input()) available.insert(v.name());
  const size_t n = static_cast<size_t>(g.node_size());
  for (size_t i = 0; i < n; ++i) {
    for (const auto& out : g.node(static_cast<int>(i)).output()) {
      if (out.empty()) continue;
      if (available.count(out)) {
        throw Error(fmt::format("{} writes '{}', which is already a graph input or initializer",
                                node_label(g.node(static_cast<int>(i)), i), out));
      }
      auto [it, inserted] = producer.emplace(out, i);
      if (!inserted) {
        throw Error(fmt::format("value '{}' is written by both {} and {}", out,
                                node_label(g.node(static_cast<int>(it->second)), it->second),
                                node_label(g.node(static_cast<int>(i)), i)));
      }
    }
  }
  std::vector<std::vector<size_t>> users(n);
  std::vector<size_t> pending(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const auto& node = g.node(static_cast<int>(i));
    std::set<std::string> deps;
    for (const auto& in : node.input()) {
      if (!in.empty()) deps.insert(in);
    }
    std::set<std::string> outer;  // read by subgraphs from this scope: real dependencies
    collect_node_subgraph_names(node, outer);
    for (const auto& name : outer) deps.insert(name);
    for (const auto& name : deps) {
      if (available.count(name) || g_.find_value(name)) continue;
      auto it = producer.find(name);
      if (it == producer.end()) {
        bool in_body =
            outer.count(name) && !std::count(node.input().begin(), node.input().end(), name);
        throw Error(
            fmt::format("{} reads '{}'{}, which no node, graph input or initializer "
                        "defines",
                        node_label(node, i), name, in_body ? " inside a subgraph" : ""));
      }
      if (it->second == i) {
        throw Error(
            fmt::format("{} reads its own output '{}' (a cycle)", node_label(node, i), name));
      }
      users[it->second].push_back(i);
      ++pending[i];
    }
  }
  // Kahn's algorithm, taking the earliest ready node first so a sorted model keeps its order.
  std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
  for (size_t i = 0; i < n; ++i) {
    if (pending[i] == 0) ready.push(i);
  }
  std::vector<size_t> order;
  order.reserve(n);
  while (!ready.empty()) {
    size_t i = ready.top();
    ready.pop();
    order.push_back(i);
    for (size_t u : users[i]) {
      if (--pending[u] == 0) ready.push(u);
    }
  }
  if (order.size() != n) {
    std::string names;
    size_t shown = 0;
    for (size_t i = 0; i < n && shown < 5; ++i) {
      if (pending[i] == 0) continue;
      names += (shown++ ? ", " : "") + node_label(g.node(static_cast<int>(i)), i);
    }
    throw Error(fmt::format("the graph has a cycle: {} node(s) wait on each other, among them {}",
                            n - order.size(), names));
  }
  return order;
}

std::optional<ir::TensorType> Importer::declared_type(const std::string& name) const {
  auto it = declared_.find(name);
  if (it == declared_.end()) return std::nullopt;
  const onnx::TypeProto& t = *it->second;
  if (t.value_case() == onnx::TypeProto::kTensorType && t.tensor_type().elem_type() == 0) {
    return std::nullopt;  // declared without an element type: nothing known
  }
  return type_from_proto(t, fmt::format("value '{}'", name));
}

void Importer::add_constant_node(const onnx::NodeProto& node, const std::string& label) {
  if (node.output_size() != 1 || node.attribute_size() != 1) {
    throw Error(
        fmt::format("{}: Constant needs exactly one output and one value attribute", label));
  }
  const auto& attr = node.attribute(0);
  ir::Tensor value;
  const std::string& kind = attr.name();
  if (kind == "value") {
    value = tensor_from_proto(attr.t(), label + ": value");
  } else if (kind == "value_float") {
    value = ir::Tensor::from_doubles(ir::DType::f32, {}, {attr.f()});
  } else if (kind == "value_floats") {
    std::vector<double> v(attr.floats().begin(), attr.floats().end());
    value = ir::Tensor::from_doubles(ir::DType::f32, {static_cast<int64_t>(v.size())}, v);
  } else if (kind == "value_int") {
    value = ir::Tensor::from_vector<int64_t>(ir::DType::i64, {}, {attr.i()});
  } else if (kind == "value_ints") {
    std::vector<int64_t> v(attr.ints().begin(), attr.ints().end());
    value = ir::Tensor::from_vector(ir::DType::i64, {static_cast<int64_t>(v.size())}, v);
  } else if (kind == "value_string" || kind == "value_strings") {
    throw Error(fmt::format("{}: string constants are not supported", label),
                Error::Kind::Unsupported);
  } else if (kind == "sparse_value") {
    throw Error(fmt::format("{}: sparse constants are not supported", label),
                Error::Kind::Unsupported);
  } else {
    throw Error(fmt::format("{}: unknown Constant attribute '{}'", label, kind));
  }
  g_.add_weight(node.output(0), std::move(value));
}

void Importer::import_node(const onnx::NodeProto& node, size_t index) {
  std::string label = node_label(node, index);
  if (is_default_domain(node.domain()) && node.op_type() == "Constant") {
    add_constant_node(node, label);
    return;
  }
  NodeSpec spec;
  spec.name = node.name();
  spec.op_type = node.op_type();
  spec.domain = is_default_domain(node.domain()) ? "" : node.domain();
  for (const auto& in : node.input()) {
    if (in.empty()) {
      spec.inputs.push_back(ir::kNoValue);
      continue;
    }
    auto id = g_.find_value(in);
    if (!id) throw Error(fmt::format("{} reads '{}', which is not defined", label, in));
    spec.inputs.push_back(*id);
  }
  while (!spec.inputs.empty() && spec.inputs.back() == ir::kNoValue) spec.inputs.pop_back();
  spec.outputs.assign(node.output().begin(), node.output().end());
  for (const auto& attr : node.attribute()) {
    if (attr.name().empty()) throw Error(fmt::format("{} has an attribute without a name", label));
    if (spec.attrs.has(attr.name())) {
      throw Error(fmt::format("{}: attribute '{}' is given twice", label, attr.name()));
    }
    spec.attrs.set(attr.name(), attr_from_proto(attr, label));
  }
  if (spec.domain.empty()) {
    if (!onnx::OpSchemaRegistry::Schema(spec.op_type, opset_, "")) {
      // Not an ONNX op at this opset: keep it opaque, but say so if it is plainly misspelled.
      if (!onnx::OpSchemaRegistry::Schema(spec.op_type, kMaxOpset, "")) {
        throw Error(fmt::format("{}: '{}' is not an ONNX operator", label, spec.op_type));
      }
    }
    apply_schema_attributes(spec.op_type, "", opset_, spec.attrs, label);
    import_subgraphs(node, spec, label);
  }
  upgrade_and_emit(*this, std::move(spec), opset_);
}

void Importer::import_subgraphs(const onnx::NodeProto& node, NodeSpec& spec,
                                const std::string& label) {
  const std::string& op = spec.op_type;
  if (op != "If" && op != "Loop" && op != "Scan") return;
  if (op == "Scan" && opset_ < 9) {
    throw Error(fmt::format("{}: Scan before opset 9 (batched, with sequence_lens) is not "
                            "supported",
                            label),
                Error::Kind::Unsupported);
  }
  auto input_type = [&](size_t i) -> ir::TensorType {
    if (i >= spec.inputs.size() || spec.inputs[i] == ir::kNoValue)
      throw Error(fmt::format("{}: input {} is required", label, i));
    return g_.value(spec.inputs[i]).type;
  };
  // Types for body inputs that the model declares without one.
  std::vector<ir::TensorType> formal;
  if (op == "Loop") {
    formal = {{ir::DType::i64, ir::Shape()}, {ir::DType::boolean, ir::Shape()}};
    for (size_t i = 2; i < spec.inputs.size(); ++i) formal.push_back(input_type(i));
  } else if (op == "Scan") {
    int64_t m = spec.attrs.get_int("num_scan_inputs", 0);
    if (m < 1 || size_t(m) > spec.inputs.size())
      throw Error(fmt::format("{}: num_scan_inputs is out of range", label));
    size_t states = spec.inputs.size() - size_t(m);
    auto axes = spec.attrs.get_ints("scan_input_axes");
    for (size_t i = 0; i < spec.inputs.size(); ++i) {
      ir::TensorType t = input_type(i);
      if (i >= states && t.shape.has_rank() && t.shape.rank() > 0) {
        int64_t a = i - states < axes.size() ? axes[i - states] : 0;
        auto r = static_cast<int64_t>(t.shape.rank());
        if (a < -r || a >= r)
          throw Error(fmt::format("{}: scan_input_axes is out of range", label));
        t.shape.dims().erase(t.shape.dims().begin() + (a < 0 ? a + r : a));
      }
      formal.push_back(t);
    }
  }
  for (const auto& attr : node.attribute()) {
    if (attr.type() != onnx::AttributeProto::GRAPH && !attr.has_g()) continue;
    Importer child(model_dir_, source_, options_);
    child.opset_ = opset_;
    child.g_.opsets = g_.opsets;
    try {
      auto body = std::make_shared<Graph>(child.run_body(attr.g(), formal, g_));
      spec.subgraphs.push_back({attr.name(), std::move(body), size_t(attr.g().input_size())});
    } catch (const Error& e) {
      throw Error(fmt::format("{}: in subgraph '{}': {}", label, attr.name(), e.what()), e.kind());
    }
  }
}

Graph Importer::run_body(const onnx::GraphProto& body, const std::vector<ir::TensorType>& formal,
                         const Graph& enclosing) {
  g_.name = body.name().empty() ? "body" : body.name();
  for (const auto& v : body.value_info()) declared_[v.name()] = &v.type();
  for (const auto& v : body.output()) declared_[v.name()] = &v.type();
  for (const auto& v : body.input()) reserved_.insert(v.name());
  for (const auto& n : body.node()) {
    for (const auto& o : n.output()) reserved_.insert(o);
  }
  for (const auto& t : body.initializer()) add_initializer(t);
  for (int k = 0; k < body.input_size(); ++k) {
    const auto& v = body.input(k);
    bool typed = v.has_type() && v.type().value_case() == onnx::TypeProto::kTensorType &&
                 v.type().tensor_type().elem_type() != 0;
    if (!typed && size_t(k) >= formal.size())
      throw Error(fmt::format("body input '{}' has no type", v.name()));
    ir::TensorType type =
        typed ? type_from_proto(v.type(), fmt::format("body input '{}'", v.name())) : formal[k];
    if (typed && !type.shape.has_rank() && size_t(k) < formal.size()) type.shape = formal[k].shape;
    g_.add_input(v.name(), type);
  }
  // Names read from enclosing scopes become inputs after the formal ones.
  std::set<std::string> free;
  collect_free_names(body, free);
  for (const auto& name : free) {
    if (g_.find_value(name)) continue;
    auto id = enclosing.find_value(name);
    if (!id)
      throw Error(fmt::format("the body reads '{}', which no enclosing graph defines", name));
    g_.add_input(name, enclosing.value(*id).type);
  }
  std::vector<size_t> order = topological_order(body);
  for (size_t i : order) import_node(body.node(static_cast<int>(i)), i);
  add_outputs(body);
  std::set<std::string> read_by_subgraphs;
  for (const auto& n : body.node()) collect_node_subgraph_names(n, read_by_subgraphs);
  return ir::prune_unused(g_, read_by_subgraphs);
}

bool Importer::try_fold(const ir::Node& node, const std::vector<ir::TensorType>& types,
                        const std::vector<std::string>& outputs, std::vector<ValueId>& result) {
  if (!options_.fold_constants || is_random_op(node.op_type)) return false;
  if (node.op_type == "Identity" && node.inputs.size() == 1 && node.inputs[0] != ir::kNoValue) {
    const ir::Value& in = g_.value(node.inputs[0]);
    if (in.data) {
      result.push_back(g_.add_weight(outputs.at(0), in.data));
      return true;
    }
    if (in.external) {
      result.push_back(g_.add_external_weight(outputs.at(0), in.type, *in.external));
      return true;
    }
    return false;
  }
  std::vector<const ir::Tensor*> inputs;
  int64_t input_elements = 0;
  for (ValueId in : node.inputs) {
    if (in == ir::kNoValue) {
      inputs.push_back(nullptr);
      continue;
    }
    const ir::Value& v = g_.value(in);
    if (!v.data) {
      // Shape and Size of a statically shaped value are constants whatever the value.
      bool shape_only =
          (node.op_type == "Shape" || node.op_type == "Size") && v.type.shape.is_static();
      if (!shape_only) return false;
      inputs.push_back(nullptr);
      continue;
    }
    input_elements += v.data->numel();
    inputs.push_back(v.data.get());
  }
  if (input_elements > options_.fold_limit) return false;
  for (const auto& t : types) {
    auto n = t.shape.numel();
    if (!n || *n > options_.fold_limit) return false;
  }
  std::vector<ir::Tensor> values;
  if (node.op_type == "Shape" || node.op_type == "Size") {
    if (inputs.empty() || node.inputs[0] == ir::kNoValue) return false;
    const ir::Shape& shape = g_.value(node.inputs[0]).type.shape;
    if (!shape.is_static()) return false;
    std::vector<int64_t> dims = shape.static_dims();
    if (node.op_type == "Size") {
      values.push_back(ir::Tensor::from_vector<int64_t>(ir::DType::i64, {}, {ir::product(dims)}));
    } else {
      auto rank = static_cast<int64_t>(dims.size());
      auto clamp = [&](int64_t a) {
        if (a < 0) a += rank;
        return std::clamp<int64_t>(a, 0, rank);
      };
      int64_t start = clamp(node.attrs.get_int("start", 0));
      int64_t end = node.attrs.has("end") ? clamp(node.attrs.get_int("end", rank)) : rank;
      std::vector<int64_t> part;
      for (int64_t i = start; i < end; ++i) part.push_back(dims[static_cast<size_t>(i)]);
      values.push_back(
          ir::Tensor::from_vector(ir::DType::i64, {static_cast<int64_t>(part.size())}, part));
    }
  } else {
    try {
      values = ir::evaluate_node(g_, node, inputs);
    } catch (const Error&) {
      return false;  // a kernel that cannot run this node yet: keep the node
    }
  }
  if (values.size() < outputs.size()) return false;
  for (size_t k = 0; k < outputs.size(); ++k) {
    if (values[k].dtype() != types[k].dtype) return false;  // a kernel disagreeing with inference
    std::string name = outputs[k].empty() ? fresh_name("unused") : outputs[k];
    result.push_back(g_.add_weight(name, std::move(values[k])));
  }
  return true;
}

std::vector<ValueId> Importer::emit(NodeSpec spec) {
  std::string label = spec.label();
  if (spec.domain.empty()) {
    apply_schema_attributes(spec.op_type, "", kMaxOpset, spec.attrs, label);
    constant_inputs_to_attributes(g_, spec);
  }
  while (spec.outputs.size() > 1 && spec.outputs.back().empty()) spec.outputs.pop_back();
  ir::Node node;
  node.name = spec.name;
  // A fused kernel written by eqfuse: the call of its function carries the body.
  const bool kernel = spec.domain == ir::kKernelDomain && spec.attrs.has(ir::kKernelBodyAttr);
  node.op_type = kernel ? ir::kKernelOp : spec.op_type;
  node.domain = kernel ? "" : spec.domain;
  node.def = ir::find_op(node.op_type, node.domain);
  node.inputs = spec.inputs;
  node.attrs = std::move(spec.attrs);
  node.subgraphs = std::move(spec.subgraphs);
  // Inference and kernels read the output count; the values are made once types are known.
  node.outputs.assign(spec.outputs.size(), ir::kNoValue);

  std::vector<ir::TensorType> types;
  std::optional<std::vector<ir::SymInt>> sym_value;
  if (node.def) {
    types = ir::infer_output_types(g_, node);
    if (types.size() < spec.outputs.size()) {
      throw Error(fmt::format("{} has {} outputs; the op has at most {}", label,
                              spec.outputs.size(), types.size()));
    }
    types.resize(spec.outputs.size());
    for (size_t k = 0; k < types.size(); ++k) {
      if (spec.outputs[k].empty()) continue;
      if (auto declared = declared_type(spec.outputs[k])) {
        types[k] = merge_types(types[k], *declared, spec.outputs[k], label);
      }
    }
    std::vector<ValueId> folded;
    if (try_fold(node, types, spec.outputs, folded)) return folded;
    if (types.size() == 1) sym_value = ir::infer_shape_value(g_, node, types[0]);
    if (sym_value && options_.fold_constants && !spec.outputs[0].empty()) {
      // A shape computation whose every element is known (a static dim of a partly dynamic
      // shape) is a constant, whatever the symbolic dims are.
      if (auto c = ir::constant_elements(*sym_value)) {
        ir::Tensor t = ir::Tensor::from_vector(ir::DType::i64, types[0].shape.static_dims(), *c);
        return {g_.add_weight(spec.outputs[0], t.cast(types[0].dtype))};
      }
    }
  } else {
    for (const auto& name : spec.outputs) {
      auto declared = name.empty() ? std::nullopt : declared_type(name);
      types.push_back(declared ? *declared : ir::TensorType{ir::DType::f32, ir::Shape::unranked()});
    }
  }
  std::vector<ValueId> outputs;
  for (size_t k = 0; k < spec.outputs.size(); ++k) {
    std::string name = spec.outputs[k].empty()
                           ? fresh_name((spec.name.empty() ? spec.op_type : spec.name) + "_unused")
                           : spec.outputs[k];
    outputs.push_back(g_.add_value(name, types[k]));
  }
  if (sym_value) {
    g_.value(outputs[0]).sym_value =
        std::make_shared<const std::vector<ir::SymInt>>(std::move(*sym_value));
  }
  node.outputs = outputs;
  g_.add_node(std::move(node));
  return outputs;
}

void Importer::add_outputs(const onnx::GraphProto& graph) {
  for (const auto& v : graph.output()) {
    auto id = g_.find_value(v.name());
    if (!id) {
      throw Error(fmt::format("graph output '{}' is not produced by any node", v.name()));
    }
    if (v.has_type() && v.type().tensor_type().elem_type() != 0 &&
        g_.value(*id).producer == ir::kNoNode && !g_.value(*id).is_weight()) {
      // A graph input passed straight through: its declared types must agree.
      merge_types(g_.value(*id).type, type_from_proto(v.type(), "graph output '" + v.name() + "'"),
                  v.name(), "the graph input");
    }
    g_.add_output(*id);
  }
}

Graph Importer::run(onnx::ModelProto& model) {
  if (!model.has_graph()) throw Error("not an ONNX model: it has no graph");
  read_opsets(model);
  onnx::GraphProto& graph = *model.mutable_graph();
  if (graph.node_size() == 0 && graph.output_size() == 0) {
    throw Error("not an ONNX model: the graph has no nodes and no outputs");
  }
  g_.name = graph.name().empty() ? "graph" : graph.name();

  // ONNX's own inference trusts its input: libonnx 1.13 crashes on a node that reads a name
  // nothing defined before it, on a Scan without its body, in data propagation on a tensor
  // whose bytes are short, on a malformed LayerNormalization, and divides by a zero stride
  // (all found by fuzzing). Its types are only hints for opaque ops, so it runs only on a graph
  // that has one, in topological order, that onnx::checker accepts, and whose divisors are
  // positive; eqfuse's own import reports what is wrong with the others (naming the node), or
  // loads them without ONNX's hints.
  bool onnx_may_infer = has_opaque_op(graph) && !has_unchecked_divisor(graph);
  if (onnx_may_infer) {
    std::unordered_set<std::string> defined;
    for (const auto& v : graph.input()) defined.insert(v.name());
    for (const auto& t : graph.initializer()) defined.insert(t.name());
    for (const auto& n : graph.node()) {
      for (const auto& in : n.input())
        onnx_may_infer = onnx_may_infer && (in.empty() || defined.count(in));
      for (const auto& out : n.output()) defined.insert(out);
    }
  }
  if (onnx_may_infer) {
    try {
      onnx::checker::check_model(model);
    } catch (const std::exception&) {
      onnx_may_infer = false;
    }
  }
  // ONNX's own inference first; its findings are hints for opaque ops (ours wins elsewhere).
  if (onnx_may_infer) {
    try {
      // No data propagation: eqfuse follows shape computations itself (ir/shape_values.h), and
      // libonnx's propagation reads initializers' bytes unchecked (a short raw_data crashed it).
      onnx::ShapeInferenceOptions si(/*check_type=*/false, /*error_mode=*/0,
                                     /*data_propagation=*/false);
      onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(), si);
    } catch (const std::exception& e) {
      std::string what = e.what();
      if (what.find("nconsistent") != std::string::npos ||
          what.find("do not match") != std::string::npos) {
        throw Error(fmt::format("inconsistent shapes: {}", what));
      }
      // Otherwise ONNX's inference gave up; eqfuse's own inference still runs.
    }
  }

  for (const auto& v : graph.value_info()) declared_[v.name()] = &v.type();
  for (const auto& v : graph.output()) declared_[v.name()] = &v.type();
  for (const auto& v : graph.input()) reserved_.insert(v.name());
  for (const auto& n : graph.node()) {
    for (const auto& o : n.output()) reserved_.insert(o);
  }

  for (const auto& t : graph.initializer()) add_initializer(t);
  for (const auto& t : graph.sparse_initializer()) {
    throw Error(fmt::format("sparse initializer '{}' is not supported", t.values().name()),
                Error::Kind::Unsupported);
  }
  for (const auto& v : graph.input()) {
    if (auto id = g_.find_value(v.name()); id && g_.value(*id).is_weight()) continue;
    if (!v.has_type()) throw Error(fmt::format("graph input '{}' has no type", v.name()));
    ir::TensorType type = type_from_proto(v.type(), fmt::format("graph input '{}'", v.name()));
    // A dim with neither a value nor a name gets a name of its own, so that it can be bound
    // (--dim NAME=VALUE) and followed through the graph.
    if (type.shape.has_rank()) {
      for (size_t k = 0; k < type.shape.rank(); ++k) {
        ir::Dim& d = type.shape[k];
        if (!d.is_static() && d.symbol_name().empty())
          d = ir::Dim::symbol(fmt::format("{}_dim{}", v.name(), k));
      }
    }
    g_.add_input(v.name(), type);
  }
  std::vector<size_t> order = topological_order(graph);
  for (size_t i : order) import_node(graph.node(static_cast<int>(i)), i);

  add_outputs(graph);
  // Constant inputs that became attributes and folded shape chains leave weights nothing
  // reads; names that If/Loop bodies read from this scope must stay.
  std::set<std::string> read_by_subgraphs;
  for (const auto& n : graph.node()) collect_node_subgraph_names(n, read_by_subgraphs);
  return ir::prune_unused(g_, read_by_subgraphs);
}

std::string with_source(const std::string& source, const std::string& message) {
  return source.empty() ? message : fmt::format("{}: {}", source, message);
}

}  // namespace

Graph import_onnx_bytes(const std::string& bytes, const fs::path& model_dir,
                        const std::string& source_name, const ImportOptions& options) {
  try {
    if (bytes.empty()) throw Error("the file is empty; it is not an ONNX model");
    onnx::ModelProto model;
    if (!model.ParseFromString(bytes)) {
      throw Error("not an ONNX model: the file is truncated or not a protobuf ModelProto");
    }
    Importer importer(model_dir, source_name, options);
    return importer.run(model);
  } catch (const Error& e) {
    throw Error(with_source(source_name, e.what()), e.kind());
  } catch (const std::bad_alloc&) {
    throw Error(with_source(source_name, "out of memory while importing the model"));
  }
}

Graph import_onnx(const fs::path& file, const ImportOptions& options) {
  std::error_code ec;
  if (fs::is_directory(file, ec)) {
    throw Error(fmt::format("{}: is a folder, not an ONNX model file", file.string()));
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) throw Error(fmt::format("{}: cannot open the file", file.string()));
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return import_onnx_bytes(buffer.str(), fs::absolute(file).parent_path(), file.string(), options);
}

}  // namespace eqfuse::frontend
