#include "optimizer/tensor_egraph.h"

#include <algorithm>
#include <unordered_set>

#include "egraph/symbol.h"
#include "ir/attr_text.h"
#include "ir/op_table.h"
#include "rules/condition.h"

namespace eqfuse::optimizer {

using egraph::AttrId;
using egraph::EClassId;
using egraph::kNoId;
using egraph::NodeId;

TensorEGraph::TensorEGraph() = default;
TensorEGraph::TensorEGraph(TensorEGraph&&) noexcept = default;
TensorEGraph& TensorEGraph::operator=(TensorEGraph&&) noexcept = default;
TensorEGraph::~TensorEGraph() = default;

namespace {

AttrId one_attr(const char* key, const ir::AttrValue& value) {
  return egraph::intern_attrs({{egraph::intern(key), egraph::intern(ir::encode_attr(value))}});
}

AttrId payload(const ir::Attributes& attrs) {
  egraph::AttrList list;
  for (const auto& [k, v] : attrs.entries())
    list.emplace_back(egraph::intern(k), egraph::intern(ir::encode_attr(v)));
  return egraph::intern_attrs(std::move(list));
}

// The node's attributes in the tensor language's canonical form, or nullopt when the node has
// attributes outside its op's schema (it is then kept as it is).
std::optional<ir::Attributes> canonical_attrs(const ir::Graph& graph, const ir::Node& node) {
  const ir::OpDef& def = *node.def;
  ir::Attributes out;
  for (const auto& [k, v] : node.attrs.entries()) {
    const ir::AttrSpec* spec = def.find_attr(k);
    if (!spec) return std::nullopt;
    if (ir::attr_kind(v) == ir::AttrKind::Int && spec->kind == ir::AttrKind::Float)
      out.set(k, ir::AttrValue(static_cast<double>(std::get<int64_t>(v))));
    else if (ir::attr_kind(v) != spec->kind && ir::attr_kind(v) != ir::AttrKind::Tensor &&
             ir::attr_kind(v) != ir::AttrKind::Opaque)
      return std::nullopt;  // another spelling (Cast's `to` as a dtype name): kept as it is
    else
      out.set(k, v);
  }
  for (const ir::AttrSpec& spec : def.attrs)
    if (!out.has(spec.name) && spec.default_value) out.set(spec.name, *spec.default_value);
  if (def.name == "Transpose" && !out.has("perm") && !node.inputs.empty() &&
      node.inputs[0] != ir::kNoValue) {
    const ir::Shape& s = graph.value(node.inputs[0]).type.shape;
    if (s.has_rank()) {
      std::vector<int64_t> perm;
      for (size_t i = s.rank(); i-- > 0;) perm.push_back(static_cast<int64_t>(i));
      out.set("perm", ir::AttrValue(std::move(perm)));
    }
  }
  if (def.name == "Split" && !out.has("split") && !out.has("num_outputs"))
    out.set("num_outputs", ir::AttrValue(static_cast<int64_t>(node.outputs.size())));
  return out;
}

bool has_tensor_attr(const ir::Attributes& attrs) {
  for (const auto& [k, v] : attrs.entries())
    if (ir::attr_kind(v) == ir::AttrKind::Tensor || ir::attr_kind(v) == ir::AttrKind::Opaque)
      return true;
  return false;
}

}  // namespace

TensorEGraph from_graph(const ir::Graph& graph) {
  TensorEGraph teg;
  teg.analysis = std::make_unique<TensorAnalysis>();
  teg.egraph = std::make_unique<egraph::EGraph>(teg.analysis.get());
  teg.egraph->record_merges(true);  // for explanations (optimizer/explain.h)
  teg.source = std::make_shared<const ir::Graph>(graph);
  TensorAnalysis& analysis = *teg.analysis;
  egraph::EGraph& eg = *teg.egraph;
  std::vector<EClassId> value_class(graph.values().size(), kNoId);
  teg.value_node.assign(graph.values().size(), kNoId);
  auto define = [&](ir::ValueId v, EClassId c) {
    value_class[v] = c;
    teg.value_node[v] = c;  // no merges yet: the class id is the adding node's id
    teg.class_name.emplace_back(c, graph.value(v).name);
  };
  for (ir::ValueId v : graph.inputs()) {
    const ir::Value& value = graph.value(v);
    analysis.add_input(value.name, value.type);
    define(v, eg.add(egraph::intern(kInputOp), one_attr("name", value.name), {}));
  }
  for (ir::ValueId v : graph.weights()) {
    const ir::Value& value = graph.value(v);
    analysis.add_weight(value.name, value.type, value.data);
    define(v, eg.add(egraph::intern(kWeightOp), one_attr("name", value.name), {}));
  }
  EClassId none = kNoId;
  for (size_t ni = 0; ni < graph.nodes().size(); ++ni) {
    const ir::Node& node = graph.node(static_cast<ir::NodeId>(ni));
    std::vector<EClassId> children;
    for (ir::ValueId in : node.inputs) {
      if (in == ir::kNoValue) {
        if (none == kNoId) none = eg.add(egraph::intern(kNoneOp), {});
        children.push_back(none);
      } else {
        children.push_back(value_class[in]);
      }
    }
    while (!children.empty() && children.back() == none && none != kNoId) children.pop_back();
    std::optional<ir::Attributes> attrs;
    // Control flow (If, Loop, Scan) is kept as it is: its bodies are not in the tensor language.
    if (node.def && node.domain.empty() && node.subgraphs.empty())
      attrs = canonical_attrs(graph, node);
    bool tuple = attrs && ir::is_tuple_term(*node.def, *attrs);
    if (attrs && !tuple && node.outputs.size() > 1) attrs.reset();  // extra outputs in use
    if (attrs && tuple && ir::term_output_count(*node.def, *attrs) != node.outputs.size())
      attrs.reset();
    EClassId c;
    if (attrs) {
      AttrId id = payload(*attrs);
      if (has_tensor_attr(*attrs)) analysis.remember_attributes(id, *attrs);
      c = eg.add(egraph::intern(node.def->name), id, children);
    } else {
      std::string key = node.name.empty() ? "#" + std::to_string(ni) : node.name;
      TensorAnalysis::KeptNode kept;
      kept.node.op_type = node.op_type;
      kept.node.domain = node.domain;
      kept.node.def = node.def;
      kept.node.attrs = node.attrs;
      kept.node.name = node.name;
      kept.node.subgraphs = node.subgraphs;
      for (ir::ValueId out : node.outputs) kept.types.push_back(graph.value(out).type);
      tuple = node.outputs.size() > 1;
      analysis.add_kept_node(key, std::move(kept));
      std::string op = node.domain.empty() ? node.op_type : node.domain + "." + node.op_type;
      c = eg.add(egraph::intern(op), one_attr(kNodeKey, key), children);
    }
    if (tuple) {
      for (size_t k = 0; k < node.outputs.size(); ++k) {
        EClassId p = eg.add(egraph::intern(egraph::kProjOp),
                            one_attr("index", ir::AttrValue(static_cast<int64_t>(k))), {&c, 1});
        define(node.outputs[k], p);
      }
    } else {
      define(node.outputs[0], c);
    }
  }
  for (ir::ValueId v : graph.outputs()) teg.outputs.push_back(value_class[v]);
  eg.rebuild();
  return teg;
}

NodeChoice original_choice(const TensorEGraph& teg) {
  auto first = std::make_shared<std::unordered_map<EClassId, NodeId>>();
  for (NodeId n : teg.value_node)
    if (n != kNoId) first->emplace(teg.egraph->find(n), n);
  // Nodes that are not values (a tuple's node) are found through their Proj's child.
  const egraph::EGraph* eg = teg.egraph.get();
  return [first, eg](EClassId c) -> NodeId {
    auto it = first->find(eg->find(c));
    if (it != first->end()) return it->second;
    auto nodes = eg->class_nodes(eg->find(c));
    return nodes.empty() ? kNoId : nodes[0];
  };
}

namespace {

class GraphRebuilder {
 public:
  GraphRebuilder(const TensorEGraph& teg, const NodeChoice& choice,
                 std::vector<egraph::NodeId>* made_from)
      : teg_(teg), eg_(*teg.egraph), choice_(choice), made_from_(made_from) {
    out_.name = teg.source->name;
    out_.opsets = teg.source->opsets;
    for (const auto& [c, name] : teg.class_name) names_.emplace(eg_.find(c), name);
    for (ir::ValueId v : teg.source->outputs()) {
      // Output names win: prefer them for their class.
      EClassId c = teg.value_node[v] == kNoId ? kNoId : eg_.find(teg.value_node[v]);
      if (c != kNoId) names_[c] = teg.source->value(v).name;
    }
    for (ir::ValueId v : teg.source->inputs()) {
      const ir::Value& value = teg.source->value(v);
      inputs_[value.name] = out_.add_input(value.name, value.type);
    }
  }

