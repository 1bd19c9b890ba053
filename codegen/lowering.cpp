#include "codegen/lowering.h"

#include <fmt/format.h>

#include <set>
#include <string>

#include "ir/op_table.h"
#include "support/error.h"

namespace eqfuse::codegen {

namespace {

const std::set<std::string, std::less<>> kLayout = {"Transpose", "Reshape",  "Flatten", "Squeeze",
                                                    "Unsqueeze", "Identity", "Dropout", "Expand",
                                                    "Slice",     "Concat",   "Gather",  "Shape"};
// Computed element by element, each output element an expression of loads at computed places
// (printer_index_ops.cpp); unlike kLayout's, not read through by the plan.
const std::set<std::string, std::less<>> kIndexed = {
    "BatchNormalization", "Trilu",    "Tile",   "DepthToSpace", "SpaceToDepth",
    "GatherElements",     "GatherND", "Pad",    "OneHot",       "EyeLike",
    "ConstantOfShape",    "Range",    "Resize", "Upsample"};
const std::set<std::string, std::less<>> kReduce = {
    "ReduceSum",    "ReduceMean",      "ReduceMax",         "ReduceMin",
    "ReduceProd",   "ReduceL1",        "ReduceL2",          "ReduceSumSquare",
    "ReduceLogSum", "ReduceLogSumExp", "GlobalAveragePool", "GlobalMaxPool"};

}  // namespace

bool is_pointwise(const ir::Node& n) {
  if (!n.def) return false;
  if (kLayout.count(n.op_type) || kIndexed.count(n.op_type)) return true;
  return n.def->scalar != nullptr || n.def->scalar_for_node != nullptr;
}

bool is_elementwise(const ir::Node& n) {
  return is_pointwise(n) && !kIndexed.count(n.op_type) &&
         (!kLayout.count(n.op_type) || n.op_type == "Expand");
}

bool reduces_last_axis(const ir::Graph& g, const ir::Node& n) {
  if (!kReduce.count(n.op_type) || n.op_type.rfind("Global", 0) == 0 || n.inputs.empty() ||
      n.inputs[0] == ir::kNoValue)
    return false;
  const ir::Shape& in = g.value(n.inputs[0]).type.shape;
  if (!in.has_rank() || in.rank() == 0) return false;
  ir::OpContext ctx = ir::make_context(g, n);
  if (ctx.attr_int("keepdims") == 0) return false;
  const auto axes = ctx.ints_attr_or_input("axes", 1);
  if (!axes || axes->size() != 1) return false;
  const int64_t r = int64_t(in.rank()), a = (*axes)[0];
  return a == r - 1 || a == -1;
}

std::optional<GatheredSlice> gathered_slice(const ir::Graph& g, const ir::Node& n) {
  if (n.op_type != "Gather" || n.inputs.size() != 2 || n.inputs[0] == ir::kNoValue ||
      n.inputs[1] == ir::kNoValue || !g.value(n.inputs[1]).is_weight())
    return std::nullopt;
  const auto indices = g.weight_data(n.inputs[1]);
  const ir::Shape& in = g.value(n.inputs[0]).type.shape;
  if (!indices || indices->numel() != 1 || indices->dims().size() > 1 || !in.has_rank())
    return std::nullopt;
  ir::OpContext ctx = ir::make_context(g, n);
  int64_t axis = ctx.attr_int("axis");
  if (axis < 0) axis += int64_t(in.rank());
  if (axis < 0 || axis >= int64_t(in.rank())) return std::nullopt;
  GatheredSlice slice{size_t(axis), int64_t(indices->get(0)), indices->dims().size() == 1};
  if (slice.index < 0) {  // from the end: only where the extent is known
    if (!in[slice.axis].is_static()) return std::nullopt;
    slice.index += in[slice.axis].value();
  }
  if (slice.index < 0 || (in[slice.axis].is_static() && slice.index >= in[slice.axis].value()))
    return std::nullopt;
  return slice;
}

bool dropout_is_identity(const ir::Graph& g, const ir::Node& n) {
  auto constant = [&](size_t k) -> std::optional<double> {
    if (k >= n.inputs.size() || n.inputs[k] == ir::kNoValue || !g.value(n.inputs[k]).is_weight())
      return std::nullopt;
    const auto t = g.weight_data(n.inputs[k]);
    if (!t || t->numel() != 1) return std::nullopt;
    return t->get(0);
  };
  const bool training_input = n.inputs.size() > 2 && n.inputs[2] != ir::kNoValue;
  return !training_input || constant(2) == 0.0 || constant(1) == 0.0;
}

StageKind stage_kind(const ir::Node& n) {
  if (is_pointwise(n)) return StageKind::Pointwise;
  const std::string& op = n.op_type;
  // ArgMax, ArgMin and ConvTranspose (a sum per output element over channels and taps) are
  // loops per output element, as a reduction's.
  if (kReduce.count(op) || op == "ArgMax" || op == "ArgMin" || op == "ConvTranspose")
    return StageKind::Reduce;
  if (op == "Softmax" || op == "LogSoftmax") return StageKind::Softmax;
  if (op == "LayerNormalization") return StageKind::LayerNorm;
  if (op == "MatMul") return StageKind::MatMul;
  if (op == "Gemm") return StageKind::Gemm;
  if (op == "Conv") return StageKind::Conv;
  if (op == "MaxPool" || op == "AveragePool") return StageKind::Pool;
  throw Error(fmt::format("codegen: {} '{}': no generated kernel computes this op", op, n.name),
              Error::Kind::Unsupported);
}

std::vector<size_t> data_inputs(const ir::Node& n) {
  const std::string& op = n.op_type;
  if (op == "Shape" || op == "EyeLike" || op == "ConstantOfShape") return {};  // shapes only
  if (op == "Range" || op == "OneHot") return {0, 2};  // not the length, nor the depth
  if (op == "Reshape" || op == "Expand" || op == "Slice" || op == "Squeeze" || op == "Unsqueeze" ||
      op == "Dropout" || op == "Tile" || op == "Resize" || op == "Upsample" || kReduce.count(op))
    return {0};
  if (op == "Pad") return {0, 2};
  std::vector<size_t> all(n.inputs.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  return all;
}

std::vector<size_t> contiguous_inputs(const ir::Node& n) {
  if (n.op_type == "MatMul" || n.op_type == "Gemm" || n.op_type == "Conv") return {0, 1};
  if (n.op_type == "Resize" || n.op_type == "Upsample") return {0};
  return {};
}

}  // namespace eqfuse::codegen
