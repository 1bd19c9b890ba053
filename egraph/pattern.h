#pragma once
// Patterns: terms with variables, written as s-expressions (`(* ?a (+ ?b ?c))`). A pattern is
// the left-hand side of a rewrite (compiled into an e-matching program, see ematch.h) or its
// right-hand side (instantiated under a substitution to add new terms).
//
// Attributes: a pattern node may carry `:key value` pairs like a term. A literal value must
// equal the node's; a variable value (`:perm ?p`) binds that attribute's value, which the
// right-hand side or a condition can read. A pattern node matches only e-nodes whose payload
// has exactly the keys it lists (no keys: only e-nodes without attributes).
//
// Variables are numbered per rule (a VarTable shared by its patterns and conditions), so a
// substitution is a flat array: entry i is the e-class (class variable) or the interned value
// Symbol (attribute variable) bound to variable i.
#include <span>
#include <string>
#include <vector>

#include "egraph/egraph.h"
#include "support/sexpr.h"

namespace eqfuse::egraph {

using Subst = std::span<const uint32_t>;

class VarTable {
 public:
  enum class Kind { Class, Attr };
  // The index of `name`, adding it with `kind` when new; throws (at `where`) when the same name
  // is used both as a class and as an attribute variable.
  uint32_t get_or_add(const Sexpr& where, Kind kind);
  // The index of `name` or kNoId.
  uint32_t find(std::string_view name) const;
  size_t size() const { return names_.size(); }
  const std::string& name(uint32_t var) const { return names_[var]; }
  Kind kind(uint32_t var) const { return kinds_[var]; }

 private:
  std::vector<std::string> names_;
  std::vector<Kind> kinds_;
};

struct PatternNode {
  struct Attr {
    Symbol key;
    Symbol value;  // literal value, when var == kNoId
    uint32_t var = kNoId;
  };
  uint32_t var = kNoId;  // a variable leaf when != kNoId
  Symbol op = 0;
  // All-literal attributes are pre-interned into `attrs_id`; with variables, `attrs` is set and
  // attrs_id is kNoId.
  AttrId attrs_id = kNoAttrs;
  std::vector<Attr> attrs;
  std::vector<uint32_t> children;  // indices into Pattern::nodes
  bool is_var() const { return var != kNoId; }
};

class Pattern {
 public:
  // Reads a pattern. On a left-hand side (`binding`) new variables are added to `vars`; on a
  // right-hand side every variable must already be bound (error at its location otherwise).
  static Pattern parse(const Sexpr& form, VarTable& vars, bool binding);
  static Pattern parse(std::string_view text, VarTable& vars, bool binding);

  // Nodes in post-order: children before parents; the root is last.
  const std::vector<PatternNode>& nodes() const { return nodes_; }
  const PatternNode& root() const { return nodes_.back(); }
  const std::string& text() const { return text_; }
  const SourceLocation& where() const { return where_; }

  // Adds the pattern's term under `subst` and returns its class.
  EClassId instantiate(EGraph& egraph, Subst subst) const;
  // The class of the pattern's term under `subst` if it is already in the e-graph, else kNoId.
  EClassId lookup(const EGraph& egraph, Subst subst) const;

 private:
  uint32_t read(const Sexpr& form, VarTable& vars, bool binding);
  std::vector<PatternNode> nodes_;
  std::string text_;
  SourceLocation where_;
};

}  // namespace eqfuse::egraph
