#include "optimizer/kernel_kind.h"

#include <algorithm>
#include <functional>
#include <unordered_map>

#include "ir/kernel_body.h"

namespace eqfuse::optimizer {

namespace {

using rules::FusionKinds;
using rules::KernelKindDecl;

bool pointwise_op(const ir::OpDef& def) {
  // CastLike reads its second input for the dtype alone, which a body cannot state.
  return (def.fusion == ir::FusionClass::Elementwise || def.fusion == ir::FusionClass::Broadcast) &&
         def.max_outputs == 1 && def.name != "CastLike";
}

bool plays(const FusionKinds& kinds, const std::string& role, const ir::OpDef& def) {
  if (role == rules::kPointwiseRole) return pointwise_op(def);
  return kinds.declared_in_role(role, def.name);
}

// A role or op name of a kind, against an op.
bool matches(const FusionKinds& kinds, const std::string& name, const ir::OpDef& def) {
  return name == def.name || plays(kinds, name, def);
}

// Whether a reduction reduces its input's last axis only (keeping it, for Reduce*).
bool reduces_last_axis(const BodyOp& op) {
  if (op.input_types.empty() || !op.input_types[0]) return false;
  const ir::Shape& in = op.input_types[0]->shape;
  if (!in.has_rank() || in.rank() == 0) return false;
  auto last = static_cast<int64_t>(in.rank()) - 1;
  auto is_last = [&](int64_t a) { return a == -1 || a == last; };
  const std::string& name = op.def->name;
  if (name == "Softmax" || name == "LogSoftmax" || name == "LayerNormalization")
    return is_last(op.attrs->get_int("axis", -1));
  if (op.attrs->get_int("keepdims", 1) != 1) return false;
  auto axes = op.attrs->ints_if_present("axes");
  if (!axes) return op.inputs.size() == 1 && in.rank() == 1;
  return axes->size() == 1 && is_last((*axes)[0]);
}

// Whether `kind` admits the body (see rules/fusion_kinds.h for what a kind says).
bool admits(const KernelKindDecl& kind, const std::vector<BodyOp>& ops,
            const std::vector<bool>& contraction, const FusionKinds& kinds) {
  if (static_cast<size_t>(std::count(contraction.begin(), contraction.end(), true)) !=
      kind.contractions.size())
    return false;
  std::vector<size_t> level(ops.size(), 0);
  auto level_of = [&](int v) { return v < 0 ? size_t{0} : level[static_cast<size_t>(v)]; };
  // Read from the kernel's inputs through index maps only.
  std::function<bool(int)> from_inputs = [&](int v) {
    if (v < 0) return true;
    const BodyOp& op = ops[static_cast<size_t>(v)];
    return plays(kinds, rules::kIndexMapRole, *op.def) &&
           std::all_of(op.inputs.begin(), op.inputs.end(), from_inputs);
  };
  // How many ops matched each (one ...) item, per stage.
  std::vector<std::vector<size_t>> once(kind.stages.size());
  for (size_t s = 0; s < kind.stages.size(); ++s) once[s].resize(kind.stages[s].items.size());
  size_t k = 0;
  for (size_t i = 0; i < ops.size(); ++i) {
    const BodyOp& op = ops[i];
    if (contraction[i]) {
      const rules::KindContraction& spec = kind.contractions[k++];
      if (std::none_of(spec.names.begin(), spec.names.end(),
                       [&](const std::string& n) { return matches(kinds, n, *op.def); }))
        return false;
      size_t from = 0;
      for (size_t j = 0; j < op.inputs.size(); ++j) {
        if (spec.chained_operand == j) {
          // Computed by the previous stage, not a kernel input (that is a plain contraction).
          if (from_inputs(op.inputs[j])) return false;
          from = level_of(op.inputs[j]);
        } else if (spec.computed_operands ? level_of(op.inputs[j]) != 0
                                          : !from_inputs(op.inputs[j])) {
          return false;  // computed by the first stage, or read as stored
        }
      }
      if (spec.chained_operand && *spec.chained_operand >= op.inputs.size()) return false;
      if (from != k - 1) return false;
      level[i] = k;
      continue;
    }
    size_t lv = 0;
    for (int v : op.inputs) lv = std::max(lv, level_of(v));
    level[i] = lv;
    const rules::KindStage& stage = kind.stages[lv];
    bool matched = false;
    for (size_t item = 0; item < stage.items.size() && !matched; ++item) {
      const auto& names = stage.items[item].names;
      if (std::none_of(names.begin(), names.end(),
                       [&](const std::string& n) { return matches(kinds, n, *op.def); }))
        continue;
      matched = true;
      if (stage.items[item].exactly_one) ++once[lv][item];
    }
    if (!matched) return false;
    if (stage.row_max && plays(kinds, rules::kRowReductionRole, *op.def)) {
      const ir::Shape& s = op.input_types[0]->shape;
      if (!s[s.rank() - 1].is_static() || s[s.rank() - 1].value() > *stage.row_max) return false;
    }
  }
  for (size_t s = 0; s < kind.stages.size(); ++s)
    for (size_t item = 0; item < kind.stages[s].items.size(); ++item)
      if (kind.stages[s].items[item].exactly_one && once[s][item] != 1) return false;
  return true;
}

}  // namespace

bool fusible_op(const ir::OpDef& def, const FusionKinds& kinds) {
  if (pointwise_op(def)) return true;
  return std::any_of(kinds.roles.begin(), kinds.roles.end(), [&](const auto& role) {
    return std::find(role.second.begin(), role.second.end(), def.name) != role.second.end();
  });
}

std::optional<std::string> classify_kernel(const std::vector<BodyOp>& ops,
                                           const FusionKinds& kinds) {
  std::vector<bool> contraction(ops.size());
  const ir::TensorType* row = nullptr;  // every row reduction's input type
  for (size_t i = 0; i < ops.size(); ++i) {
    if (!ops[i].def || !fusible_op(*ops[i].def, kinds)) return std::nullopt;
    contraction[i] = plays(kinds, rules::kContractionRole, *ops[i].def);
    if (!plays(kinds, rules::kRowReductionRole, *ops[i].def)) continue;
    if (!reduces_last_axis(ops[i])) return std::nullopt;
    const ir::TensorType* t = ops[i].input_types[0];
    if (row && !(*t == *row)) return std::nullopt;
    row = t;
  }
  for (const KernelKindDecl& kind : kinds.kinds)
    if (admits(kind, ops, contraction, kinds)) return kind.name;
  return std::nullopt;
}

std::optional<std::string> classify_kernel(const ir::Graph& g, const FusionKinds& kinds) {
  std::vector<BodyOp> ops;
  std::unordered_map<ir::ValueId, int> index;
  for (size_t k = 0; k < g.inputs().size(); ++k) index[g.inputs()[k]] = -1 - static_cast<int>(k);
  for (ir::ValueId w : g.weights()) {
    const std::string& name = g.value(w).name;  // "?k" (kernel_body_graph)
    index[w] = name.size() > 1 && name[0] == '?' ? -1 - std::stoi(name.substr(1)) : -1;
  }
  for (const ir::Node& n : g.nodes()) {
    BodyOp op;
    op.def = n.def;
    op.attrs = &n.attrs;
    for (ir::ValueId in : n.inputs) {
      op.inputs.push_back(in == ir::kNoValue ? -1 : index.at(in));
      op.input_types.push_back(in == ir::kNoValue ? nullptr : &g.value(in).type);
    }
    index[n.outputs[0]] = static_cast<int>(ops.size());
    ops.push_back(std::move(op));
  }
  return classify_kernel(ops, kinds);
}

std::optional<std::string> kernel_node_kind(const ir::Graph& graph, const ir::Node& kernel,
                                            const FusionKinds& kinds) {
  auto body = ir::kernel_body(kernel.attrs.get_string(ir::kKernelBodyAttr, ""));
  std::vector<const ir::TensorType*> types;
  std::vector<const ir::Tensor*> values;
  for (ir::ValueId v : kernel.inputs) {
    types.push_back(&graph.value(v).type);
    values.push_back(graph.value(v).data.get());
  }
  return classify_kernel(ir::kernel_body_graph(*body, types, values), kinds);
}

}  // namespace eqfuse::optimizer
