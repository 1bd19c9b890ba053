#pragma once
// Terms written as s-expressions, the way tests, benchmarks and `eqfuse saturate --term` give
// the e-graph its input: `(* (+ a 2) b)`. A list is `(op [:key value]... child...)`: keyword
// pairs anywhere after the op form the node's attribute payload, the rest are children; an atom
// (symbol or number) is a leaf whose op is its text.
#include <string>

#include "egraph/egraph.h"
#include "support/sexpr.h"

namespace eqfuse::egraph {

// Adds the term and returns its class. Throws eqfuse::Error (file:line:col) on a pattern
// variable, a string leaf, or a keyword without a value.
EClassId add_term(EGraph& egraph, const Sexpr& term);
EClassId add_term(EGraph& egraph, std::string_view text);

// Splits a list's items after the op into attributes and children; shared by terms and
// patterns so both read `:key value` the same way. `attr_values` gets the value nodes.
struct NodeForm {
  Symbol op;
  std::vector<std::pair<Symbol, const Sexpr*>> attrs;
  std::vector<const Sexpr*> children;
};
NodeForm split_node_form(const Sexpr& list);

// A node written back as text: `(op :k v child...)` with children as `#id`.
std::string node_string(const EGraph& egraph, NodeId n);

}  // namespace eqfuse::egraph
