#include "ir/rebuild.h"

#include <fmt/format.h>

#include "ir/op_table.h"
#include "ir/shape_values.h"
#include "support/error.h"

namespace eqfuse::ir {

GraphRebuild::GraphRebuild(const Graph& source)
    : source_(source), map_(source.values().size(), kNoValue) {
  out_.name = source.name;
  out_.opsets = source.opsets;
  for (ValueId v : source.inputs())
    map_[v] = out_.add_input(source.value(v).name, source.value(v).type);
  for (ValueId v : source.weights()) {
    const Value& w = source.value(v);
    map_[v] = w.data ? out_.add_weight(w.name, w.data)
                     : out_.add_external_weight(w.name, w.type, *w.external);
  }
}

ValueId GraphRebuild::operator()(ValueId source_value) const {
  return source_value == kNoValue ? kNoValue : map_.at(source_value);
}

std::vector<ValueId> GraphRebuild::inputs(const Node& node) const {
  std::vector<ValueId> mapped;
  for (ValueId in : node.inputs) mapped.push_back((*this)(in));
  return mapped;
}

void GraphRebuild::emit(Node node, const std::vector<ValueId>& as) {
  node.outputs.clear();
  for (ValueId o : as) {
    const Value& v = source_.value(o);
    map_[o] = out_.add_value(v.name, v.type);
    out_.value(map_[o]).sym_value = v.sym_value;
    node.outputs.push_back(map_[o]);
  }
  out_.add_node(std::move(node));
}

ValueId GraphRebuild::op(const std::string& op_type, std::vector<ValueId> inputs, AttrList attrs,
                         const std::string& name, ValueId as) {
  Node node;
  node.name = name;
  node.op_type = op_type;
  node.def = find_op(op_type);
  if (!node.def)
    throw Error(fmt::format("rebuilding '{}': no op {} in the op table", name, op_type),
                Error::Kind::Internal);
  node.inputs = std::move(inputs);
  for (auto& [attr, value] : attrs) node.attrs.set(attr, std::move(value));
  node.outputs.assign(1, kNoValue);
  TensorType type = infer_output_types(out_, node).at(0);
  node.outputs.clear();
  if (as != kNoValue) {
    // The value keeps the source's type, which may know more dims (a model's declared shapes).
    const TensorType& declared = source_.value(as).type;
    bool fits = declared.dtype == type.dtype && declared.shape.has_rank() == type.shape.has_rank();
    if (fits && type.shape.has_rank()) {
      fits = declared.shape.rank() == type.shape.rank();
      for (size_t k = 0; fits && k < type.shape.rank(); ++k)
        fits = declared.shape[k] == type.shape[k] || !declared.shape[k].is_static() ||
               !type.shape[k].is_static();
    }
    if (!fits)
      throw Error(fmt::format("'{}' rebuilt: {} makes {} where value '{}' is {}", name, op_type,
                              type.str(), source_.value(as).name, declared.str()),
                  Error::Kind::Unsupported);
    emit(std::move(node), {as});
    return map_[as];
  }
  ValueId out = out_.add_value(fresh_name(name), type);
  node.outputs.push_back(out);
  if (auto sym = infer_shape_value(out_, node, type))
    out_.value(out).sym_value = std::make_shared<const std::vector<SymInt>>(std::move(*sym));
  out_.add_node(std::move(node));
  return out;
}

ValueId GraphRebuild::constant(const std::string& base, Tensor data) {
  return out_.add_weight(fresh_name(base), std::move(data));
}

void GraphRebuild::alias(ValueId source_value, ValueId value) {
  map_.at(source_value) = value;
}

std::string GraphRebuild::fresh_name(const std::string& base) const {
  std::string name = base;
  for (int k = 1; source_.find_value(name) || out_.find_value(name); ++k)
    name = fmt::format("{}_{}", base, k);
  return name;
}

Graph rebuild_graph(const Graph& source, const NodeExpansion& expand, std::vector<NodeId>* origin) {
  GraphRebuild rebuild(source);
  if (origin) origin->clear();
  for (size_t i = 0; i < source.nodes().size(); ++i) {
    const Node& n = source.nodes()[i];
    if (!expand(n, NodeId(i), rebuild)) {
      Node copy = n;
      copy.inputs = rebuild.inputs(n);
      rebuild.emit(std::move(copy), n.outputs);
    }
    if (origin) origin->resize(rebuild.out_.nodes().size(), NodeId(i));
  }
  for (ValueId v : source.outputs()) rebuild.out_.add_output(rebuild(v));
  return std::move(rebuild.out_);
}

}  // namespace eqfuse::ir