  ir::Graph finish() && {
    const ir::Graph& src = *teg_.source;
    for (size_t i = 0; i < teg_.outputs.size(); ++i) {
      ir::ValueId v = build(teg_.outputs[i])[0];
      const std::string& want = src.value(src.outputs()[i]).name;
      if (out_.value(v).name != want && !out_.find_value(want)) {
        ir::Node id;
        id.op_type = "Identity";
        id.def = ir::find_op("Identity");
        id.name = out_.unique_name(want + "_identity");
        id.inputs = {v};
        id.outputs = {out_.add_value(want, out_.value(v).type)};
        v = id.outputs[0];
        out_.add_node(std::move(id));
      }
      out_.add_output(v);
    }
    return std::move(out_);
  }

  std::vector<ir::ValueId> build(EClassId c) {
    c = eg_.find(c);
    auto done = built_.find(c);
    if (done != built_.end()) return done->second;
    if (!visiting_.insert(c).second)
      throw Error("to_graph: the chosen nodes form a cycle through e-class " + std::to_string(c),
                  Error::Kind::Internal);
    std::vector<ir::ValueId> values = build_node(c);
    visiting_.erase(c);
    built_[c] = values;
    return values;
  }

 private:
  std::string name_for(EClassId c, const std::string& fallback) {
    auto it = names_.find(c);
    if (it != names_.end() && !out_.find_value(it->second)) return it->second;
    return out_.unique_name(fallback);
  }

