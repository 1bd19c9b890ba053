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
const std::set<std::string, std::less<>> kReduce = {
    "ReduceSum",    "ReduceMean",      "ReduceMax",         "ReduceMin",
    "ReduceProd",   "ReduceL1",        "ReduceL2",          "ReduceSumSquare",
    "ReduceLogSum", "ReduceLogSumExp", "GlobalAveragePool", "GlobalMaxPool"};

}  // namespace

bool is_pointwise(const ir::Node& n) {
  if (!n.def) return false;
  if (kLayout.count(n.op_type)) return true;
  return n.def->scalar != nullptr || n.def->scalar_for_node != nullptr;
}

bool is_elementwise(const ir::Node& n) {
  return is_pointwise(n) && (!kLayout.count(n.op_type) || n.op_type == "Expand");
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

StageKind stage_kind(const ir::Node& n) {
  if (is_pointwise(n)) return StageKind::Pointwise;
  const std::string& op = n.op_type;
  if (kReduce.count(op)) return StageKind::Reduce;
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
  if (op == "Shape") return {};
  if (op == "Reshape" || op == "Expand" || op == "Slice" || op == "Squeeze" || op == "Unsqueeze" ||
      op == "Dropout" || kReduce.count(op))
    return {0};
  std::vector<size_t> all(n.inputs.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  return all;
}

std::vector<size_t> contiguous_inputs(const ir::Node& n) {
  if (n.op_type == "MatMul" || n.op_type == "Gemm" || n.op_type == "Conv") return {0, 1};
  return {};
}

}  // namespace eqfuse::codegen
