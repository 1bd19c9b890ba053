#include "optimizer/rule_rewrites.h"

#include <memory>
#include <unordered_map>

#include "egraph/symbol.h"
#include "ir/attr_text.h"
#include "optimizer/tensor_analysis.h"
#include "rules/condition.h"

namespace eqfuse::optimizer {

using egraph::EClassId;
using egraph::kNoId;
using egraph::Subst;

namespace {

// A rule compiled once: its variables' slots and the right-hand side's computed attributes.
struct Compiled {
  rules::Rule rule;
  std::unordered_map<std::string, uint32_t> slot;  // variable name -> substitution index
  std::unordered_map<std::string, ir::AttrKind> attr_kind;
  std::vector<uint32_t> roots;  // per lhs term: the class variable of its root (multi), or kNoId
  struct ComputedAttr {
    uint32_t slot;
    const Sexpr* expr;  // into rule.rhs
    ir::AttrKind kind;
  };
  std::vector<ComputedAttr> computed;
  std::vector<std::unique_ptr<Sexpr>> exprs;  // the computed attributes' expressions
};

// The match as a MatchView over the tensor analysis.
class AnalysisView : public rules::MatchView {
 public:
  AnalysisView(const Compiled& c, const egraph::EGraph& eg, const TensorAnalysis& a, Subst s)
      : c_(c), eg_(eg), a_(a), s_(s) {}
  const ir::TensorType* type(std::string_view var) const override {
    const TensorData* d = class_data(var);
    return d ? d->type() : nullptr;
  }
  const ir::Tensor* value(std::string_view var) const override {
    const TensorData* d = class_data(var);
    return d ? d->value.get() : nullptr;
  }
  std::optional<bool> same_class(std::string_view a, std::string_view b) const override {
    auto x = c_.slot.find(std::string(a)), y = c_.slot.find(std::string(b));
    if (x == c_.slot.end() || y == c_.slot.end() || s_[x->second] == kNoId ||
        s_[y->second] == kNoId)
      return std::nullopt;
    return eg_.find(s_[x->second]) == eg_.find(s_[y->second]);
  }
  const ir::AttrValue* attr(std::string_view var) const override {
    std::string key(var);
    auto cached = attrs_.find(key);
    if (cached != attrs_.end()) return cached->second ? &*cached->second : nullptr;
    std::optional<ir::AttrValue> v;
    auto it = c_.slot.find(key);
    auto kind = c_.attr_kind.find(key);
    if (it != c_.slot.end() && kind != c_.attr_kind.end() && s_[it->second] != kNoId)
      v = ir::decode_attr(egraph::symbol_name(s_[it->second]), kind->second);
    auto& slot = attrs_[key] = std::move(v);
    return slot ? &*slot : nullptr;
  }

 private:
  const TensorData* class_data(std::string_view var) const {
    auto it = c_.slot.find(std::string(var));
    if (it == c_.slot.end() || s_[it->second] == kNoId) return nullptr;
    return &a_.data(eg_.find(s_[it->second]));
  }
  const Compiled& c_;
  const egraph::EGraph& eg_;
  const TensorAnalysis& a_;
  Subst s_;
  mutable std::unordered_map<std::string, std::optional<ir::AttrValue>> attrs_;
};

const TensorAnalysis* tensor_analysis(const egraph::EGraph& eg) {
  return dynamic_cast<const TensorAnalysis*>(eg.analysis());
}

EClassId root_of(const Compiled& c, size_t i, EClassId root, Subst subst) {
  return c.roots[i] == kNoId ? root : subst[c.roots[i]];
}

bool applicable(const Compiled& c, const egraph::EGraph& eg, EClassId root, Subst subst) {
  const TensorAnalysis* analysis = tensor_analysis(eg);
  if (!analysis) return false;
  AnalysisView view(c, eg, *analysis, subst);
  if (!rules::holds_all(c.rule.conditions, view)) return false;
  for (size_t i = 0; i < c.rule.rhs.size(); ++i) {
    const ir::TensorType* want = analysis->data(eg.find(root_of(c, i, root, subst))).type();
    auto got = rules::term_types(c.rule.rhs[i], view);
    if (!want || !got || got->size() != 1 || (*got)[0] != *want) return false;
  }
  return true;
}

class TensorApplier : public egraph::Applier {
 public:
  TensorApplier(std::shared_ptr<const Compiled> c, std::vector<egraph::Pattern> rhs,
                size_t num_vars)
      : c_(std::move(c)), rhs_(std::move(rhs)), num_vars_(num_vars) {}

  void apply(egraph::EGraph& eg, EClassId root, Subst subst) const override {
    std::vector<uint32_t> values(subst.begin(), subst.end());
    values.resize(num_vars_, kNoId);
    if (!c_->computed.empty()) {
      const TensorAnalysis* analysis = tensor_analysis(eg);
      if (!analysis) return;
      AnalysisView view(*c_, eg, *analysis, subst);
      for (const Compiled::ComputedAttr& a : c_->computed) {
        auto v = rules::evaluate_attr(*a.expr, a.kind, view);
        if (!v) return;  // checked by the condition; cannot happen unless the e-graph changed
        values[a.slot] = egraph::intern(ir::encode_attr(*v));
      }
    }
    Subst full(values.data(), values.size());
    std::vector<EClassId> results;
    for (const egraph::Pattern& p : rhs_) results.push_back(p.instantiate(eg, full));
    for (size_t i = 0; i < results.size(); ++i) eg.merge(root_of(*c_, i, root, full), results[i]);
  }

