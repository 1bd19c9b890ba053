#include "ir/constant_shape_specs.h"

#include <optional>
#include <vector>

#include "ir/op_table.h"
#include "ir/prune.h"
#include "support/error.h"

namespace eqfuse::ir {
namespace {

// The constant spec meaning `target` for a Reshape of `input`; nullopt when an element is
// unknown or a second element would need -1.
std::optional<std::vector<int64_t>> constant_spec(const Shape& input,
                                                  const std::vector<SymInt>& target) {
  std::vector<int64_t> spec;
  bool rest_used = false;
  for (size_t i = 0; i < target.size(); ++i) {
    const SymInt& element = target[i];
    if (!element.is_known()) return std::nullopt;
    if (auto c = element.constant()) {
      spec.push_back(*c);
      if (*c == -1) rest_used = true;
    } else if (input.has_rank() && i < input.rank() && input[i].sym() == element) {
      spec.push_back(0);
    } else {
      spec.push_back(-1);
      if (rest_used) return std::nullopt;
      rest_used = true;
    }
  }
  return spec;
}

}  // namespace

ConstantShapeSpecs with_constant_shape_specs(const Graph& graph) {
  Graph copy = graph;
  size_t rewritten = 0;
  for (NodeId id = 0; id < copy.nodes().size(); ++id) {
    Node& node = copy.node(id);
    if (node.op_type != "Reshape" || !node.domain.empty() || node.inputs.size() != 2 ||
        node.outputs.size() != 1 || node.attrs.get_int("allowzero", 0) != 0)
      continue;
    const Value& shape = copy.value(node.inputs[1]);
    if (shape.is_weight() || !shape.sym_value) continue;
    auto spec = constant_spec(copy.value(node.inputs[0]).type.shape, *shape.sym_value);
    if (!spec) continue;
    Node candidate = node;
    candidate.inputs.pop_back();
    candidate.attrs.set("shape", AttrValue(*spec));
    std::vector<TensorType> types;
    try {
      types = infer_output_types(copy, candidate);
    } catch (const Error&) {
      continue;
    }
    if (types.size() != 1 || !(types[0] == copy.value(node.outputs[0]).type)) continue;
    node = std::move(candidate);
    ++rewritten;
  }
  if (rewritten == 0) return {std::move(copy), 0};
  return {prune_unused(copy), rewritten};
}

}  // namespace eqfuse::ir
