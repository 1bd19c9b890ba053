#pragma once
// Conditions (`:when`) and computed attributes of tensor rules: a small expression language
// over the types, constant values and attributes a match binds. The optimizer evaluates it at
// match time against the tensor analysis, the checker and the prover against concrete bindings;
// both go through `MatchView`, so a condition means the same thing everywhere.
//
// Expressions (T is a class variable `?x` or a term over variables, typed by shape inference):
//   booleans  (and C...) (or C...) (not C) (= A B) (!= A B) (< A B) (<= A B) (> A B) (>= A B)
//             (rank T N) (dim-value T I N) (same-shape T U) (broadcastable T U...) (dtype T f32)
//             (same-dtype T U) (is-float T) (is-int T)
//             (distinct ?a ?b): bound to different e-classes (keeps a multi-pattern from
//             pairing a node with itself)
//             (const ?c) (scalar ?c) (zero ?c) (one ?c) (nonzero ?c) (value ?c NUMBER)
//   integers  N  ?attr  (dim T I) (rank T) (numel T) (+ A B...) (- A B) (- A) (* A B...)
//             (/ A B) (% A B) (min A B...) (max A B...) (len L) (nth L I)
//   lists     ?attr  (shape T)  (list A...)  ((dim ?w 0) 2): a list of expressions
// Dims may be symbolic (`batch`): two symbolic dims are equal when they have the same name.
// Anything that cannot be decided (an unknown type, an unnamed dynamic dim, arithmetic on a
// symbolic dim, a type that fails inference) is *unknown*, and a condition that is unknown does
// not hold: a rule never fires on a guess.
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/attribute.h"
#include "ir/op_table.h"
#include "rules/rule.h"
#include "support/sexpr.h"

namespace eqfuse::rules {

// What a condition sees of one match.
class MatchView {
 public:
  virtual ~MatchView() = default;
  virtual const ir::TensorType* type(std::string_view var) const = 0;  // nullptr: unknown
  virtual const ir::Tensor* value(std::string_view var) const = 0;     // nullptr: not constant
  virtual const ir::AttrValue* attr(std::string_view var) const = 0;   // nullptr: unbound
  // Whether two class variables are bound to the same e-class (nullopt: cannot tell). Bindings
  // give each variable its own tensor, so there distinct names are distinct tensors.
  virtual std::optional<bool> same_class(std::string_view a, std::string_view b) const {
    return a == b;
  }
};

// A view of concrete bindings (checker, prover, tests).
class BindingView : public MatchView {
 public:
  explicit BindingView(const RuleBinding& binding);
  const ir::TensorType* type(std::string_view var) const override;
  const ir::Tensor* value(std::string_view var) const override;
  const ir::AttrValue* attr(std::string_view var) const override;

 private:
  const RuleBinding& binding_;
  std::map<std::string, ir::TensorType> types_;  // given types, and those of given values
};

struct ExprValue {
  enum class Kind { Unknown, Bool, Int, Float, Ints, Symbol } kind = Kind::Unknown;
  bool boolean = false;
  int64_t integer = 0;
  double number = 0;
  std::vector<ExprValue> items;  // Ints
  std::string symbol;            // a dtype name or a symbolic dim
  bool known() const { return kind != Kind::Unknown; }
};

ExprValue evaluate(const Sexpr& expr, const MatchView& view);
// Whether a condition holds: known and true.
bool holds(const Condition& condition, const MatchView& view);
bool holds_all(const std::vector<Condition>& conditions, const MatchView& view);
// A computed attribute's value as `kind`; nullopt when unknown or of another kind.
std::optional<ir::AttrValue> evaluate_attr(const Sexpr& expr, ir::AttrKind kind,
                                           const MatchView& view);

// The output types of a term over class variables (one type, or several for a tuple-valued op);
// nullopt when a variable's type is unknown or inference fails. Never throws on bad shapes.
std::optional<std::vector<ir::TensorType>> term_types(const Sexpr& term, const MatchView& view);
// A term's attributes evaluated under `view` (literals, attribute variables, computed values);
// nullopt when one cannot be evaluated.
std::optional<ir::Attributes> term_attributes(const Sexpr& term, const ir::OpDef& def,
                                              const MatchView& view);

// Static checks of an expression, throwing sexpr_error at the offending token: a known function
// with the right number of arguments, variables bound on the left-hand side and used as the
// right kind (class vs attribute). `boolean` says whether a condition (vs a value) is expected.
struct VarScope {
  std::vector<std::string> class_vars;
  std::vector<std::string> attr_vars;
  bool is_class(std::string_view v) const;
  bool is_attr(std::string_view v) const;
};
void check_expr(const Sexpr& expr, const VarScope& scope, bool boolean);

}  // namespace eqfuse::rules
