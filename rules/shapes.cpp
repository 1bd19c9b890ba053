#include "rules/shapes.h"

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>
#include <random>
#include <set>

#include "rules/attr_codec.h"
#include "rules/condition.h"

namespace eqfuse::rules {

namespace {

// What the conditions say about a class variable: its dtype, and whether it is a constant (and
// of which kind: "const", "scalar", "zero", "one", "nonzero", "value").
struct VarFacts {
  std::optional<ir::DType> dtype;
  std::string constant;
  double value = 0;
};

void scan(const Sexpr& e, std::map<std::string, VarFacts>& facts) {
  if (!e.is_list() || e.items.empty()) return;
  const Sexpr& head = e.items[0];
  if (head.kind == Sexpr::Kind::Symbol && e.items.size() >= 2 &&
      e.items[1].kind == Sexpr::Kind::Var) {
    const std::string& f = head.text;
    VarFacts& v = facts[e.items[1].text];
    if (f == "dtype" && e.items.size() == 3) v.dtype = ir::parse_dtype(e.items[2].text);
    if (f == "is-int") v.dtype = ir::DType::i64;
    if (f == "const" || f == "scalar" || f == "zero" || f == "one" || f == "nonzero")
      if (v.constant.empty() || v.constant == "const") v.constant = f;
    if (f == "value" && e.items.size() == 3) {
      v.constant = "value";
      v.value = e.items[2].number;
    }
  }
  if (head.is_symbol("not")) return;  // facts under a negation are not requirements
  for (const Sexpr& item : e.items) scan(item, facts);
}

class Sampler {
 public:
  Sampler(const Rule& rule, const ShapeChoice& choice)
      : rule_(rule), choice_(choice), rng_(choice.seed ^ std::hash<std::string>()(rule.name)) {
    for (const Condition& c : rule.conditions) scan(c.form, facts_);
  }

  int64_t pick(const std::vector<int64_t>& from) {
    return from[std::uniform_int_distribution<size_t>(0, from.size() - 1)(rng_)];
  }
  bool coin(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }

  RuleBinding candidate(size_t attempt) {
    RuleBinding b;
    std::vector<int64_t> base(static_cast<size_t>(choice_.max_rank));
    for (int64_t& d : base) d = pick(choice_.dims);
    std::vector<int64_t> ranks;
    for (int r = 0; r <= choice_.max_rank; ++r) ranks.push_back(r);
    int64_t shared_rank = attempt < 8 ? static_cast<int64_t>(attempt % 4) + 1 : pick(ranks);
    int mode = static_cast<int>(attempt % 3);
    for (const std::string& v : rule_.class_vars) {
      VarFacts& facts = facts_[v];
      int64_t rank = mode == 0 ? shared_rank : pick(ranks);
      if (facts.constant == "scalar") rank = coin(0.5) ? 0 : 1;
      std::vector<int64_t> dims;
      for (int64_t i = 0; i < rank; ++i) {
        int64_t d = base[static_cast<size_t>(choice_.max_rank - rank + i)];
        if (mode == 1 && coin(0.2)) d = 1;
        if (mode == 2 && coin(0.5)) d = pick(choice_.dims);
        if (facts.constant == "scalar") d = 1;
        dims.push_back(d);
      }
      ir::DType dtype = facts.dtype.value_or(ir::DType::f32);
      if (!facts.constant.empty()) {
        ir::Tensor t(dtype, dims);
        for (int64_t i = 0; i < t.numel(); ++i) {
          double x = facts.constant == "zero"    ? 0
                     : facts.constant == "one"   ? 1
                     : facts.constant == "value" ? facts.value
                                                 : static_cast<double>(pick({1, 2, 3, -1, -2}));
          t.set(i, x);
        }
        b.values[v] = std::move(t);
      } else {
        b.types[v] = {dtype, ir::Shape::from_dims(dims)};
      }
    }
    size_t first_rank = 2;
    if (!rule_.class_vars.empty()) {
      const std::string& v0 = rule_.class_vars[0];
      if (b.types.count(v0)) first_rank = b.types[v0].shape.rank();
    }
    for (const AttrVar& a : rule_.attr_vars) {
      switch (a.kind) {
        case ir::AttrKind::Int:
          b.attrs[a.name] = ir::AttrValue(pick({-1, 0, 1, 2, 3}));
          break;
        case ir::AttrKind::Float:
          b.attrs[a.name] = ir::AttrValue(static_cast<double>(pick({1, 2, 3})) / 2);
          break;
        case ir::AttrKind::Ints: {
          size_t len = coin(0.7) ? first_rank : static_cast<size_t>(pick({0, 1, 2, 3}));
          std::vector<int64_t> list(len);
          if (coin(0.6)) {
            std::iota(list.begin(), list.end(), 0);
            std::shuffle(list.begin(), list.end(), rng_);
          } else {
            for (int64_t& x : list) x = pick({-1, 0, 1, 2});
          }
          b.attrs[a.name] = ir::AttrValue(std::move(list));
          break;
        }
        case ir::AttrKind::Floats: {
          std::vector<double> list(first_rank);
          for (double& x : list) x = static_cast<double>(pick({1, 2, 3}));
          b.attrs[a.name] = ir::AttrValue(std::move(list));
          break;
        }
        default:
          b.attrs[a.name] = ir::AttrValue(std::string());
      }
    }
    return b;
  }

  bool acceptable(const RuleBinding& b) const {
    BindingView view(b);
    for (const Sexpr& t : rule_.lhs)
      if (!term_types(t, view)) return false;
    return holds_all(rule_.conditions, view);
  }

 private:
  const Rule& rule_;
  const ShapeChoice& choice_;
  std::mt19937_64 rng_;
  std::map<std::string, VarFacts> facts_;
};

std::string key(const RuleBinding& b) {
  std::string k;
  for (const auto& [name, t] : b.types) k += name + ":" + t.str() + ";";
  for (const auto& [name, t] : b.values) k += name + "=" + t.str(64) + ";";
  for (const auto& [name, a] : b.attrs) k += name + "=" + encode_attr(a) + ";";
  return k;
}

}  // namespace

std::vector<RuleBinding> representative_bindings(const Rule& rule, const ShapeChoice& choice) {
  Sampler sampler(rule, choice);
  std::vector<RuleBinding> out;
  std::set<std::string> seen;
  for (size_t attempt = 0; attempt < choice.max_tries && out.size() < choice.wanted; ++attempt) {
    RuleBinding b = sampler.candidate(attempt);
    if (!sampler.acceptable(b)) continue;
    if (!seen.insert(key(b)).second) continue;
    out.push_back(std::move(b));
  }
  return out;
}

}  // namespace eqfuse::rules
