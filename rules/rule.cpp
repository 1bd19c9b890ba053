#include "rules/rule.h"

#include <algorithm>

#include "egraph/egraph.h"
#include "ir/op_table.h"
#include "rules/condition.h"

namespace eqfuse::rules {

const Rule* RuleSet::find(std::string_view name) const {
  for (const Rule& r : rules)
    if (r.name == name) return &r;
  return nullptr;
}

RuleSet RuleSet::select(const std::vector<std::string>& enabled,
                        const std::vector<std::string>& disabled) const {
  auto has = [](const std::vector<std::string>& v, const std::string& g) {
    return std::find(v.begin(), v.end(), g) != v.end();
  };
  RuleSet out;
  out.warnings = warnings;
  out.fusion = fusion;
  for (const Rule& r : rules)
    if ((enabled.empty() || has(enabled, r.group)) && !has(disabled, r.group))
      out.rules.push_back(r);
  return out;
}

std::vector<std::string> RuleSet::groups() const {
  std::vector<std::string> out;
  for (const Rule& r : rules)
    if (std::find(out.begin(), out.end(), r.group) == out.end()) out.push_back(r.group);
  return out;
}

namespace {

class GraphInstantiator {
 public:
  GraphInstantiator(const Rule& rule, const RuleBinding& binding, ir::Graph& graph)
      : rule_(rule), view_(binding), graph_(graph) {}

  // The values of a term: one, or several for a tuple-valued op.
  std::vector<ir::ValueId> add(const Sexpr& term) {
    if (term.kind == Sexpr::Kind::Var) {
      auto v = graph_.find_value(term.text);
      if (!v) fail("rule '" + rule_.name + "': variable '?" + term.text + "' has no binding");
      return {*v};
    }
    const std::string& op = term.items[0].text;
    std::vector<const Sexpr*> children;
    const Sexpr* index = nullptr;
    for (size_t i = 1; i < term.items.size(); ++i) {
      if (term.items[i].kind == Sexpr::Kind::Keyword) {
        if (term.items[i].text == "index") index = &term.items[i + 1];
        ++i;
        continue;
      }
      children.push_back(&term.items[i]);
    }
    if (op == egraph::kProjOp) {
      std::vector<ir::ValueId> tuple = add(*children[0]);
      auto k = static_cast<size_t>(index->integer);
      if (k >= tuple.size())
        fail("rule '" + rule_.name + "': Proj index " + std::to_string(k) + " is out of range");
      return {tuple[k]};
    }
    const ir::OpDef* def = ir::find_op(op);
    if (!def) fail("rule '" + rule_.name + "': unknown op '" + op + "'");
    ir::Node node;
    node.op_type = def->name;
    node.def = def;
    node.name = graph_.unique_name(def->name);
    auto attrs = term_attributes(term, *def, view_);
    if (!attrs)
      fail("rule '" + rule_.name + "': cannot evaluate the attributes of " + term.str() +
           " under this binding");
    node.attrs = std::move(*attrs);
    for (const Sexpr* child : children) {
      std::vector<ir::ValueId> v = add(*child);
      node.inputs.push_back(v[0]);
    }
    size_t count = ir::term_output_count(*def, node.attrs);
    if (count == 0)
      fail("rule '" + rule_.name + "': the number of outputs of " + term.str() + " is unknown");
    for (size_t i = 0; i < count; ++i)
      node.outputs.push_back(graph_.add_value(graph_.unique_name(node.name + "_out"), {}));
    ir::NodeId id = graph_.add_node(std::move(node));
    std::vector<ir::TensorType> types;
    try {
      types = ir::infer_output_types(graph_, graph_.node(id));
    } catch (const Error& e) {
      throw Error(
          "rule '" + rule_.name + "': " + term.str() + " fails shape inference: " + e.what(),
          Error::Kind::BadInput);
    }
    const ir::Node& added = graph_.node(id);
    for (size_t i = 0; i < added.outputs.size(); ++i)
      graph_.value(added.outputs[i]).type = types[i];
    return added.outputs;
  }

 private:
  const Rule& rule_;
  BindingView view_;
  ir::Graph& graph_;
};

}  // namespace

ir::Graph instantiate_rule(const Rule& rule, const RuleBinding& binding) {
  ir::Graph graph;
  graph.name = rule.name;
  for (const std::string& v : rule.class_vars) {
    auto value = binding.values.find(v);
    if (value != binding.values.end()) {
      graph.add_weight(v, value->second);
      continue;
    }
    auto type = binding.types.find(v);
    if (type == binding.types.end())
      fail("rule '" + rule.name + "': no type given for variable '?" + v + "'");
    graph.add_input(v, type->second);
  }
  for (const AttrVar& a : rule.attr_vars)
    if (!binding.attrs.count(a.name))
      fail("rule '" + rule.name + "': no value given for attribute variable '?" + a.name + "'");
  GraphInstantiator inst(rule, binding, graph);
  std::vector<ir::ValueId> outputs;
  for (const Sexpr& t : rule.lhs) outputs.push_back(inst.add(t)[0]);
  for (const Sexpr& t : rule.rhs) outputs.push_back(inst.add(t)[0]);
  for (ir::ValueId v : outputs) graph.add_output(v);
  return graph;
}

ir::Graph instantiate_rule(const Rule& rule, const std::map<std::string, ir::TensorType>& var_types,
                           const std::map<std::string, ir::AttrValue>& attr_values) {
  RuleBinding binding;
  binding.types = var_types;
  binding.attrs = attr_values;
  return instantiate_rule(rule, binding);
}

}  // namespace eqfuse::rules
