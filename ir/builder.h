#pragma once
// GraphBuilder: writing graphs in C++ (tests, examples, benchmarks). Each op() call looks the op
// up in the op table and infers its output types there, so a graph built here is typed exactly
// as an imported one; an op the table lacks must be added with opaque() and explicit types.
//
//   GraphBuilder b("mlp");
//   ValueId x = b.input("x", DType::f32, {Dim::symbol("n"), Dim(64)});
//   ValueId w = b.weight("w", Tensor(DType::f32, {64, 10}));
//   ValueId y = b.op("Relu", {b.op("MatMul", {x, w})});
//   b.op("Gemm", {x, w, c}, {{"transB", int64_t{1}}});
//   std::vector<ValueId> parts = b.op_n("Split", {x}, 2, {{"axis", int64_t{1}}});
//   b.output(y);
//   Graph g = std::move(b).finish();
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"

namespace eqfuse::ir {

using AttrList = std::vector<std::pair<std::string, AttrValue>>;

class GraphBuilder {
 public:
  explicit GraphBuilder(std::string name = "graph");

  ValueId input(std::string name, DType dtype, std::vector<Dim> dims);
  ValueId input(std::string name, TensorType type);
  ValueId weight(std::string name, Tensor data);
  // A weight with a generated name ("const_0", ...).
  ValueId constant(Tensor data);

  // Adds a node of a known op with one output; returns that output. Throws Error naming the op
  // when it is unknown (use opaque()) or when its inputs or attributes do not fit (arity,
  // attribute types, shapes).
  ValueId op(const std::string& op_type, std::vector<ValueId> inputs, AttrList attrs = {},
             std::string node_name = "");
  // The same for an op with `num_outputs` outputs (Split, LayerNormalization, ...).
  std::vector<ValueId> op_n(const std::string& op_type, std::vector<ValueId> inputs,
                            size_t num_outputs, AttrList attrs = {}, std::string node_name = "");
  // An op the table lacks: its output types are given. Executing it fails (Unsupported).
  std::vector<ValueId> opaque(const std::string& op_type, std::vector<ValueId> inputs,
                              std::vector<TensorType> output_types, AttrList attrs = {},
                              std::string domain = "");

  void output(ValueId value);
  const TensorType& type(ValueId value) const { return graph_.value(value).type; }
  const Graph& graph() const { return graph_; }
  Graph finish() &&;

 private:
  std::vector<ValueId> add(const std::string& op_type, std::string domain,
                           std::vector<ValueId> inputs, size_t num_outputs, AttrList attrs,
                           std::string node_name, const std::vector<TensorType>* given_types);
  Graph graph_;
  int counter_ = 0;
};

}  // namespace eqfuse::ir
