#pragma once
// Runs one op of the table on its own, for the op-group tests: builds a graph with a single
// node whose inputs are constants (weights) or typed graph inputs, infers its output types and
// calls the entry's kernel directly, so a test states an op's known answer in a few lines.
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/op_table.h"

namespace eqfuse::test {

// One input of the node: a constant tensor, a typed value without data, or omitted.
struct OpInput {
  OpInput(ir::Tensor t) : value(std::move(t)) { type = value->type(); }  // NOLINT
  OpInput(ir::TensorType t) : type(std::move(t)) {}                      // NOLINT
  static OpInput omitted() {
    OpInput in(ir::TensorType{});
    in.absent = true;
    return in;
  }
  std::optional<ir::Tensor> value;
  ir::TensorType type;
  bool absent = false;
};

struct SingleOp {
  ir::Graph graph;
  ir::NodeId node = 0;

  SingleOp(const std::string& op_type, const std::vector<OpInput>& inputs,
           const ir::Attributes& attrs = {}, size_t num_outputs = 1) {
    ir::Node n;
    n.name = "n";
    n.op_type = op_type;
    n.def = ir::find_op(op_type);
    if (!n.def) throw Error("no op " + op_type, Error::Kind::Internal);
    for (size_t i = 0; i < inputs.size(); ++i) {
      const OpInput& in = inputs[i];
      std::string name = "in" + std::to_string(i);
      if (in.absent)
        n.inputs.push_back(ir::kNoValue);
      else if (in.value)
        n.inputs.push_back(graph.add_weight(name, *in.value));
      else
        n.inputs.push_back(graph.add_input(name, in.type));
    }
    for (size_t i = 0; i < num_outputs; ++i)
      n.outputs.push_back(graph.add_value("out" + std::to_string(i), ir::TensorType{}));
    n.attrs = attrs;
    node = graph.add_node(std::move(n));
  }

  std::vector<ir::TensorType> infer() const {
    return ir::infer_output_types(graph, graph.node(node));
  }
  std::vector<ir::Tensor> run() const {
    ir::OpContext ctx = ir::make_context(graph, graph.node(node));
    return ctx.def.kernel(ctx);
  }
  ir::OpWork work() const {
    ir::OpContext ctx = ir::make_context(graph, graph.node(node));
    return ctx.def.work(ctx, infer());
  }
};

inline ir::Attributes attrs(std::vector<std::pair<std::string, ir::AttrValue>> entries) {
  ir::Attributes a;
  for (auto& [k, v] : entries) a.set(k, v);
  return a;
}

inline ir::Tensor f32(std::vector<int64_t> dims, const std::vector<double>& v) {
  return ir::Tensor::from_doubles(ir::DType::f32, std::move(dims), v);
}
inline ir::Tensor i64(std::vector<int64_t> dims, const std::vector<double>& v) {
  return ir::Tensor::from_doubles(ir::DType::i64, std::move(dims), v);
}
// 0, 1, 2, ... in the given shape.
inline ir::Tensor iota_f32(std::vector<int64_t> dims) {
  ir::Tensor t(ir::DType::f32, std::move(dims));
  for (int64_t i = 0; i < t.numel(); ++i) t.set(i, double(i));
  return t;
}

// Output 0 of a single op run on constant inputs.
inline ir::Tensor run1(const std::string& op_type, const std::vector<OpInput>& inputs,
                       const ir::Attributes& a = {}) {
  return SingleOp(op_type, inputs, a).run().at(0);
}

}  // namespace eqfuse::test
