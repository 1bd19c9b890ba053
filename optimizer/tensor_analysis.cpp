#include "optimizer/tensor_analysis.h"

#include "egraph/symbol.h"
#include "ir/attr_text.h"
#include "ir/interpreter.h"
#include "optimizer/fold_weights.h"

namespace eqfuse::optimizer {

using egraph::AttrId;
using egraph::EClassId;
using egraph::NodeId;

void TensorAnalysis::add_input(const std::string& name, ir::TensorType type) {
  inputs_[name] = {std::move(type), nullptr};
}

void TensorAnalysis::add_weight(const std::string& name, ir::TensorType type,
                                std::shared_ptr<const ir::Tensor> data) {
  weights_[name] = {std::move(type), std::move(data)};
}

void TensorAnalysis::add_kept_node(const std::string& key, KeptNode node) {
  kept_[key] = std::move(node);
}

const TensorAnalysis::KeptNode* TensorAnalysis::kept_node(const std::string& key) const {
  auto it = kept_.find(key);
  return it == kept_.end() ? nullptr : &it->second;
}

const TensorData& TensorAnalysis::data(EClassId c) const {
  static const TensorData none;
  return c < data_.size() ? data_[c] : none;
}

void TensorAnalysis::remember_attributes(AttrId attrs, ir::Attributes value) {
  remembered_[attrs] = std::move(value);
}

std::optional<ir::Attributes> TensorAnalysis::attributes(AttrId attrs, const ir::OpDef& def) const {
  auto known = remembered_.find(attrs);
  if (known != remembered_.end()) return known->second;
  uint64_t key = (static_cast<uint64_t>(attrs) << 32) ^ reinterpret_cast<uintptr_t>(&def);
  std::lock_guard<std::mutex> lock(cache_mutex_);
  auto it = decoded_.find(key);
  if (it != decoded_.end()) return it->second;
  std::optional<ir::Attributes> out = ir::Attributes();
  for (const auto& [k, v] : egraph::attr_list(attrs)) {
    std::string_view name = egraph::symbol_name(k);
    const ir::AttrSpec* spec = def.find_attr(name);
    std::optional<ir::AttrValue> value;
    if (spec) value = ir::decode_attr(egraph::symbol_name(v), spec->kind);
    if (!value) {
      out.reset();
      break;
    }
    out->set(std::string(name), std::move(*value));
  }
  decoded_.emplace(key, out);
  return out;
}

std::string TensorAnalysis::leaf_name(AttrId attrs) const {
  const egraph::AttrList& list = egraph::attr_list(attrs);
  if (list.size() != 1) return {};
  auto v = ir::decode_attr(egraph::symbol_name(list[0].second), ir::AttrKind::String);
  return v ? std::get<std::string>(*v) : std::string();
}

const TensorAnalysis::KeptNode* TensorAnalysis::kept_node_of(const egraph::EGraph& egraph,
                                                             NodeId n) const {
  for (const auto& [k, v] : egraph::attr_list(egraph.attrs(n))) {
    if (egraph::symbol_name(k) != kNodeKey) continue;
    auto name = ir::decode_attr(egraph::symbol_name(v), ir::AttrKind::String);
    return name ? kept_node(std::get<std::string>(*name)) : nullptr;
  }
  return nullptr;
}

std::optional<TensorAnalysis::OpView> TensorAnalysis::op_view(const egraph::EGraph& egraph,
                                                              NodeId n) const {
  std::string_view op = egraph::symbol_name(egraph.op(n));
  if (op == kInputOp || op == kWeightOp || op == kNoneOp || op == egraph::kProjOp)
    return std::nullopt;
  for (const auto& [k, v] : egraph::attr_list(egraph.attrs(n)))
    if (egraph::symbol_name(k) == kNodeKey) return std::nullopt;
  const ir::OpDef* def = ir::find_op(op);
  if (!def || !def->infer) return std::nullopt;
  auto decoded = attributes(egraph.attrs(n), *def);
  if (!decoded) return std::nullopt;
  std::vector<const ir::TensorType*> types;
  std::vector<const ir::Tensor*> values;
  bool all_constant = true;
  for (EClassId child : egraph.children(n)) {
    const TensorData& d = data(egraph.find(child));
    if (d.none) {
      types.push_back(nullptr);
      values.push_back(nullptr);
      continue;
    }
    if (!d.type()) return std::nullopt;
    types.push_back(d.type());
    values.push_back(d.value.get());
    all_constant = all_constant && d.value;
  }
  auto app =
      ir::make_term_application(*def, std::move(*decoded), std::move(types), std::move(values));
  if (!app) return std::nullopt;
  return OpView{std::move(*app), all_constant};
}

TensorData TensorAnalysis::compute(const egraph::EGraph& egraph, NodeId n) const {
  TensorData out;
  std::string_view op = egraph::symbol_name(egraph.op(n));
  auto children = egraph.children(n);
  AttrId attrs = egraph.attrs(n);
  auto leaf = [&](const std::unordered_map<std::string, Leaf>& table) {
    auto it = table.find(leaf_name(attrs));
    if (it == table.end()) return;
    out.valid = true;
    out.types = {it->second.type};
    const auto& v = it->second.value;
    if (v && v->numel() <= kMaxConstantElements) out.value = v;
  };
  if (op == kInputOp) {
    leaf(inputs_);
    return out;
  }
  if (op == kWeightOp) {
    leaf(weights_);
    out.constant = out.valid;
    return out;
  }
  if (op == kNoneOp) {
    out.none = true;
    return out;
  }
  if (op == egraph::kProjOp) {
    if (children.size() != 1) return out;
    const TensorData& tuple = data(egraph.find(children[0]));
    auto index = ir::decode_attr(egraph::attr_list(attrs).empty()
                                     ? ""
                                     : egraph::symbol_name(egraph::attr_list(attrs)[0].second),
                                 ir::AttrKind::Int);
    if (!tuple.valid || !tuple.tuple || !index) return out;
    auto k = std::get<int64_t>(*index);
    if (k < 0 || static_cast<size_t>(k) >= tuple.types.size()) return out;
    out.valid = true;
    out.types = {tuple.types[static_cast<size_t>(k)]};
    return out;
  }
  // A kept node: its types are the graph's.
  if (const KeptNode* kept = kept_node_of(egraph, n)) {
    out.valid = true;
    out.types = kept->types;
    out.tuple = kept->types.size() > 1;
    return out;
  }
  for (const auto& [k, v] : egraph::attr_list(attrs))
    if (egraph::symbol_name(k) == kNodeKey) return out;  // a kept node of unknown name
  std::optional<OpView> view = op_view(egraph, n);
  if (!view) return out;
  const ir::Node& node = view->app.node;
  const ir::OpDef* def = node.def;
  const std::vector<const ir::Tensor*>& input_values = view->app.input_values;
  bool all_constant = view->all_constant;
  std::optional<std::vector<ir::TensorType>> types = ir::infer_term_types(view->app);
  if (!types) return out;
  out.valid = true;
  out.tuple = ir::is_tuple_term(*def, node.attrs);
  out.types = std::move(*types);
  // A Constant is one; ops with no inputs otherwise generate (RandomNormal): never constant.
  out.constant = foldable_op(*def) && (!node.inputs.empty() || def->name == "Constant");
  for (egraph::EClassId child : egraph.children(n)) {
    const TensorData& d = data(egraph.find(child));
    out.constant = out.constant && (d.none || d.constant);
  }
  // Fold small constants, so conditions on constant leaves see through Constant, Cast, ...
  if (!out.tuple && all_constant && def->kernel && out.types[0].shape.is_static() &&
      *out.types[0].shape.numel() <= kMaxConstantElements) {
    std::vector<const ir::Tensor*> inputs(input_values.begin(), input_values.end());
    try {
      static const ir::Graph empty;
      std::vector<ir::Tensor> values = ir::evaluate_node(empty, node, inputs);
      if (!values.empty()) out.value = std::make_shared<const ir::Tensor>(std::move(values[0]));
    } catch (const std::exception&) {
    }
  }
  return out;
}

void TensorAnalysis::make(const egraph::EGraph& egraph, NodeId n) {
  if (data_.size() <= n) data_.resize(n + 1);
  data_[n] = compute(egraph, n);
}

egraph::DidMerge TensorAnalysis::merge(EClassId into, EClassId from) {
  if (data_.size() <= std::max(into, from)) data_.resize(std::max(into, from) + 1);
  TensorData& a = data_[into];
  TensorData& b = data_[from];
  egraph::DidMerge did;
  if (!a.valid && b.valid) {
    a = b;
    did.into_changed = true;
  } else if (a.valid && !b.valid) {
    did.from_changed = true;
  }
  if (a.valid && !a.value && b.value && !a.tuple) {
    a.value = b.value;
    did.into_changed = true;
  } else if (a.value && !b.value) {
    did.from_changed = true;
  }
  if (a.valid && b.constant && !a.constant) {
    a.constant = true;
    did.into_changed = true;
  } else if (a.constant && !b.constant) {
    did.from_changed = true;
  }
  return did;
}

bool TensorAnalysis::join(const egraph::EGraph& egraph, EClassId c, NodeId n) {
  if (data_.size() <= c) data_.resize(c + 1);
  TensorData& a = data_[c];
  if (a.valid && (a.value || a.tuple) && a.constant) return false;
  TensorData d = compute(egraph, n);
  bool changed = false;
  if (!a.valid && d.valid) {
    a = std::move(d);
    return true;
  }
  if (a.valid && !a.constant && d.valid && d.constant) {
    a.constant = true;
    changed = true;
  }
  if (a.valid && !a.value && d.valid && d.value) {
    a.value = d.value;
    changed = true;
  }
  return changed;
}

}  // namespace eqfuse::optimizer
