#include "egraph/pattern.h"

#include "egraph/term.h"

namespace eqfuse::egraph {

uint32_t VarTable::get_or_add(const Sexpr& where, Kind kind) {
  uint32_t v = find(where.text);
  if (v != kNoId) {
    if (kinds_[v] != kind)
      throw sexpr_error(where, "variable '?" + where.text + "' is used both as an e-class and " +
                                   "as an attribute value");
    return v;
  }
  names_.push_back(where.text);
  kinds_.push_back(kind);
  return static_cast<uint32_t>(names_.size() - 1);
}

uint32_t VarTable::find(std::string_view name) const {
  for (size_t i = 0; i < names_.size(); ++i)
    if (names_[i] == name) return static_cast<uint32_t>(i);
  return kNoId;
}

namespace {
uint32_t use_var(const Sexpr& v, VarTable& vars, bool binding, VarTable::Kind kind) {
  if (!binding) {
    uint32_t idx = vars.find(v.text);
    if (idx == kNoId)
      throw sexpr_error(v, "variable '?" + v.text + "' is not bound by the left-hand side");
    if (vars.kind(idx) != kind)
      throw sexpr_error(v, "variable '?" + v.text + "' is used both as an e-class and as an " +
                               "attribute value");
    return idx;
  }
  return vars.get_or_add(v, kind);
}
}  // namespace

uint32_t Pattern::read(const Sexpr& form, VarTable& vars, bool binding) {
  PatternNode node;
  switch (form.kind) {
    case Sexpr::Kind::Var:
      node.var = use_var(form, vars, binding, VarTable::Kind::Class);
      break;
    case Sexpr::Kind::Symbol:
    case Sexpr::Kind::Integer:
    case Sexpr::Kind::Float:
      node.op = intern(form.text);
      break;
    case Sexpr::Kind::Keyword:
      throw sexpr_error(form, "keyword ':" + form.text + "' outside a node");
    case Sexpr::Kind::String:
      throw sexpr_error(form, "a string is not a pattern");
    case Sexpr::Kind::List: {
      NodeForm nf = split_node_form(form);
      node.op = nf.op;
      bool has_vars = false;
      AttrList literal;
      for (auto& [key, value] : nf.attrs) {
        PatternNode::Attr a{key, 0, kNoId};
        if (value->kind == Sexpr::Kind::Var) {
          a.var = use_var(*value, vars, binding, VarTable::Kind::Attr);
          has_vars = true;
        } else {
          a.value = intern(value->str());
        }
        node.attrs.push_back(a);
        literal.emplace_back(key, a.value);
      }
      try {
        AttrId id = intern_attrs(literal);  // also checks for repeated keys
        if (has_vars) {
          // Keep the canonical key order so matching compares lists position by position.
          node.attrs.clear();
          for (auto& [key, value] : attr_list(id)) {
            for (auto& [k2, v2] : nf.attrs) {
              if (k2 != key) continue;
              PatternNode::Attr a{key, 0, kNoId};
              if (v2->kind == Sexpr::Kind::Var)
                a.var = vars.find(v2->text);
              else
                a.value = value;
              node.attrs.push_back(a);
            }
          }
          node.attrs_id = kNoId;
        } else {
          node.attrs.clear();
          node.attrs_id = id;
        }
      } catch (const Error& e) {
        throw sexpr_error(form, e.what());
      }
      for (const Sexpr* child : nf.children) node.children.push_back(read(*child, vars, binding));
      break;
    }
  }
  nodes_.push_back(std::move(node));
  return static_cast<uint32_t>(nodes_.size() - 1);
}

Pattern Pattern::parse(const Sexpr& form, VarTable& vars, bool binding) {
  Pattern p;
  p.read(form, vars, binding);
  p.text_ = form.str();
  p.where_ = form.where;
  return p;
}

Pattern Pattern::parse(std::string_view text, VarTable& vars, bool binding) {
  return parse(parse_sexpr(text, "<pattern>"), vars, binding);
}

namespace {
AttrId node_attrs(const PatternNode& node, Subst subst) {
  if (node.attrs_id != kNoId) return node.attrs_id;
  AttrList list;
  for (const auto& a : node.attrs)
    list.emplace_back(a.key, a.var == kNoId ? a.value : subst[a.var]);
  return intern_attrs(std::move(list));
}
}  // namespace

EClassId Pattern::instantiate(EGraph& egraph, Subst subst) const {
  // Post-order, so each node's children are ready; small patterns keep this on the stack.
  uint32_t local[32];
  std::vector<uint32_t> heap;
  uint32_t* ids = local;
  if (nodes_.size() > 32) {
    heap.resize(nodes_.size());
    ids = heap.data();
  }
  EClassId kids_local[8];
  std::vector<EClassId> kids_heap;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const PatternNode& node = nodes_[i];
    if (node.is_var()) {
      ids[i] = subst[node.var];
      continue;
    }
    EClassId* kids = kids_local;
    if (node.children.size() > 8) {
      kids_heap.resize(node.children.size());
      kids = kids_heap.data();
    }
    for (size_t k = 0; k < node.children.size(); ++k) kids[k] = ids[node.children[k]];
    ids[i] = egraph.add(node.op, node_attrs(node, subst),
                        std::span<const EClassId>(kids, node.children.size()));
  }
  return ids[nodes_.size() - 1];
}

EClassId Pattern::lookup(const EGraph& egraph, Subst subst) const {
  std::vector<uint32_t> ids(nodes_.size());
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const PatternNode& node = nodes_[i];
    if (node.is_var()) {
      ids[i] = egraph.find(subst[node.var]);
      continue;
    }
    std::vector<EClassId> kids;
    for (uint32_t c : node.children) kids.push_back(ids[c]);
    ids[i] = egraph.lookup(node.op, node_attrs(node, subst), kids);
    if (ids[i] == kNoId) return kNoId;
  }
  return ids.back();
}

}  // namespace eqfuse::egraph
