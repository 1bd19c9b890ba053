#pragma once
// Op entries written by hand for the cost tests, so they do not wait for (or depend on) the
// real op table: each counts FLOPs and bytes as the literature does (multiply-add = 2 FLOPs).
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/op_table.h"

namespace eqfuse::test {

inline double elements(const ir::TensorType& t) {
  return static_cast<double>(t.shape.numel().value());
}
inline double bytes(const ir::TensorType& t) {
  return elements(t) * static_cast<double>(ir::dtype_size(t.dtype));
}

inline ir::OpDef make_test_def(std::string name, ir::FusionClass fusion) {
  ir::OpDef def;
  def.name = std::move(name);
  def.fusion = fusion;
  def.max_inputs = -1;
  def.work = [fusion](const ir::OpContext& ctx, const std::vector<ir::TensorType>& outs) {
    ir::OpWork w;
    for (const ir::TensorType* t : ctx.input_types)
      if (t) w.bytes_read += bytes(*t);
    for (const ir::TensorType& t : outs) w.bytes_written += bytes(t);
    const ir::TensorType& x = ctx.input_type(0);
    switch (fusion) {
      case ir::FusionClass::Contraction:
        if (ctx.node.op_type == "Conv") {
          const auto& wd = ctx.input_type(1).shape.static_dims();  // [C_out, C_in/g, kh, kw]
          double per_output = 1;
          for (size_t i = 1; i < wd.size(); ++i) per_output *= static_cast<double>(wd[i]);
          w.flops = 2 * elements(outs[0]) * per_output;
        } else {  // MatMul: [..., M, K] x [..., K, N]
          double k = static_cast<double>(x.shape.static_dims().back());
          w.flops = 2 * elements(outs[0]) * k;
        }
        break;
      case ir::FusionClass::Elementwise:
      case ir::FusionClass::Broadcast:
        w.flops = elements(outs[0]);
        break;
      case ir::FusionClass::Reduction:
        w.flops = elements(x);
        break;
      default:
        break;
    }
    return w;
  };
  return def;
}

struct TestOps {
  ir::OpDef matmul = make_test_def("MatMul", ir::FusionClass::Contraction);
  ir::OpDef conv = make_test_def("Conv", ir::FusionClass::Contraction);
  ir::OpDef relu = make_test_def("Relu", ir::FusionClass::Elementwise);
  ir::OpDef reduce_sum = make_test_def("ReduceSum", ir::FusionClass::Reduction);
  ir::OpDef transpose = make_test_def("Transpose", ir::FusionClass::Layout);
  ir::OpDef reshape = make_test_def("Reshape", ir::FusionClass::Layout);
};
inline const TestOps& test_ops() {
  static const TestOps ops;
  return ops;
}

inline ir::TensorType type(ir::DType dtype, std::vector<int64_t> dims) {
  return ir::TensorType{dtype, ir::Shape::from_dims(dims)};
}

// A graph of one node reading fresh graph inputs.
struct OneNodeGraph {
  ir::Graph graph;
  const ir::Node& node() const { return graph.nodes().back(); }
};
inline std::unique_ptr<OneNodeGraph> one_node(const ir::OpDef* def, const std::string& op_type,
                                              const std::vector<ir::TensorType>& inputs,
                                              const std::vector<ir::TensorType>& outputs,
                                              ir::Attributes attrs = {}) {
  auto g = std::make_unique<OneNodeGraph>();
  ir::Node n;
  n.name = "n";
  n.op_type = op_type;
  n.def = def;
  n.attrs = std::move(attrs);
  for (size_t i = 0; i < inputs.size(); ++i)
    n.inputs.push_back(g->graph.add_input("in" + std::to_string(i), inputs[i]));
  for (size_t i = 0; i < outputs.size(); ++i)
    n.outputs.push_back(g->graph.add_value("out" + std::to_string(i), outputs[i]));
  g->graph.add_node(std::move(n));
  for (ir::ValueId v : g->node().outputs) g->graph.add_output(v);
  return g;
}

}  // namespace eqfuse::test
