#pragma once
// A rewrite rule: a searcher (one pattern, or several matched jointly), optional conditions,
// and an applier (a right-hand-side pattern, several for a multi-pattern, or C++). This is the
// unit the runner schedules; `rules/` builds these from its richer rule language.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "egraph/ematch.h"
#include "egraph/pattern.h"

namespace eqfuse::egraph {

// Decides whether a match may be applied; reads the e-graph (e.g. analysis data) and the
// substitution (class variables and attribute values).
using Condition = std::function<bool(const EGraph& egraph, EClassId root, Subst subst)>;

class Applier {
 public:
  virtual ~Applier() = default;
  // Applies one match: adds terms, merges classes. `subst` has one entry per rule variable
  // (kNoId for variables the left-hand side does not bind).
  virtual void apply(EGraph& egraph, EClassId root, Subst subst) const = 0;
  // Optional: touch what apply(subst) will read first (see EGraph::prefetch).
  virtual void prefetch(const EGraph& /*egraph*/, Subst /*subst*/) const {}
};

// Adds the right-hand side and merges it with the matched root.
class PatternApplier : public Applier {
 public:
  explicit PatternApplier(Pattern rhs) : rhs_(std::move(rhs)) {}
  void apply(EGraph& egraph, EClassId root, Subst subst) const override;
  void prefetch(const EGraph& egraph, Subst subst) const override;
  const Pattern& rhs() const { return rhs_; }

 private:
  Pattern rhs_;
};

// The right-hand side of a multi-pattern rule: `?v = pattern` assignments in order. When ?v is
// already bound (by the left-hand side or an earlier assignment) the pattern's class is merged
// with it; otherwise ?v is bound to it, so later patterns can use it (the second output of a
// fused kernel refers to the kernel built by the first).
class MultiPatternApplier : public Applier {
 public:
  MultiPatternApplier(std::vector<uint32_t> vars, std::vector<Pattern> patterns, size_t num_vars)
      : vars_(std::move(vars)), patterns_(std::move(patterns)), num_vars_(num_vars) {}
  void apply(EGraph& egraph, EClassId root, Subst subst) const override;

 private:
  std::vector<uint32_t> vars_;
  std::vector<Pattern> patterns_;
  size_t num_vars_;
};

// An applier written in C++.
class FunctionApplier : public Applier {
 public:
  using Function = std::function<void(EGraph&, EClassId root, Subst subst)>;
  explicit FunctionApplier(Function f) : f_(std::move(f)) {}
  void apply(EGraph& egraph, EClassId root, Subst subst) const override { f_(egraph, root, subst); }

 private:
  Function f_;
};

struct Rewrite {
  std::string name;
  VarTable vars;
  std::vector<Pattern> lhs;     // one pattern, or several (multi-pattern)
  std::vector<uint32_t> roots;  // per lhs pattern, the class variable its root binds, or kNoId
  std::shared_ptr<const Query> query;
  std::vector<Condition> conditions;
  std::shared_ptr<const Applier> applier;
  SourceLocation where;
  // Re-applying a match that was applied changes nothing: the applier's result is a function of
  // the match and of facts about its e-classes that only grow (true for pattern instantiation;
  // a C++ applier that may decline a match until some fact is known must leave it false). The
  // runner then applies each match once per run instead of on every iteration that finds it.
  bool idempotent = false;

  Matches search(const EGraph& egraph, int threads = 1, size_t max_matches = SIZE_MAX,
                 Query::Deadline deadline = Query::Deadline::max()) const {
    return query->search(egraph, threads, max_matches, deadline);
  }
  // Applies one match if every condition holds; returns whether it was applied.
  bool apply(EGraph& egraph, EClassId root, Subst subst) const;

  // `lhs` => `rhs`, both patterns (s-expressions or text).
  static Rewrite make(std::string name, const Sexpr& lhs, const Sexpr& rhs);
  static Rewrite make(std::string name, std::string_view lhs, std::string_view rhs);
  // `lhs` => C++ applier (e.g. constant folding of a matched node).
  static Rewrite make(std::string name, std::string_view lhs, FunctionApplier::Function apply);
  // Multi-pattern: lhs and rhs are lists of (variable name, pattern), e.g.
  // {{"x", "(MatMul ?a ?b)"}, {"y", "(MatMul ?a ?c)"}} => {{"z", "(MatMul ?a (Concat ?b ?c))"},
  // {"x", "(Slice0 ?z)"}, {"y", "(Slice1 ?z)"}}.
  static Rewrite make_multi(std::string name, const std::vector<std::pair<std::string, Sexpr>>& lhs,
                            const std::vector<std::pair<std::string, Sexpr>>& rhs);
  static Rewrite make_multi(std::string name,
                            const std::vector<std::pair<std::string, std::string>>& lhs,
                            const std::vector<std::pair<std::string, std::string>>& rhs);
};

}  // namespace eqfuse::egraph
