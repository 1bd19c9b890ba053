#include "egraph/term.h"

namespace eqfuse::egraph {

NodeForm split_node_form(const Sexpr& list) {
  NodeForm form;
  if (list.items.empty()) throw sexpr_error(list, "empty list: expected (op child...)");
  const Sexpr& head = list.items[0];
  if (head.kind != Sexpr::Kind::Symbol && head.kind != Sexpr::Kind::Integer &&
      head.kind != Sexpr::Kind::Float)
    throw sexpr_error(head, "expected an operator name, found '" + head.str() + "'");
  form.op = intern(head.text);
  for (size_t i = 1; i < list.items.size(); ++i) {
    const Sexpr& item = list.items[i];
    if (item.kind == Sexpr::Kind::Keyword) {
      if (i + 1 >= list.items.size())
        throw sexpr_error(item, "attribute ':" + item.text + "' has no value");
      form.attrs.emplace_back(intern(item.text), &list.items[i + 1]);
      ++i;
    } else {
      form.children.push_back(&item);
    }
  }
  return form;
}

EClassId add_term(EGraph& egraph, const Sexpr& term) {
  switch (term.kind) {
    case Sexpr::Kind::Symbol:
    case Sexpr::Kind::Integer:
    case Sexpr::Kind::Float:
      return egraph.add(intern(term.text));
    case Sexpr::Kind::Var:
      throw sexpr_error(term, "pattern variable '?" + term.text + "' in a term");
    case Sexpr::Kind::Keyword:
      throw sexpr_error(term, "keyword ':" + term.text + "' outside a node");
    case Sexpr::Kind::String:
      throw sexpr_error(term, "a string is not a term");
    case Sexpr::Kind::List:
      break;
  }
  NodeForm form = split_node_form(term);
  AttrList attrs;
  for (auto& [key, value] : form.attrs) {
    if (value->kind == Sexpr::Kind::Var)
      throw sexpr_error(*value, "pattern variable '?" + value->text + "' in a term");
    attrs.emplace_back(key, intern(value->str()));
  }
  AttrId attr_id;
  try {
    attr_id = intern_attrs(std::move(attrs));
  } catch (const Error& e) {
    throw sexpr_error(term, e.what());
  }
  std::vector<EClassId> children;
  children.reserve(form.children.size());
  for (const Sexpr* child : form.children) children.push_back(add_term(egraph, *child));
  return egraph.add(form.op, attr_id, children);
}

EClassId add_term(EGraph& egraph, std::string_view text) {
  return add_term(egraph, parse_sexpr(text, "<term>"));
}

std::string node_string(const EGraph& egraph, NodeId n) {
  auto children = egraph.children(n);
  std::string attrs = attrs_string(egraph.attrs(n));
  if (children.empty() && attrs.empty()) return std::string(symbol_name(egraph.op(n)));
  std::string out = "(" + std::string(symbol_name(egraph.op(n)));
  if (!attrs.empty()) out += " " + attrs;
  for (EClassId c : children) out += " #" + std::to_string(c);
  return out + ")";
}

}  // namespace eqfuse::egraph
