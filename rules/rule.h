#pragma once
// The parsed form of a tensor rule: what the parser (rules/parser.h) produces, the checker
// (rules/checker.h) validates, the prover (rules/prove/) proves and the optimizer compiles into
// e-graph rewrites. It is plain data so that every consumer reads the same thing.
//
// Terms. Both sides are s-expressions over op-table names (ONNX names), normalized by the
// parser so that two spellings of one rule are one rule:
//  - a class variable `?x` is a leaf standing for any tensor;
//  - `(Op :attr value ... child...)`: every attribute of the op's schema that has a default and
//    is not written is filled in with that default, and every written literal value is rewritten
//    in its canonical spelling (`encode_attr`, ir/attr_text.h), which is exactly the text the
//    tensor e-graph interns for that attribute; `:attr ?p` is an attribute variable;
//  - on the right-hand side an attribute may be computed from the matched shapes and attributes:
//    `:split ((dim ?w1 -1) (dim ?w2 -1))`, `:axis (+ ?a 1)` (see rules/condition.h for the
//    expression language); `Rule::computed_attrs` lists where;
//  - multi-output ops are tuples projected by `(Proj :index k T)` (see egraph/egraph.h).
//
// The contract with the prover: `instantiate_rule` turns a rule at concrete types into an
// ir::Graph whose inputs are the rule's class variables (in `Rule::class_vars` order) and whose
// outputs are the LHS roots followed by the RHS results, so that output k must equal output
// k + lhs.size() for every k < lhs.size(), for all input values, whenever the conditions hold.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/attribute.h"
#include "ir/graph.h"
#include "ir/shape.h"
#include "rules/fusion_kinds.h"
#include "support/sexpr.h"

namespace eqfuse::rules {

// A condition under `:when`, e.g. `(rank ?x 2)`; evaluated by rules/condition.h.
struct Condition {
  Sexpr form;
  std::string text;  // form.str()
};

// An attribute variable and the kind of value it holds (from the schema where it is bound).
struct AttrVar {
  std::string name;  // without '?'
  ir::AttrKind kind;
};

struct Rule {
  std::string name;
  SourceLocation where;
  std::string group = "default";  // `:group G`, or the enclosing (group G ...) block
  // Matched roots (one, or several for a multi-pattern rule) and their replacements: root i is
  // replaced by (merged with) result i. Normalized terms (see the file comment).
  std::vector<Sexpr> lhs;
  std::vector<Sexpr> rhs;
  std::vector<Condition> conditions;
  // Variables in order of first occurrence on the left-hand side.
  std::vector<std::string> class_vars;  // without '?'
  std::vector<AttrVar> attr_vars;
  // Normalized source: `(rewrite NAME LHS RHS :when C...)` with every term normalized and the
  // group omitted. Two rules with the same text are the same rule (the proof cache keys on it).
  std::string text;
  // Set on both directions of a `birewrite`; the reverse direction is named NAME-rev.
  bool from_birewrite = false;
  std::string file;  // the file the rule came from ("" for text)
};

struct RuleSet {
  std::vector<Rule> rules;
  // Non-fatal notes from the checker (e.g. no representative shape satisfied a rule's
  // conditions, so its right-hand side could not be type-checked).
  std::vector<std::string> warnings;
  // The kernel kinds and op roles the files declare (rules/fusion_kinds.h).
  FusionKinds fusion;

  const Rule* find(std::string_view name) const;
  // Rules of the enabled groups: all groups when `enabled` is empty, minus `disabled`.
  RuleSet select(const std::vector<std::string>& enabled,
                 const std::vector<std::string>& disabled = {}) const;
  std::vector<std::string> groups() const;  // distinct, in order of first appearance
};

// Concrete bindings for a rule: a type per class variable, a value per attribute variable, and
// optionally a constant value for class variables that conditions require to be constants
// (`(const ?c)`, `(nonzero ?c)`).
struct RuleBinding {
  std::map<std::string, ir::TensorType> types;
  std::map<std::string, ir::AttrValue> attrs;
  std::map<std::string, ir::Tensor> values;
};

// The graph of a rule at concrete types (see the file comment for the output order). Class
// variables with an entry in `binding.values` become weights holding that value, the others
// graph inputs named after the variable (without '?'), in class_vars order. Computed attributes
// are evaluated against the binding. Throws Error when a side fails shape inference (naming the
// rule and the node) or when a binding is missing.
ir::Graph instantiate_rule(const Rule& rule, const RuleBinding& binding);
// Convenience form for the prover's first draft.
ir::Graph instantiate_rule(const Rule& rule, const std::map<std::string, ir::TensorType>& var_types,
                           const std::map<std::string, ir::AttrValue>& attr_values);

}  // namespace eqfuse::rules
