#include "ir/builder.h"

#include <fmt/format.h>

#include <cctype>

#include "ir/op_table.h"
#include "ir/shape_values.h"
#include "support/error.h"

namespace eqfuse::ir {

GraphBuilder::GraphBuilder(std::string name) {
  graph_.name = std::move(name);
}

ValueId GraphBuilder::input(std::string name, DType dtype, std::vector<Dim> dims) {
  return graph_.add_input(std::move(name), TensorType{dtype, Shape(std::move(dims))});
}

ValueId GraphBuilder::input(std::string name, TensorType type) {
  return graph_.add_input(std::move(name), std::move(type));
}

ValueId GraphBuilder::weight(std::string name, Tensor data) {
  return graph_.add_weight(std::move(name), std::move(data));
}

ValueId GraphBuilder::constant(Tensor data) {
  return graph_.add_weight(graph_.unique_name("const"), std::move(data));
}

ValueId GraphBuilder::op(const std::string& op_type, std::vector<ValueId> inputs, AttrList attrs,
                         std::string node_name) {
  return add(op_type, "", std::move(inputs), 1, std::move(attrs), std::move(node_name), nullptr)[0];
}

std::vector<ValueId> GraphBuilder::op_n(const std::string& op_type, std::vector<ValueId> inputs,
                                        size_t num_outputs, AttrList attrs, std::string node_name) {
  return add(op_type, "", std::move(inputs), num_outputs, std::move(attrs), std::move(node_name),
             nullptr);
}

std::vector<ValueId> GraphBuilder::opaque(const std::string& op_type, std::vector<ValueId> inputs,
                                          std::vector<TensorType> output_types, AttrList attrs,
                                          std::string domain) {
  return add(op_type, std::move(domain), std::move(inputs), output_types.size(), std::move(attrs),
             "", &output_types);
}

std::vector<ValueId> GraphBuilder::add(const std::string& op_type, std::string domain,
                                       std::vector<ValueId> inputs, size_t num_outputs,
                                       AttrList attrs, std::string node_name,
                                       const std::vector<TensorType>* given_types) {
  Node node;
  node.op_type = op_type;
  node.domain = std::move(domain);
  node.name = node_name.empty() ? fmt::format("{}_{}", op_type, counter_) : std::move(node_name);
  ++counter_;
  node.inputs = std::move(inputs);
  for (ValueId in : node.inputs) {
    if (in != kNoValue && in >= graph_.values().size()) {
      throw Error(fmt::format("{} '{}': input value id {} does not exist", op_type, node.name, in),
                  Error::Kind::Internal);
    }
  }
  for (auto& [name, value] : attrs) node.attrs.set(name, std::move(value));
  std::vector<TensorType> types;
  if (given_types) {
    types = *given_types;
  } else {
    node.def = find_op(op_type, node.domain);
    if (!node.def) {
      throw Error(fmt::format("{} '{}': op '{}' is not in the op table; add it with "
                              "GraphBuilder::opaque() and explicit output types",
                              op_type, node.name, op_type),
                  Error::Kind::Unsupported);
    }
    node.outputs.assign(num_outputs, kNoValue);
    types = infer_output_types(graph_, node);
    node.outputs.clear();
  }
  std::string base = node.name;
  for (char& ch : base) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  for (size_t i = 0; i < num_outputs; ++i) {
    std::string name = graph_.unique_name(num_outputs == 1 ? base : fmt::format("{}_{}", base, i));
    node.outputs.push_back(graph_.add_value(name, types[i]));
  }
  if (!given_types && num_outputs == 1) {
    if (auto sym = infer_shape_value(graph_, node, types[0]))
      graph_.value(node.outputs[0]).sym_value =
          std::make_shared<const std::vector<SymInt>>(std::move(*sym));
  }
  std::vector<ValueId> outs = node.outputs;
  graph_.add_node(std::move(node));
  return outs;
}

void GraphBuilder::output(ValueId value) {
  graph_.add_output(value);
}

Graph GraphBuilder::finish() && {
  return std::move(graph_);
}

}  // namespace eqfuse::ir
