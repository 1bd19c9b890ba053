#include "egraph/rewrite.h"

namespace eqfuse::egraph {

void PatternApplier::apply(EGraph& egraph, EClassId root, Subst subst) const {
  egraph.merge(root, rhs_.instantiate(egraph, subst));
}

void PatternApplier::prefetch(const EGraph& egraph, Subst subst) const {
  // The first node built is the first one in post-order with only variable children.
  for (const PatternNode& node : rhs_.nodes()) {
    if (node.is_var() || node.attrs_id == kNoId || node.children.size() > 4) continue;
    EClassId kids[4];
    bool ground = true;
    for (size_t k = 0; k < node.children.size() && ground; ++k) {
      const PatternNode& child = rhs_.nodes()[node.children[k]];
      ground = child.is_var();
      if (ground) kids[k] = subst[child.var];
    }
    if (!ground) continue;
    egraph.prefetch(node.op, node.attrs_id, std::span<const EClassId>(kids, node.children.size()));
    return;
  }
}

void MultiPatternApplier::apply(EGraph& egraph, EClassId, Subst subst) const {
  uint32_t local[32];
  std::vector<uint32_t> heap;
  uint32_t* values = local;
  if (num_vars_ > 32) {
    heap.resize(num_vars_);
    values = heap.data();
  }
  std::copy(subst.begin(), subst.end(), values);
  Subst full(values, num_vars_);
  for (size_t i = 0; i < patterns_.size(); ++i) {
    EClassId c = patterns_[i].instantiate(egraph, full);
    if (values[vars_[i]] == kNoId) {
      values[vars_[i]] = c;
    } else {
      egraph.merge(values[vars_[i]], c);
    }
  }
}

bool Rewrite::apply(EGraph& egraph, EClassId root, Subst subst) const {
  for (const Condition& cond : conditions)
    if (!cond(egraph, root, subst)) return false;
  applier->apply(egraph, root, subst);
  return true;
}

Rewrite Rewrite::make(std::string name, const Sexpr& lhs, const Sexpr& rhs) {
  Rewrite rw;
  rw.name = std::move(name);
  rw.where = lhs.where;
  rw.lhs.push_back(Pattern::parse(lhs, rw.vars, true));
  rw.roots.push_back(kNoId);
  Pattern right = Pattern::parse(rhs, rw.vars, false);
  rw.query = std::make_shared<Query>(rw.lhs[0], rw.vars.size());
  rw.applier = std::make_shared<PatternApplier>(std::move(right));
  return rw;
}

Rewrite Rewrite::make(std::string name, std::string_view lhs, std::string_view rhs) {
  return make(std::move(name), parse_sexpr(lhs, "<lhs>"), parse_sexpr(rhs, "<rhs>"));
}

Rewrite Rewrite::make(std::string name, std::string_view lhs, FunctionApplier::Function apply) {
  Rewrite rw;
  rw.name = std::move(name);
  Sexpr form = parse_sexpr(lhs, "<lhs>");
  rw.where = form.where;
  rw.lhs.push_back(Pattern::parse(form, rw.vars, true));
  rw.roots.push_back(kNoId);
  rw.query = std::make_shared<Query>(rw.lhs[0], rw.vars.size());
  rw.applier = std::make_shared<FunctionApplier>(std::move(apply));
  return rw;
}

namespace {
Sexpr var_form(const std::string& name, const Sexpr& near) {
  Sexpr v;
  v.kind = Sexpr::Kind::Var;
  v.text = name;
  v.where = near.where;
  v.source = near.source;
  return v;
}
}  // namespace

Rewrite Rewrite::make_multi(std::string name, const std::vector<std::pair<std::string, Sexpr>>& lhs,
                            const std::vector<std::pair<std::string, Sexpr>>& rhs) {
  Rewrite rw;
  rw.name = std::move(name);
  if (lhs.empty()) fail("multi-pattern rule '" + rw.name + "' has no left-hand side");
  rw.where = lhs[0].second.where;
  for (const auto& [var, form] : lhs) {
    rw.roots.push_back(rw.vars.get_or_add(var_form(var, form), VarTable::Kind::Class));
    rw.lhs.push_back(Pattern::parse(form, rw.vars, true));
  }
  std::vector<uint32_t> vars;
  std::vector<Pattern> patterns;
  for (const auto& [var, form] : rhs) {
    patterns.push_back(Pattern::parse(form, rw.vars, false));
    vars.push_back(rw.vars.get_or_add(var_form(var, form), VarTable::Kind::Class));
  }
  std::vector<const Pattern*> ptrs;
  for (const Pattern& p : rw.lhs) ptrs.push_back(&p);
  rw.query = std::make_shared<Query>(ptrs, rw.roots, rw.vars.size());
  rw.applier =
      std::make_shared<MultiPatternApplier>(std::move(vars), std::move(patterns), rw.vars.size());
  return rw;
}

Rewrite Rewrite::make_multi(std::string name,
                            const std::vector<std::pair<std::string, std::string>>& lhs,
                            const std::vector<std::pair<std::string, std::string>>& rhs) {
  std::vector<std::pair<std::string, Sexpr>> l, r;
  for (const auto& [v, text] : lhs) l.emplace_back(v, parse_sexpr(text, "<lhs>"));
  for (const auto& [v, text] : rhs) r.emplace_back(v, parse_sexpr(text, "<rhs>"));
  return make_multi(std::move(name), l, r);
}

}  // namespace eqfuse::egraph
