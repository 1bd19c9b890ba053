#include "frontend/upgrade.h"

#include <fmt/format.h>

#include "support/error.h"

namespace eqfuse::frontend {

std::string NodeSpec::label() const {
  return name.empty() ? fmt::format("node ({})", op_type)
                      : fmt::format("node '{}' ({})", name, op_type);
}

namespace {

bool is_softmax_like(const std::string& op) {
  return op == "Softmax" || op == "LogSoftmax" || op == "Hardmax";
}

void trim_trailing_omitted(NodeSpec& node) {
  while (!node.inputs.empty() && node.inputs.back() == ir::kNoValue) node.inputs.pop_back();
}

// Before opset 13 these ops coerced the input to 2-D at `axis` and normalized over the whole
// trailing block. That equals the opset-13 op when axis is the last dim; otherwise it is
// Flatten -> op(axis=1) -> Reshape back to the input's shape.
void emit_old_softmax(NodeSink& sink, NodeSpec node) {
  const ir::Graph& g = sink.graph();
  int64_t axis = node.attrs.get_int("axis", 1);
  const ir::TensorType& in = g.value(node.inputs.at(0)).type;
  if (in.shape.has_rank()) {
    auto rank = static_cast<int64_t>(in.shape.rank());
    int64_t a = axis < 0 ? axis + rank : axis;
    if (a == rank - 1 || rank == 0) {
      node.attrs.set("axis", int64_t{-1});
      sink.emit(std::move(node));
      return;
    }
  }
  NodeSpec flatten{node.name.empty() ? "" : node.name + "_flatten", "Flatten", "", {node.inputs[0]},
                   {sink.fresh_name(node.outputs.at(0) + "_2d")},   {}};
  flatten.attrs.set("axis", axis);
  ir::ValueId flat = sink.emit(std::move(flatten)).at(0);

  NodeSpec op{node.name, node.op_type, "", {flat}, {sink.fresh_name(node.outputs[0] + "_flat")},
              {}};
  op.attrs.set("axis", int64_t{1});
  ir::ValueId normalized = sink.emit(std::move(op)).at(0);

  NodeSpec shape{node.name.empty() ? "" : node.name + "_shape", "Shape", "", {node.inputs[0]},
                 {sink.fresh_name(node.outputs[0] + "_shape")}, {}};
  ir::ValueId dims = sink.emit(std::move(shape)).at(0);

  NodeSpec reshape{node.name.empty() ? "" : node.name + "_reshape",
                   "Reshape",
                   "",
                   {normalized, dims},
                   {node.outputs[0]},
                   {}};
  reshape.attrs.set("allowzero", int64_t{0});
  sink.emit(std::move(reshape));
}

// Upsample (opsets 7-9) is Resize with asymmetric coordinates and floor rounding.
void emit_upsample(NodeSink& sink, NodeSpec node, int opset) {
  ir::ValueId scales;
  if (opset < 9) {
    std::vector<double> s = node.attrs.get_floats("scales");
    scales = sink.add_constant(
        node.outputs.at(0) + "_scales",
        ir::Tensor::from_doubles(ir::DType::f32, {static_cast<int64_t>(s.size())}, s));
  } else {
    if (node.inputs.size() < 2) {
      throw Error(fmt::format("{}: Upsample needs a scales input", node.label()));
    }
    scales = node.inputs[1];
  }
  std::string mode = node.attrs.get_string("mode", "nearest");
  if (mode == "bilinear") mode = "linear";
  NodeSpec resize{node.name,    "Resize", "", {node.inputs.at(0), ir::kNoValue, scales},
                  node.outputs, {}};
  resize.attrs.set("mode", mode);
  resize.attrs.set("coordinate_transformation_mode", std::string("asymmetric"));
  resize.attrs.set("nearest_mode", std::string("floor"));
  sink.emit(std::move(resize));
}

// A constant, in-memory value (weights and folded constants).
const ir::Tensor* constant(const ir::Graph& g, const NodeSpec& node, size_t i) {
  if (i >= node.inputs.size() || node.inputs[i] == ir::kNoValue) return nullptr;
  return g.value(node.inputs[i]).data.get();
}

}  // namespace

void constant_inputs_to_attributes(const ir::Graph& g, NodeSpec& node) {
  if (!node.domain.empty() && node.domain != "ai.onnx") return;
  const std::string& op = node.op_type;
  auto to_ints_attr = [&](size_t input, const char* attr) {
    const ir::Tensor* t = constant(g, node, input);
    if (!t) return;
    node.attrs.set(attr, t->to_int64s());
    node.inputs[input] = ir::kNoValue;
  };
  if (op == "Squeeze" || op == "Unsqueeze") {
    to_ints_attr(1, "axes");
  } else if (op == "ReduceSum") {
    const ir::Tensor* t = constant(g, node, 1);
    if (t && t->numel() == 0) {
      // Empty axes: reduce over all (the same as no axes) unless noop_with_empty_axes.
      if (node.attrs.get_int("noop_with_empty_axes", 0) == 0) node.inputs[1] = ir::kNoValue;
    } else {
      to_ints_attr(1, "axes");
    }
  } else if (op == "Split") {
    to_ints_attr(1, "split");
  } else if (op == "Reshape") {
    to_ints_attr(1, "shape");
  } else if (op == "Pad") {
    to_ints_attr(1, "pads");
  } else if (op == "Clip") {
    const char* names[] = {"min", "max"};
    for (size_t i = 1; i <= 2; ++i) {
      const ir::Tensor* t = constant(g, node, i);
      if (!t || t->numel() != 1) continue;
      node.attrs.set(names[i - 1], t->get(0));
      node.inputs[i] = ir::kNoValue;
    }
  } else if (op == "Slice") {
    const char* names[] = {"starts", "ends", "axes", "steps"};
    for (size_t i = 1; i < node.inputs.size() && i <= 4; ++i) {
      if (node.inputs[i] != ir::kNoValue && !constant(g, node, i)) return;  // all or nothing
    }
    for (size_t i = 1; i < node.inputs.size() && i <= 4; ++i) to_ints_attr(i, names[i - 1]);
  }
  trim_trailing_omitted(node);
}

void upgrade_and_emit(NodeSink& sink, NodeSpec node, int opset) {
  const std::string& op = node.op_type;
  bool default_domain = node.domain.empty() || node.domain == "ai.onnx";
  if (!default_domain || opset >= 17) {
    sink.emit(std::move(node));
    return;
  }
  // The rewrites below read the first input and output of the ops they change; such a node
  // without them is malformed (ops with no inputs, like RandomNormal, pass through untouched).
  bool rewritten = (is_softmax_like(op) && opset < 13) || op == "Upsample" ||
                   (op == "Resize" && opset < 11) || (op == "Pad" && opset < 11);
  if (rewritten && (node.inputs.empty() || node.inputs[0] == ir::kNoValue || node.outputs.empty() ||
                    node.outputs[0].empty()))
    throw Error(node.label() + " has no first input or no output");
  if (is_softmax_like(op) && opset < 13) {
    emit_old_softmax(sink, std::move(node));
    return;
  }
  if (op == "Upsample") {
    emit_upsample(sink, std::move(node), opset);
    return;
  }
  if (op == "Resize" && opset < 11) {
    // Resize-10: (X, scales), asymmetric coordinates, floor for nearest.
    NodeSpec resize = node;
    resize.inputs = {node.inputs.at(0), ir::kNoValue,
                     node.inputs.size() > 1 ? node.inputs[1] : ir::kNoValue};
    resize.attrs.set("coordinate_transformation_mode", std::string("asymmetric"));
    resize.attrs.set("nearest_mode", std::string("floor"));
    sink.emit(std::move(resize));
    return;
  }
  if (op == "BatchNormalization") {
    node.attrs.erase("spatial");  // opset < 9: always spatial in inference models
    node.attrs.erase("is_test");
    node.attrs.erase("consumed_inputs");
  } else if (op == "Dropout" && opset < 12) {
    node.attrs.erase("ratio");  // inference: Dropout is the identity, ratio is irrelevant
    node.attrs.erase("is_test");
  } else if (op == "Pad" && opset < 11) {
    // Pad-2: pads and value as attributes; value becomes the constant_value input.
    double value = node.attrs.get_float("value", 0.0);
    node.attrs.erase("value");
    if (value != 0.0) {
      ir::DType dtype = sink.graph().value(node.inputs.at(0)).type.dtype;
      ir::ValueId v = sink.add_constant(node.outputs.at(0) + "_pad_value",
                                        ir::Tensor::from_doubles(dtype, {}, {value}));
      node.inputs = {node.inputs.at(0), ir::kNoValue, v};
    }
  }
  sink.emit(std::move(node));
}

}  // namespace eqfuse::frontend
