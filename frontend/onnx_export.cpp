#include "frontend/onnx_export.h"

#include <fmt/format.h>

#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <unordered_set>

#include "frontend/attributes.h"
#include "frontend/subgraph_scope.h"
#include "frontend/tensor_proto.h"
#include "ir/kernel_body.h"
#include "support/error.h"

namespace eqfuse::frontend {

namespace fs = std::filesystem;
using ir::Graph;
using ir::ValueId;

namespace {

constexpr int kOpset = 17;

class Exporter {
 public:
  Exporter(const Graph& g, fs::path model_dir) : g_(g), model_dir_(std::move(model_dir)) {}
  onnx::ModelProto run();

 private:
  void add_weight(ValueId id);
  void add_node(const ir::Node& node, const std::string& name);
  std::string constant_input(const std::string& base, ir::Tensor value);
  std::string kernel_function(const ir::Node& node);

  const Graph& g_;
  fs::path model_dir_;
  onnx::ModelProto model_;
  onnx::GraphProto* graph_ = nullptr;
  std::unordered_set<std::string> used_names_;
  std::map<std::string, std::string> functions_;  // kernel body -> its function's name
};

using NameOf = std::function<std::string(ValueId)>;
using ConstantFn = std::function<std::string(const std::string& base, ir::Tensor value)>;

// Writes `node` of `g` as an opset-17 node: attributes the IR holds for constant inputs go back
// to being inputs (made by `constant`).
void write_node(const Graph& g, const ir::Node& node, onnx::NodeProto& out, const NameOf& name_of,
                const ConstantFn& constant) {
  out.set_op_type(node.op_type);
  if (!node.domain.empty()) out.set_domain(node.domain);
  std::vector<std::string> inputs;
  for (ValueId in : node.inputs) inputs.push_back(in == ir::kNoValue ? "" : name_of(in));
  ir::Attributes attrs = node.attrs;
  const std::string base = node.name.empty() ? g.value(node.outputs.at(0)).name : node.name;
  const bool onnx_op = node.domain.empty() || node.domain == "ai.onnx";

  // Opset 17 takes these as inputs; the IR holds them as attributes when constant.
  auto set_input = [&](size_t index, const std::string& name) {
    if (inputs.size() <= index) inputs.resize(index + 1, "");
    inputs[index] = name;
  };
  auto ints_to_input = [&](const char* attr, size_t index) {
    if (auto v = attrs.ints_if_present(attr)) {
      set_input(index, constant(base + "_" + attr,
                                ir::Tensor::from_vector(ir::DType::i64,
                                                        {static_cast<int64_t>(v->size())}, *v)));
      attrs.erase(attr);
    }
  };
  if (onnx_op) {
    const std::string& op = node.op_type;
    if (op == "Squeeze" || op == "Unsqueeze" || op == "ReduceSum") {
      ints_to_input("axes", 1);
    } else if (op == "Split") {
      ints_to_input("split", 1);
    } else if (op == "Reshape") {  // rules write (Reshape :shape (...) ?x)
      ints_to_input("shape", 1);
    } else if (op == "Pad") {
      ints_to_input("pads", 1);
    } else if (op == "Slice") {
      ints_to_input("starts", 1);
      ints_to_input("ends", 2);
      ints_to_input("axes", 3);
      ints_to_input("steps", 4);
    } else if (op == "Clip") {
      ir::DType dtype = g.value(node.inputs.at(0)).type.dtype;
      const char* names[] = {"min", "max"};
      for (size_t i = 0; i < 2; ++i) {
        if (!attrs.has(names[i])) continue;
        double value = attrs.get_float(names[i], 0.0);
        set_input(i + 1,
                  constant(base + "_" + names[i], ir::Tensor::from_doubles(dtype, {}, {value})));
        attrs.erase(names[i]);
      }
    }
  }
  while (!inputs.empty() && inputs.back().empty()) inputs.pop_back();
  for (const auto& in : inputs) out.add_input(in);
  for (ValueId o : node.outputs) out.add_output(name_of(o));
  for (const auto& [name, value] : attrs.entries()) {
    if (onnx_op && !schema_has_attribute(node.op_type, "", kOpset, name)) continue;
    *out.add_attribute() = attr_to_proto(name, value);
  }
}

std::string Exporter::constant_input(const std::string& base, ir::Tensor value) {
  std::string name = base;
  for (int k = 1; used_names_.count(name) || g_.find_value(name); ++k) {
    name = fmt::format("{}_{}", base, k);
  }
  used_names_.insert(name);
  *graph_->add_initializer() = tensor_to_proto(value, name);
  return name;
}

void Exporter::add_weight(ValueId id) {
  const ir::Value& v = g_.value(id);
  if (v.data) {
    *graph_->add_initializer() = tensor_to_proto(*v.data, v.name);
    return;
  }
  const ir::ExternalData& ext = *v.external;
  fs::path rel = ext.file.lexically_relative(fs::absolute(model_dir_)).lexically_normal();
  bool inside = !rel.empty() && *rel.begin() != "..";
  if (!inside && fs::exists(ext.file)) {
    *graph_->add_initializer() = tensor_to_proto(*g_.weight_data(id), v.name);
    return;
  }
  onnx::TensorProto& t = *graph_->add_initializer();
  t.set_name(v.name);
  t.set_data_type(dtype_to_onnx(v.type.dtype));
  for (int64_t d : v.type.shape.static_dims()) t.add_dims(d);
  t.set_data_location(onnx::TensorProto::EXTERNAL);
  auto add = [&](const char* key, const std::string& value) {
    auto* kv = t.add_external_data();
    kv->set_key(key);
    kv->set_value(value);
  };
  // Absent and outside the new model's folder (a structure-only model written elsewhere): ONNX
  // allows no path that leaves the folder, so the file is named as beside the model, at the
  // same offsets; the model stays structure-only until the file is copied there. Never where
  // another file of that name is: the model would read its bytes as these weights.
  if (!inside) {
    const fs::path beside = fs::absolute(model_dir_) / ext.file.filename();
    if (fs::exists(beside))
      throw Error(fmt::format("weight '{}': its file {} is absent, and the model written to {} "
                              "would read {} in its place; write the model elsewhere or move "
                              "that file",
                              v.name, ext.file.string(), model_dir_.string(), beside.string()),
                  Error::Kind::BadInput);
  }
  add("location", inside ? rel.generic_string() : ext.file.filename().generic_string());
  add("offset", std::to_string(ext.offset));
  if (ext.length) add("length", std::to_string(*ext.length));
}

void Exporter::add_node(const ir::Node& node, const std::string& name) {
  onnx::NodeProto& out = *graph_->add_node();
  out.set_name(name);
  NameOf name_of = [&](ValueId v) { return g_.value(v).name; };
  if (node.op_type == ir::kKernelOp && node.domain.empty()) {
    out.set_op_type(kernel_function(node));
    out.set_domain(ir::kKernelDomain);
    for (ValueId in : node.inputs) out.add_input(name_of(in));
    for (ValueId o : node.outputs) out.add_output(name_of(o));
    *out.add_attribute() =
        attr_to_proto(ir::kKernelBodyAttr, *node.attrs.find(ir::kKernelBodyAttr));
    return;
  }
  write_node(g_, node, out, name_of, [&](const std::string& base, ir::Tensor value) {
    return constant_input(base, std::move(value));
  });
}

// One model-local function per distinct body: the body's expansion in standard ops, so any ONNX
// runtime runs the call. It declares the attribute `body`, which calls carry so that eqfuse reads
// its kernels back exactly.
std::string Exporter::kernel_function(const ir::Node& node) {
  const std::string& text = node.attrs.get_string(ir::kKernelBodyAttr, "");
  auto known = functions_.find(text);
  if (known != functions_.end()) return known->second;
  std::string name = fmt::format("kernel_{}", functions_.size());
  functions_.emplace(text, name);
  std::vector<const ir::TensorType*> types;
  std::vector<const ir::Tensor*> values;
  for (ValueId in : node.inputs) {
    types.push_back(&g_.value(in).type);
    values.push_back(g_.value(in).data.get());
  }
  Graph body = ir::kernel_body_graph(*ir::kernel_body(text), types, values);
  onnx::FunctionProto& f = *model_.add_functions();
  f.set_name(name);
  f.set_domain(ir::kKernelDomain);
  f.set_doc_string(text);
  f.add_attribute(ir::kKernelBodyAttr);
  auto* opset = f.add_opset_import();
  opset->set_domain("");
  opset->set_version(kOpset);
  for (size_t k = 0; k < node.inputs.size(); ++k) f.add_input(fmt::format("x{}", k));
  f.add_output("y");
  NameOf name_of = [&](ValueId v) -> std::string {
    const std::string& n = body.value(v).name;
    if (v == body.outputs()[0]) return "y";
    if (!n.empty() && n[0] == '?') return "x" + n.substr(1);
    return n;
  };
  size_t constants = 0;
  ConstantFn constant = [&](const std::string&, ir::Tensor value) {
    std::string out = fmt::format("c{}", constants++);
    onnx::NodeProto& c = *f.add_node();
    c.set_op_type("Constant");
    c.add_output(out);
    auto* attr = c.add_attribute();
    attr->set_name("value");
    attr->set_type(onnx::AttributeProto::TENSOR);
    *attr->mutable_t() = tensor_to_proto(value, out);
    return out;
  };
  for (const ir::Node& n : body.nodes()) {
    onnx::NodeProto proto;
    write_node(body, n, proto, name_of, constant);
    *f.add_node() = std::move(proto);
  }
  return name;
}

onnx::ModelProto Exporter::run() {
  model_.set_ir_version(8);
  model_.set_producer_name("eqfuse");
  model_.set_producer_version("0.1.0");
  auto* opset = model_.add_opset_import();
  opset->set_domain("");
  opset->set_version(kOpset);
  for (const auto& [domain, version] : g_.opsets) {
    if (domain.empty() || domain == "ai.onnx" || domain == ir::kKernelDomain) continue;
    auto* o = model_.add_opset_import();
    o->set_domain(domain);
    o->set_version(version);
  }
  if (ir::has_kernels(g_)) {
    auto* k = model_.add_opset_import();
    k->set_domain(ir::kKernelDomain);
    k->set_version(1);
  }
  graph_ = model_.mutable_graph();
  graph_->set_name(g_.name);

  // Weights that something reads: node inputs, graph outputs, names read by subgraphs.
  std::set<ValueId> used;
  std::set<std::string> outer_names;
  for (const ir::Node& node : g_.nodes()) {
    for (ValueId in : node.inputs) {
      if (in != ir::kNoValue) used.insert(in);
    }
    for (const auto& [name, value] : node.attrs.entries()) {
      const auto* opaque = std::get_if<ir::OpaqueAttribute>(&value);
      if (!opaque) continue;
      onnx::AttributeProto proto;
      if (!proto.ParseFromString(opaque->serialized)) continue;
      collect_attribute_free_names(proto, outer_names);
    }
  }
  for (ValueId out : g_.outputs()) used.insert(out);
  for (const auto& name : outer_names) {
    if (auto id = g_.find_value(name)) used.insert(*id);
  }
  for (ValueId in : g_.inputs()) {
    onnx::ValueInfoProto& vi = *graph_->add_input();
    vi.set_name(g_.value(in).name);
    type_to_proto(g_.value(in).type, vi.mutable_type());
  }
  for (ValueId id = 0; id < g_.values().size(); ++id) {
    if (g_.value(id).is_weight() && used.count(id)) add_weight(id);
  }
  // ONNX wants node names unique (or empty).
  std::vector<std::string> node_names = g_.unique_node_names();
  for (ir::NodeId n = 0; n < g_.nodes().size(); ++n) add_node(g_.node(n), node_names[n]);
  std::unordered_set<ValueId> outputs(g_.outputs().begin(), g_.outputs().end());
  for (ValueId out : g_.outputs()) {
    onnx::ValueInfoProto& vi = *graph_->add_output();
    vi.set_name(g_.value(out).name);
    type_to_proto(g_.value(out).type, vi.mutable_type());
  }
  for (const ir::Node& node : g_.nodes()) {
    for (ValueId o : node.outputs) {
      const ir::Value& v = g_.value(o);
      if (outputs.count(o) || !v.type.shape.has_rank()) continue;
      onnx::ValueInfoProto& vi = *graph_->add_value_info();
      vi.set_name(v.name);
      type_to_proto(v.type, vi.mutable_type());
    }
  }
  return std::move(model_);
}

}  // namespace

onnx::ModelProto export_model_proto(const Graph& graph, const fs::path& model_dir) {
  return Exporter(graph, model_dir).run();
}

std::string export_onnx_bytes(const Graph& graph, const fs::path& model_dir) {
  std::string bytes;
  if (!export_model_proto(graph, model_dir).SerializeToString(&bytes)) {
    throw Error("export: the model is too large to serialize (over 2 GB)",
                Error::Kind::Unsupported);
  }
  return bytes;
}

void export_onnx(const Graph& graph, const fs::path& file) {
  fs::path dir = fs::absolute(file).parent_path();
  std::string bytes = export_onnx_bytes(graph, dir);
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  if (!out) throw Error(fmt::format("{}: cannot write the file", file.string()));
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw Error(fmt::format("{}: write failed", file.string()));
}

}  // namespace eqfuse::frontend