  std::vector<ir::ValueId> build_node(EClassId c) {
    NodeId n = choice_(c);
    if (n == kNoId || eg_.find(n) != c)
      throw Error(
          "to_graph: the choice for e-class " + std::to_string(c) + " is not a node of that class",
          Error::Kind::Internal);
    std::string_view op = egraph::symbol_name(eg_.op(n));
    const egraph::AttrList& attrs = egraph::attr_list(eg_.attrs(n));
    auto string_attr = [&]() -> std::string {
      auto v = ir::decode_attr(egraph::symbol_name(attrs.at(0).second), ir::AttrKind::String);
      return v ? std::get<std::string>(*v) : std::string();
    };
    if (op == kInputOp) {
      auto it = inputs_.find(string_attr());
      if (it == inputs_.end()) fail("to_graph: unknown input '" + string_attr() + "'");
      return {it->second};
    }
    if (op == kWeightOp) {
      std::string name = string_attr();
      if (auto v = out_.find_value(name)) return {*v};
      auto src = teg_.source->find_value(name);
      if (!src) fail("to_graph: unknown weight '" + name + "'");
      const ir::Value& w = teg_.source->value(*src);
      if (w.data) return {out_.add_weight(name, w.data)};
      return {out_.add_external_weight(name, w.type, *w.external)};
    }
    if (op == kNoneOp) return {ir::kNoValue};
    auto children = eg_.children(n);
    if (op == egraph::kProjOp) {
      std::vector<ir::ValueId> tuple = build(children[0]);
      auto k = ir::decode_attr(egraph::symbol_name(attrs.at(0).second), ir::AttrKind::Int);
      auto index = static_cast<size_t>(std::get<int64_t>(*k));
      if (index >= tuple.size()) fail("to_graph: Proj index out of range");
      return {tuple[index]};
    }
    ir::Node node;
    const TensorAnalysis::KeptNode* kept = nullptr;
    if (!attrs.empty() && egraph::symbol_name(attrs[0].first) == kNodeKey)
      kept = teg_.analysis->kept_node(string_attr());
    if (kept) {
      node = kept->node;
    } else {
      const ir::OpDef* def = ir::find_op(op);
      if (!def) fail("to_graph: unknown op '" + std::string(op) + "'");
      auto decoded = teg_.analysis->attributes(eg_.attrs(n), *def);
      if (!decoded) fail("to_graph: cannot decode the attributes of " + std::string(op));
      node.op_type = def->name;
      node.def = def;
      node.attrs = std::move(*decoded);
    }
    for (EClassId child : children) node.inputs.push_back(build(child)[0]);
    const TensorData& data = teg_.analysis->data(c);
    size_t count = kept ? kept->types.size() : data.types.size();
    if (!kept && !data.valid) fail("to_graph: e-class " + std::to_string(c) + " has no type");
    if (node.name.empty() || out_.find_value(node.name)) node.name = out_.unique_name(node.op_type);
    for (size_t k = 0; k < count; ++k) {
      EClassId value_class = c;
      if (data.tuple || (kept && count > 1)) {
        EClassId p = eg_.lookup(egraph::intern(egraph::kProjOp),
                                one_attr("index", ir::AttrValue(static_cast<int64_t>(k))), {&c, 1});
        value_class = p == kNoId ? kNoId : eg_.find(p);
      }
      ir::TensorType type = kept ? kept->types[k] : data.types[k];
      node.outputs.push_back(
          out_.add_value(name_for(value_class, node.name + "_" + std::to_string(k)), type));
    }
    // Split's num_outputs is opset 18; older graphs say it with their output count.
    if (!kept && node.op_type == "Split" && out_.opsets[""] < 18) node.attrs.erase("num_outputs");
    ir::NodeId id = out_.add_node(std::move(node));
    if (made_from_) made_from_->push_back(n);
    if (!kept) {
      const ir::Node& added = out_.node(id);
      std::vector<ir::TensorType> types = ir::infer_output_types(out_, added);
      for (size_t k = 0; k < added.outputs.size(); ++k)
        out_.value(added.outputs[k]).type = types[k];
    }
    return out_.node(id).outputs;
  }

  const TensorEGraph& teg_;
  const egraph::EGraph& eg_;
  const NodeChoice& choice_;
  std::vector<egraph::NodeId>* made_from_;
  ir::Graph out_;
  std::unordered_map<EClassId, std::string> names_;
  std::unordered_map<std::string, ir::ValueId> inputs_;
  std::unordered_map<EClassId, std::vector<ir::ValueId>> built_;
  std::unordered_set<EClassId> visiting_;
};

}  // namespace

ir::Graph to_graph(const TensorEGraph& teg, const NodeChoice& choice,
                   std::vector<egraph::NodeId>* made_from) {
  if (!teg.egraph->clean()) fail("to_graph: the e-graph must be rebuilt first");
  GraphRebuilder rebuilder(teg, choice, made_from);
  return std::move(rebuilder).finish();
}

}  // namespace eqfuse::optimizer
