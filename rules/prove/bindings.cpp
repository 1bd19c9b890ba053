#include "rules/prove/bindings.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <random>
#include <set>

#include "rules/attr_codec.h"
#include "rules/checker.h"
#include "rules/condition.h"

namespace eqfuse::rules::prove {

namespace {

struct Facts {
  std::map<std::string, int64_t> rank;
  std::map<std::string, std::string> same;  // variable -> the representative of its group
  std::map<std::string, std::string> constant;
  std::map<std::string, double> value;
  std::map<std::string, ir::DType> dtype;
};

std::string root(Facts& f, const std::string& v) {
  auto it = f.same.find(v);
  return it == f.same.end() || it->second == v ? v : root(f, it->second);
}

void scan(const Sexpr& e, Facts& f) {
  if (!e.is_list() || e.items.empty() || e.items[0].kind != Sexpr::Kind::Symbol) return;
  const std::string& head = e.items[0].text;
  if (head == "not" || head == "or") return;
  auto var = [&](size_t i) {
    return i < e.items.size() && e.items[i].kind == Sexpr::Kind::Var ? e.items[i].text
                                                                     : std::string();
  };
  if (head == "rank" && !var(1).empty() && e.items.size() == 3 &&
      e.items[2].kind == Sexpr::Kind::Integer)
    f.rank[var(1)] = e.items[2].integer;
  if (head == "same-shape" && !var(1).empty() && !var(2).empty()) {
    std::string a = root(f, var(1)), b = root(f, var(2));
    if (a != b) f.same[b] = a;
  }
  if (head == "dtype" && !var(1).empty() && e.items.size() == 3)
    if (auto d = ir::parse_dtype(e.items[2].text)) f.dtype[var(1)] = *d;
  if ((head == "const" || head == "scalar" || head == "zero" || head == "one" ||
       head == "nonzero" || head == "value") &&
      !var(1).empty()) {
    std::string& c = f.constant[var(1)];
    if (c.empty() || c == "const") c = head;
    if (head == "value" && e.items.size() == 3) f.value[var(1)] = e.items[2].number;
  }
  for (const Sexpr& item : e.items) scan(item, f);
}

std::string key(const RuleBinding& b) {
  std::string k;
  for (const auto& [name, t] : b.types) k += name + ":" + t.str() + ";";
  for (const auto& [name, t] : b.values) k += name + "=" + t.type().str() + ";";
  for (const auto& [name, a] : b.attrs) k += name + "=" + encode_attr(a) + ";";
  return k;
}

}  // namespace

std::vector<RuleBinding> proof_bindings(const Rule& rule, const ShapeChoice& choice) {
  std::vector<RuleBinding> out = representative_bindings(rule, choice);
  std::set<std::string> seen;
  for (const RuleBinding& b : out) seen.insert(key(b));
  if (out.size() >= choice.wanted) return out;
  Facts facts;
  for (const Condition& c : rule.conditions) scan(c.form, facts);
  std::mt19937_64 rng(choice.seed * 31 + std::hash<std::string>()(rule.name));
  auto pick = [&](const std::vector<int64_t>& from) {
    return from[std::uniform_int_distribution<size_t>(0, from.size() - 1)(rng)];
  };
  auto coin = [&](double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; };
  for (size_t attempt = 0; attempt < choice.max_tries && out.size() < choice.wanted; ++attempt) {
    RuleBinding b;
    std::vector<int64_t> base(static_cast<size_t>(choice.max_rank));
    for (int64_t& d : base) d = pick(choice.dims);
    std::map<std::string, std::vector<int64_t>> dims_of;
    int64_t shared_rank = pick({1, 2, 3, 4});
    for (const std::string& v : rule.class_vars) {
      std::string r = root(facts, v);
      if (r != v && dims_of.count(r)) {
        dims_of[v] = dims_of[r];
      } else {
        int64_t rank = facts.rank.count(v)   ? facts.rank[v]
                       : facts.rank.count(r) ? facts.rank[r]
                       : coin(0.5)           ? shared_rank
                                             : pick({0, 1, 2, 3, 4});
        rank = std::min<int64_t>(rank, choice.max_rank);
        if (facts.constant[v] == "scalar") rank = 0;
        std::vector<int64_t> dims;
        for (int64_t i = 0; i < rank; ++i) {
          int64_t d = base[static_cast<size_t>(choice.max_rank - rank + i)];
          if (coin(0.25)) d = pick(choice.dims);
          dims.push_back(d);
        }
        dims_of[v] = dims;
        dims_of[r] = dims;
      }
      ir::DType dtype = facts.dtype.count(v) ? facts.dtype[v] : ir::DType::f32;
      const std::string& c = facts.constant[v];
      if (!c.empty()) {
        ir::Tensor t(dtype, dims_of[v]);
        for (int64_t i = 0; i < t.numel(); ++i)
          t.set(i, c == "zero"    ? 0
                   : c == "one"   ? 1
                   : c == "value" ? facts.value[v]
                                  : static_cast<double>(pick({1, 2, 3, -1, -2})));
        b.values[v] = std::move(t);
      } else {
        b.types[v] = {dtype, ir::Shape::from_dims(dims_of[v])};
      }
    }
    size_t first_rank = rule.class_vars.empty() ? 2 : dims_of[rule.class_vars[0]].size();
    for (const AttrVar& a : rule.attr_vars) {
      switch (a.kind) {
        case ir::AttrKind::Int:
          b.attrs[a.name] = ir::AttrValue(pick({-1, 0, 1, 2, 3}));
          break;
        case ir::AttrKind::Float:
          b.attrs[a.name] = ir::AttrValue(static_cast<double>(pick({1, 2, 3})) / 2);
          break;
        case ir::AttrKind::Ints: {
          std::vector<int64_t> list(first_rank);
          std::iota(list.begin(), list.end(), 0);
          std::shuffle(list.begin(), list.end(), rng);
          if (coin(0.3)) list = {pick({-1, 0, 1})};
          b.attrs[a.name] = ir::AttrValue(std::move(list));
          break;
        }
        case ir::AttrKind::Floats:
          b.attrs[a.name] = ir::AttrValue(std::vector<double>(first_rank, 1.0));
          break;
        default:
          b.attrs[a.name] = ir::AttrValue(std::string());
      }
    }
    BindingView view(b);
    bool ok = true;
    for (const Sexpr& t : rule.lhs) ok = ok && term_types(t, view).has_value();
    if (!ok || !holds_all(rule.conditions, view) || !seen.insert(key(b)).second) continue;
    out.push_back(std::move(b));
  }
  return out;
}

}  // namespace eqfuse::rules::prove