 private:
  std::shared_ptr<const Compiled> c_;
  std::vector<egraph::Pattern> rhs_;
  size_t num_vars_;
};

Sexpr var_node(const std::string& name, const Sexpr& near) {
  Sexpr v;
  v.kind = Sexpr::Kind::Var;
  v.text = name;
  v.where = near.where;
  v.source = near.source;
  return v;
}

// Replaces computed attribute values in `term` by fresh attribute variables.
void lift_computed(Sexpr& term, Compiled& c) {
  if (!term.is_list() || term.items.empty()) return;
  const ir::OpDef* def = ir::find_op(term.items[0].text);
  for (size_t i = 1; i < term.items.size(); ++i) {
    Sexpr& item = term.items[i];
    if (item.kind == Sexpr::Kind::Keyword && i + 1 < term.items.size()) {
      Sexpr& value = term.items[i + 1];
      const ir::AttrSpec* spec = def ? def->find_attr(item.text) : nullptr;
      if (spec && value.kind != Sexpr::Kind::Var && !ir::read_attr_literal(value, spec->kind)) {
        c.exprs.push_back(std::make_unique<Sexpr>(value));
        std::string name = "__computed" + std::to_string(c.computed.size());
        c.computed.push_back({0, c.exprs.back().get(), spec->kind});
        value = var_node(name, value);
      }
      ++i;
      continue;
    }
    lift_computed(item, c);
  }
}

}  // namespace

egraph::Rewrite compile_rule(const rules::Rule& rule) {
  auto c = std::make_shared<Compiled>();
  c->rule = rule;
  egraph::Rewrite rw;
  rw.name = rule.name;
  rw.where = rule.where;
  bool multi = rule.lhs.size() > 1;
  for (size_t i = 0; i < rule.lhs.size(); ++i) {
    if (multi) {
      rw.roots.push_back(rw.vars.get_or_add(var_node("__root" + std::to_string(i), rule.lhs[i]),
                                            egraph::VarTable::Kind::Class));
    } else {
      rw.roots.push_back(kNoId);
    }
    rw.lhs.push_back(egraph::Pattern::parse(rule.lhs[i], rw.vars, true));
  }
  c->roots = rw.roots;
  // Computed attributes become attribute variables bound by the applier.
  std::vector<Sexpr> rhs = rule.rhs;
  for (Sexpr& t : rhs) lift_computed(t, *c);
  for (size_t i = 0; i < c->computed.size(); ++i)
    c->computed[i].slot = rw.vars.get_or_add(
        var_node("__computed" + std::to_string(i), rule.rhs[0]), egraph::VarTable::Kind::Attr);
  std::vector<egraph::Pattern> patterns;
  for (const Sexpr& t : rhs) patterns.push_back(egraph::Pattern::parse(t, rw.vars, false));
  for (size_t v = 0; v < rw.vars.size(); ++v)
    c->slot[rw.vars.name(static_cast<uint32_t>(v))] = static_cast<uint32_t>(v);
  for (const rules::AttrVar& a : rule.attr_vars) c->attr_kind[a.name] = a.kind;
  std::vector<const egraph::Pattern*> ptrs;
  for (const egraph::Pattern& p : rw.lhs) ptrs.push_back(&p);
  rw.query = multi ? std::make_shared<egraph::Query>(ptrs, rw.roots, rw.vars.size())
                   : std::make_shared<egraph::Query>(rw.lhs[0], rw.vars.size());
  std::shared_ptr<const Compiled> cc = c;
  rw.conditions.push_back([cc](const egraph::EGraph& eg, EClassId root, Subst subst) {
    if (!applicable(*cc, eg, root, subst)) return false;
    // Computed attributes must evaluate too.
    if (cc->computed.empty()) return true;
    const TensorAnalysis* analysis = tensor_analysis(eg);
    AnalysisView view(*cc, eg, *analysis, subst);
    for (const Compiled::ComputedAttr& a : cc->computed)
      if (!rules::evaluate_attr(*a.expr, a.kind, view)) return false;
    return true;
  });
  rw.applier = std::make_shared<TensorApplier>(cc, std::move(patterns), rw.vars.size());
  // Its conditions and computed attributes read types and values, which merges never change.
  rw.idempotent = true;
  return rw;
}

std::vector<egraph::Rewrite> compile_rules(const rules::RuleSet& rules) {
  std::vector<egraph::Rewrite> out;
  out.reserve(rules.rules.size());
  for (const rules::Rule& r : rules.rules) out.push_back(compile_rule(r));
  return out;
}

}  // namespace eqfuse::optimizer
