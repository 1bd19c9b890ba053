#include "rules/shapes.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>
#include <optional>
#include <random>
#include <tuple>

#include "ir/attr_text.h"
#include "rules/condition.h"

namespace eqfuse::rules {

namespace {

// What the plain facts of the conditions say about the class variables.
struct Facts {
  std::map<std::string, int64_t> rank;
  std::map<std::string, std::string> same;      // variable -> another of its same-shape group
  std::map<std::string, std::string> constant;  // const, scalar, zero, one, nonzero, value
  std::map<std::string, double> value;
  std::map<std::string, ir::DType> dtype;
};

std::string root(const Facts& f, const std::string& v) {
  auto it = f.same.find(v);
  return it == f.same.end() || it->second == v ? v : root(f, it->second);
}

void scan(const Sexpr& e, Facts& f) {
  if (!e.is_list() || e.items.empty() || e.items[0].kind != Sexpr::Kind::Symbol) return;
  const std::string& head = e.items[0].text;
  if (head == "not" || head == "or") return;  // facts under these are not requirements
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
  if (head == "is-int" && !var(1).empty()) f.dtype[var(1)] = ir::DType::i64;
  if ((head == "const" || head == "scalar" || head == "zero" || head == "one" ||
       head == "nonzero" || head == "value") &&
      !var(1).empty()) {
    std::string& c = f.constant[var(1)];
    if (c.empty() || c == "const") c = head;
    if (head == "value" && e.items.size() == 3) f.value[var(1)] = e.items[2].number;
  }
  for (const Sexpr& item : e.items) scan(item, f);
}

// A point of the enumeration: the dims of each same-shape group and the attribute values.
struct Point {
  std::vector<std::vector<int64_t>> dims;  // per group
  std::vector<ir::AttrValue> attrs;        // per attribute variable
};

struct Slot {
  size_t group, index;
};

struct Candidate {
  RuleBinding binding;
  std::set<std::string> features;
  size_t combo = 0;                      // index of its rank combination
  std::vector<std::string> attr_values;  // encoded, per attribute variable
};

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 14695981039346656037ULL;
  for (unsigned char ch : s) h = (h ^ ch) * 1099511628211ULL;
  return h;
}

std::string binding_key(const RuleBinding& b) {
  std::string k;
  for (const auto& [name, t] : b.types) k += name + ":" + t.str() + ";";
  for (const auto& [name, t] : b.values) k += name + "=" + t.str(64) + ";";
  for (const auto& [name, a] : b.attrs) k += name + "=" + ir::encode_attr(a) + ";";
  return k;
}

std::string ranks_key(const std::vector<int64_t>& ranks) {
  std::string k = "(";
  for (size_t i = 0; i < ranks.size(); ++i) k += (i ? "," : "") + std::to_string(ranks[i]);
  return k + ")";
}

class Enumerator {
 public:
  Enumerator(const Rule& rule, const ShapeChoice& choice) : rule_(rule), choice_(choice) {
    for (const Condition& c : rule.conditions) scan(c.form, facts_);
    std::map<std::string, size_t> group_of;
    for (const std::string& v : rule.class_vars) {
      std::string r = root(facts_, v);
      auto it = group_of.find(r);
      if (it == group_of.end()) {
        it = group_of.emplace(r, groups_.size()).first;
        groups_.push_back({});
      }
      groups_[it->second].push_back(v);
      group_of[v] = it->second;
    }
    for (const auto& vars : groups_) {
      std::optional<int64_t> fixed;
      bool scalar = false;
      for (const std::string& v : vars) {
        if (facts_.rank.count(v)) fixed = facts_.rank.at(v);
        auto c = facts_.constant.find(v);
        if (c != facts_.constant.end() && c->second == "scalar") scalar = true;
      }
      std::vector<int64_t> options;
      if (fixed) {
        if (*fixed <= choice_.max_rank) options.push_back(*fixed);
      } else if (scalar) {
        options = {0, 1};
      } else {
        for (int64_t r = 0; r <= choice_.max_rank; ++r) options.push_back(r);
      }
      rank_options_.push_back(options);
    }
  }

  Enumeration run() {
    Enumeration out;
    std::vector<Candidate> candidates;
    std::set<std::string> seen;
    size_t combo_index = 0;
    for (const std::vector<int64_t>& ranks : rank_combos()) {
      ++combo_index;
      std::vector<std::vector<ir::AttrValue>> tuples = attr_tuples(ranks);
      std::vector<Point> generals;
      auto explore = [&](Point seed) {
        std::vector<Point> points =
            variants(generalize(std::move(seed), choice_.dims, choice_.max_numel));
        generals.push_back(points[0]);
        for (size_t i = 0; i < points.size(); ++i)
          add(candidates, seen, points[i], ranks, combo_index, i == 0);
      };
      std::vector<const std::vector<ir::AttrValue>*> unseeded;
      std::vector<std::set<std::string>> seeded_values(rule_.attr_vars.size());
      for (const auto& tuple : tuples) {
        if (auto s = structured_seed(ranks, tuple)) {
          explore(std::move(*s));
          for (size_t i = 0; i < tuple.size(); ++i)
            seeded_values[i].insert(ir::encode_attr(tuple[i]));
        } else {
          unseeded.push_back(&tuple);
        }
        if (exhausted_) break;
      }
      if (generals.empty() && !exhausted_) {
        if (auto s = random_seed(ranks, tuples, combo_index, 256)) explore(std::move(*s));
      }
      // Two attribute variables may only be valid together at sizes no structured seed has
      // (Concat along two axes needs one dim to be the sum of two): a random search for each
      // combination of values that are each valid on their own.
      if (rule_.attr_vars.size() >= 2 && !exhausted_) {
        for (const auto* tuple : unseeded) {
          bool each_valid = true;
          for (size_t i = 0; i < tuple->size() && each_valid; ++i)
            each_valid = seeded_values[i].count(ir::encode_attr((*tuple)[i])) > 0;
          if (!each_valid) continue;
          if (auto s = random_seed(ranks, {*tuple}, combo_index, 128)) explore(std::move(*s));
          if (exhausted_) break;
        }
      }
      if (exhausted_) break;
      if (generals.empty()) continue;
      separate_pairs(candidates, seen, ranks, combo_index, generals, out.coverage.unseparated);
      witness_points(generals, combo_index, out.witness);
    }
    add_attr_pair_features(candidates);
    select(candidates, out);
    return out;
  }

 private:
  // ---- the space ----

  std::vector<std::vector<int64_t>> rank_combos() const {
    size_t n = groups_.size();
    size_t product = 1;
    for (const auto& o : rank_options_) {
      if (o.empty()) return {};
      product *= o.size();
      if (product > choice_.max_rank_combos) break;
    }
    std::vector<std::vector<int64_t>> out;
    std::set<std::vector<int64_t>> seen;
    auto push = [&](std::vector<int64_t> r) {
      if (seen.insert(r).second) out.push_back(std::move(r));
    };
    if (product <= choice_.max_rank_combos) {
      std::vector<int64_t> r(n);
      std::function<void(size_t)> rec = [&](size_t g) {
        if (g == n) return push(r);
        for (int64_t x : rank_options_[g]) {
          r[g] = x;
          rec(g + 1);
        }
      };
      rec(0);
      return out;
    }
    // Too many to take them all: every common rank, and each free group lower than the rest.
    auto allowed = [&](size_t g, int64_t r) {
      const auto& o = rank_options_[g];
      return std::find(o.begin(), o.end(), r) != o.end();
    };
    for (int64_t top = 0; top <= choice_.max_rank; ++top) {
      std::vector<int64_t> r(n);
      for (size_t g = 0; g < n; ++g) r[g] = allowed(g, top) ? top : rank_options_[g].front();
      push(r);
      for (size_t g = 0; g < n; ++g) {
        if (rank_options_[g].size() < 2) continue;
        for (int64_t low = 0; low < top; ++low) {
          if (!allowed(g, low)) continue;
          std::vector<int64_t> q = r;
          q[g] = low;
          push(q);
        }
      }
    }
    return out;
  }

  std::vector<ir::AttrValue> attr_domain(const AttrVar& a, const std::vector<int64_t>& ranks) {
    std::vector<ir::AttrValue> out;
    int64_t m = choice_.max_rank;
    std::set<int64_t> lengths(ranks.begin(), ranks.end());
    lengths.insert(1);
    switch (a.kind) {
      case ir::AttrKind::Int:
        for (int64_t i = -m; i <= m; ++i) out.emplace_back(i);
        break;
      case ir::AttrKind::Float:
        for (double d : {-1.0, 0.0, 0.5, 2.0}) out.emplace_back(d);
        break;
      case ir::AttrKind::Ints: {
        std::set<std::vector<int64_t>> lists;
        for (int64_t len : lengths) {
          std::vector<int64_t> perm(static_cast<size_t>(len));
          std::iota(perm.begin(), perm.end(), 0);
          do {
            lists.insert(perm);
          } while (std::next_permutation(perm.begin(), perm.end()));
        }
        for (int64_t i = -m; i < m; ++i) lists.insert({i});
        for (const auto& l : lists) out.emplace_back(l);
        break;
      }
      case ir::AttrKind::Floats:
        for (int64_t len : lengths)
          out.emplace_back(std::vector<double>(static_cast<size_t>(len), 1.0));
        break;
      default:
        out.emplace_back(std::string());
    }
    return out;
  }

  std::vector<std::vector<ir::AttrValue>> attr_tuples(const std::vector<int64_t>& ranks) {
    std::vector<std::vector<ir::AttrValue>> domains;
    for (const AttrVar& a : rule_.attr_vars) domains.push_back(attr_domain(a, ranks));
    std::vector<std::vector<ir::AttrValue>> out;
    std::vector<ir::AttrValue> t(domains.size());
    std::function<void(size_t)> rec = [&](size_t i) {
      if (i == domains.size()) return out.push_back(t);
      for (const ir::AttrValue& v : domains[i]) {
        t[i] = v;
        rec(i + 1);
      }
    };
    rec(0);
    return out;
  }

  // ---- checking ----

  RuleBinding build(const Point& p) const {
    RuleBinding b;
    for (size_t g = 0; g < groups_.size(); ++g) {
      for (const std::string& v : groups_[g]) {
        auto d = facts_.dtype.find(v);
        ir::DType dtype = d == facts_.dtype.end() ? ir::DType::f32 : d->second;
        auto c = facts_.constant.find(v);
        if (c == facts_.constant.end()) {
          b.types[v] = {dtype, ir::Shape::from_dims(p.dims[g])};
          continue;
        }
        ir::Tensor t(dtype, p.dims[g]);
        static const double kValues[] = {1, 2, 3, -1, -2};
        for (int64_t i = 0; i < t.numel(); ++i) {
          double x = c->second == "zero"    ? 0
                     : c->second == "one"   ? 1
                     : c->second == "value" ? facts_.value.at(v)
                                            : kValues[i % 5];
          t.set(i, x);
        }
        b.values[v] = std::move(t);
      }
    }
    for (size_t i = 0; i < rule_.attr_vars.size(); ++i)
      b.attrs[rule_.attr_vars[i].name] = p.attrs[i];
    return b;
  }

  // Each phase has its own budget of validity checks, so that separating pairs and finding the
  // witness's bindings never cut the enumeration itself short.
  enum class Phase { Enumerate, Separate, Witness };

  bool valid(const Point& p) {
    if (phase_ == Phase::Enumerate) {
      if (checks_ >= choice_.max_tries) {
        exhausted_ = true;
        return false;
      }
      ++checks_;
    } else if (phase_ == Phase::Separate) {
      if (separation_checks_ >= choice_.separation_tries) {
        separation_exhausted_ = true;
        return false;
      }
      ++separation_checks_;
    } else {
      if (witness_checks_ >= kWitnessTries) return false;
      ++witness_checks_;
    }
    RuleBinding b = build(p);
    BindingView view(b);
    for (const Sexpr& t : rule_.lhs)
      if (!term_types(t, view)) return false;
    return holds_all(rule_.conditions, view);
  }

  // ---- seeds and generalization ----

  Point shaped(const std::vector<int64_t>& ranks, const std::vector<ir::AttrValue>& attrs,
               const std::function<int64_t(size_t, size_t, size_t)>& size) const {
    Point p;
    p.attrs = attrs;
    for (size_t g = 0; g < ranks.size(); ++g) {
      auto r = static_cast<size_t>(ranks[g]);
      std::vector<int64_t> d(r);
      for (size_t i = 0; i < r; ++i) d[i] = size(g, i, r - 1 - i);
      p.dims.push_back(d);
    }
    return p;
  }

  // Right-aligned distinct sizes (elementwise and broadcasting rules), then all dims equal (rules
  // whose dims must match across positions: MatMul, Conv...).
  std::optional<Point> structured_seed(const std::vector<int64_t>& ranks,
                                       const std::vector<ir::AttrValue>& attrs) {
    const std::vector<int64_t>& s = choice_.dims;
    Point aligned = shaped(ranks, attrs, [&](size_t, size_t, size_t j) { return s[j % s.size()]; });
    if (valid(aligned)) return aligned;
    for (int64_t v : {s.front(), int64_t{1}, s[std::min<size_t>(1, s.size() - 1)]}) {
      Point same = shaped(ranks, attrs, [&](size_t, size_t, size_t) { return v; });
      if (valid(same)) return same;
    }
    return std::nullopt;
  }

  std::optional<Point> random_seed(const std::vector<int64_t>& ranks,
                                   const std::vector<std::vector<ir::AttrValue>>& tuples,
                                   size_t combo, int attempts) {
    std::mt19937_64 rng(choice_.seed * 0x9e3779b97f4a7c15ULL + combo * 7919);  // never the name
    std::vector<int64_t> palette = {1};
    for (int64_t s : choice_.dims) palette.push_back(s);
    auto pick = [&](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); };
    for (int attempt = 0; attempt < attempts && !exhausted_; ++attempt) {
      const auto& attrs = tuples[pick(tuples.size())];
      Point p = shaped(ranks, attrs,
                       [&](size_t, size_t, size_t) { return palette[pick(palette.size())]; });
      if (valid(p)) return p;
    }
    return std::nullopt;
  }

  std::vector<Slot> slots(const Point& p) const {
    std::vector<Slot> out;
    for (size_t g = 0; g < p.dims.size(); ++g)
      for (size_t i = 0; i < p.dims[g].size(); ++i) out.push_back({g, i});
    return out;
  }

  // Gives dims that need not equal others (or 1) sizes of their own, so that a rule confusing
  // two dims meets them at different sizes.
  Point generalize(Point p, const std::vector<int64_t>& sizes, size_t max_numel) {
    std::vector<Slot> all = slots(p);
    auto at = [](Point& q, Slot s) -> int64_t& { return q.dims[s.group][s.index]; };
    auto class_of = [&](Point& q, int64_t v) {
      std::vector<Slot> c;
      for (Slot s : all)
        if (at(q, s) == v) c.push_back(s);
      return c;
    };
    // Larger sizes only while every tensor stays small: proofs are per element, and kernels
    // are probed per pair of input elements.
    auto too_large = [&](const Point& q) {
      for (const auto& d : q.dims)
        if (ir::product(d) > static_cast<int64_t>(max_numel)) return true;
      return false;
    };
    // Pairs of dims of equal size: a move must lower it (split a class, not merge two).
    auto equal_pairs = [&](Point& q) {
      size_t n = 0;
      for (size_t i = 0; i < all.size(); ++i)
        for (size_t j = i + 1; j < all.size(); ++j) n += at(q, all[i]) == at(q, all[j]);
      return n;
    };
    // Moves `set` (a proper part of a class, or dims of size 1) to another size if still valid.
    auto move = [&](const std::vector<Slot>& set) {
      size_t before = equal_pairs(p);
      int64_t current = at(p, set[0]);
      std::set<int64_t> used;
      for (Slot s : all) used.insert(at(p, s));
      std::vector<int64_t> order;
      for (int64_t v : sizes)
        if (!used.count(v)) order.push_back(v);
      for (int64_t v : sizes)
        if (used.count(v) && v != current) order.push_back(v);
      for (int64_t v : order) {
        Point q = p;
        for (Slot s : set) at(q, s) = v;
        if (equal_pairs(q) >= before || too_large(q)) continue;
        if (valid(q)) {
          p = std::move(q);
          return true;
        }
      }
      return false;
    };
    // Twice: a pair split off may free a size a single dim can then take.
    for (size_t round = 0; round < 6; ++round) {
      size_t k = round % 3 + 1;
      for (size_t a = 0; a < all.size(); ++a) {
        int64_t v = at(p, all[a]);
        std::vector<Slot> c = class_of(p, v);
        if (c.size() <= k && v != 1) continue;  // nothing to split off
        if (c.size() < k) continue;
        // Subsets of size k of the class that contain slot a.
        std::vector<Slot> others;
        for (Slot s : c)
          if (s.group != all[a].group || s.index != all[a].index) others.push_back(s);
        if (k == 1) {
          move({all[a]});
          continue;
        }
        bool done = false;
        for (size_t i = 0; i < others.size() && !done; ++i) {
          if (k == 2) {
            done = move({all[a], others[i]});
            continue;
          }
          for (size_t j = i + 1; j < others.size() && !done; ++j)
            done = move({all[a], others[i], others[j]});
        }
      }
    }
    return p;
  }

  // The general point first, then its size-1 variants.
  std::vector<Point> variants(const Point& general) {
    std::vector<Point> out = {general};
    std::vector<Slot> all = slots(general);
    for (Slot s : all) {
      if (general.dims[s.group][s.index] == 1) continue;
      Point q = general;
      q.dims[s.group][s.index] = 1;
      if (valid(q)) out.push_back(std::move(q));
    }
    std::set<int64_t> sizes;
    for (Slot s : all) sizes.insert(general.dims[s.group][s.index]);
    for (int64_t v : sizes) {
      if (v == 1) continue;
      Point q = general;
      size_t n = 0;
      for (Slot s : all)
        if (q.dims[s.group][s.index] == v) q.dims[s.group][s.index] = 1, ++n;
      if (n > 1 && valid(q)) out.push_back(std::move(q));
    }
    for (size_t g = 0; g < general.dims.size(); ++g) {
      Point q = general;
      bool changed = false;
      for (int64_t& d : q.dims[g]) changed = changed || d != 1, d = 1;
      if (changed && valid(q)) out.push_back(std::move(q));
    }
    return out;
  }

  // ---- pairs ----

  static int64_t& at(Point& q, Slot s) { return q.dims[s.group][s.index]; }
  static int64_t at(const Point& q, Slot s) { return q.dims[s.group][s.index]; }

  // Two dims are told apart by a binding that gives them different sizes, both > 1 (a 1 is a
  // broadcast, where many confusions are harmless).
  static bool separated(const Point& p, Slot a, Slot b) {
    int64_t x = at(p, a), y = at(p, b);
    return x != y && x > 1 && y > 1;
  }

  std::string slot_name(Slot s) const {
    return fmt::format("?{} dim {}", groups_[s.group][0], s.index);
  }

  std::string pair_feature(Slot a, Slot b, const std::string& combo) const {
    return fmt::format("dims {} and {} at ranks {}", slot_name(a), slot_name(b), combo);
  }

  bool within(const Point& q, size_t cap) const {
    for (const auto& d : q.dims)
      if (ir::product(d) > static_cast<int64_t>(cap)) return false;
    return true;
  }

  // Moves dim `x` (alone, with one or two dims of its size, or with all of them; never `y`) to
  // a size > 1 other than y's, within `cap` elements per tensor; the first valid point.
  std::optional<Point> move_apart(const Point& p, const std::vector<Slot>& all, size_t x, size_t y,
                                  size_t cap) {
    std::vector<size_t> same;
    for (size_t i = 0; i < all.size(); ++i)
      if (i != x && i != y && at(p, all[i]) == at(p, all[x])) same.push_back(i);
    std::vector<std::vector<size_t>> sets = {{x}};
    for (size_t i : same) sets.push_back({x, i});
    for (size_t i = 0; i < same.size() && sets.size() < 48; ++i)
      for (size_t j = i + 1; j < same.size() && sets.size() < 48; ++j)
        sets.push_back({x, same[i], same[j]});
    if (same.size() > 2) {
      sets.push_back(same);
      sets.back().push_back(x);
    }
    for (const auto& set : sets)
      for (int64_t v : {2, 3, 4, 5}) {
        if (v == at(p, all[y]) || v == at(p, all[x])) continue;
        Point q = p;
        for (size_t i : set) at(q, all[i]) = v;
        if (within(q, cap) && valid(q)) return q;
      }
    return std::nullopt;
  }

  std::optional<Point> separate(const Point& p, const std::vector<Slot>& all, size_t a, size_t b,
                                size_t cap) {
    for (auto [x, y] : {std::pair{a, b}, std::pair{b, a}}) {
      auto q = move_apart(p, all, x, y, cap);
      if (!q) continue;
      if (separated(*q, all[a], all[b])) return q;
      if (auto r = move_apart(*q, all, y, x, cap)) {  // y was 1: lift it too
        if (separated(*r, all[a], all[b])) return r;
      }
    }
    return std::nullopt;
  }

  // The point with every other dim set to 1 where the rule allows it (dims of one size together
  // when one alone cannot move), so that two dims can take new sizes within the element cap.
  Point shrunk(Point p, const std::vector<Slot>& all, size_t a, size_t b) {
    for (size_t i = 0; i < all.size(); ++i) {
      if (i == a || i == b || at(p, all[i]) == 1) continue;
      Point q = p;
      at(q, all[i]) = 1;
      if (valid(q)) {
        p = std::move(q);
        continue;
      }
      int64_t v = at(p, all[i]);
      for (size_t j = 0; j < all.size(); ++j)
        if (j != a && j != b && at(q, all[j]) == v) at(q, all[j]) = 1;
      if (valid(q)) p = std::move(q);
    }
    return p;
  }

  // Every pair of dims of this rank combination that no candidate separates: a targeted search
  // (from the general points and a shrunk one, up to 4x the element cap) adds a candidate that
  // does; a pair separable only beyond that is reported; one that cannot be separated even then
  // is taken as forced equal by the rule.
  void separate_pairs(std::vector<Candidate>& candidates, std::set<std::string>& seen,
                      const std::vector<int64_t>& ranks, size_t combo_index,
                      const std::vector<Point>& generals, std::vector<std::string>& unseparated) {
    std::vector<Slot> all = slots(generals[0]);
    size_t n = all.size();
    if (n < 2) return;
    std::string combo = ranks_key(ranks);
    std::vector<std::vector<bool>> done(n, std::vector<bool>(n, false));
    auto mark = [&](const Point& p) {
      for (size_t a = 0; a < n; ++a)
        for (size_t b = a + 1; b < n; ++b)
          if (separated(p, all[a], all[b])) done[a][b] = true;
    };
    for (const Point& g : generals) mark(g);
    for (const Candidate& c : candidates) {
      if (c.combo != combo_index) continue;
      for (size_t a = 0; a < n; ++a)
        for (size_t b = a + 1; b < n; ++b)
          if (!done[a][b] && c.features.count(pair_feature(all[a], all[b], combo)))
            done[a][b] = true;
    }
    // Dims forced equal are one class: once one pair of two classes is decided, so are the rest.
    std::vector<size_t> cls(n);
    std::iota(cls.begin(), cls.end(), 0);
    std::function<size_t(size_t)> find = [&](size_t i) {
      return cls[i] == i ? i : cls[i] = find(cls[i]);
    };
    std::set<std::pair<size_t, size_t>> decided;
    phase_ = Phase::Separate;
    const size_t cap = 4 * choice_.max_numel;
    const size_t wide = std::max<size_t>(64 * choice_.max_numel, 4096);
    std::vector<const Point*> bases;
    for (size_t i = 0; i < generals.size() && bases.size() < 2; ++i) bases.push_back(&generals[i]);
    for (size_t a = 0; a < n; ++a) {
      for (size_t b = a + 1; b < n; ++b) {
        if (done[a][b]) continue;
        std::pair<size_t, size_t> key = std::minmax(find(a), find(b));
        if (key.first == key.second || decided.count(key)) continue;
        std::optional<Point> q;
        for (const Point* base : bases)
          if ((q = separate(*base, all, a, b, cap))) break;
        Point small = *bases[0];
        if (!q) {
          small = shrunk(*bases[0], all, a, b);
          q = separate(small, all, a, b, cap);
        }
        if (q) {
          mark(*q);
          add(candidates, seen, *q, ranks, combo_index, false);
          continue;
        }
        if (separation_exhausted_) {
          unseparated.push_back(
              fmt::format("{} and {} at ranks {} (the separation search budget of {} checks was "
                          "spent)",
                          slot_name(all[a]), slot_name(all[b]), combo, choice_.separation_tries));
          continue;
        }
        decided.insert(key);
        if (separate(*bases[0], all, a, b, wide) || separate(small, all, a, b, wide)) {
          unseparated.push_back(
              fmt::format("{} and {} at ranks {} (only with tensors over {} elements)",
                          slot_name(all[a]), slot_name(all[b]), combo, cap));
        } else {
          cls[find(b)] = find(a);  // forced equal (or to 1) by the rule
        }
      }
    }
    phase_ = Phase::Enumerate;
  }

  // The witness's bindings for this rank combination: a few general points with their sizes
  // mapped at random (a fixed seed) onto larger distinct ones, then generalized further.
  void witness_points(const std::vector<Point>& generals, size_t combo_index,
                      std::vector<RuleBinding>& out) {
    phase_ = Phase::Witness;
    std::mt19937_64 rng(choice_.seed * 0xbf58476d1ce4e5b9ULL + combo_index);
    std::vector<int64_t> palette = {2, 3, 4, 5, 6, 7};
    size_t count = std::min(choice_.witness_per_combo, generals.size());
    for (size_t k = 0; k < count; ++k) {
      const Point& g = generals[count == 1 ? 0 : k * (generals.size() - 1) / (count - 1)];
      std::set<int64_t> sizes;
      for (const auto& d : g.dims)
        for (int64_t v : d)
          if (v > 1) sizes.insert(v);
      std::optional<Point> found;
      for (int attempt = 0; attempt < 6 && !found; ++attempt) {
        std::shuffle(palette.begin(), palette.end(), rng);
        std::map<int64_t, int64_t> to;
        size_t i = 0;
        for (int64_t v : sizes) to[v] = palette[i++ % palette.size()];
        Point q = g;
        for (auto& d : q.dims)
          for (int64_t& v : d)
            if (v > 1) v = to[v];
        if (within(q, choice_.witness_numel) && valid(q)) found = std::move(q);
      }
      Point w = generalize(found ? std::move(*found) : g, palette, choice_.witness_numel);
      out.push_back(build(w));
    }
    // Sizes a rule needs to be multiples (DepthToSpace's channels of 4) stay multiples when a
    // size class is doubled or tripled: a channel count of 8 tells DCR from CRD, 4 does not.
    const Point& g = generals[0];
    std::set<int64_t> sizes;
    for (const auto& d : g.dims)
      for (int64_t v : d)
        if (v > 1) sizes.insert(v);
    for (int64_t v : sizes)
      for (int64_t factor : {2, 3}) {
        Point q = g;
        for (auto& d : q.dims)
          for (int64_t& x : d)
            if (x == v) x *= factor;
        if (within(q, choice_.witness_numel) && valid(q)) {
          out.push_back(build(q));
          break;
        }
      }
    phase_ = Phase::Enumerate;
  }

  // Pair features of attribute variables: every value pair per rank combination when there are
  // at most `all_pairs` valid ones, else a deterministic subset (by a hash of the values, never
  // the name); and, for every two, a binding where they differ.
  void add_attr_pair_features(std::vector<Candidate>& candidates) const {
    size_t n = rule_.attr_vars.size();
    if (n < 2) return;
    std::map<std::tuple<size_t, size_t, size_t>, std::set<std::pair<std::string, std::string>>>
        pairs;
    for (const Candidate& c : candidates)
      for (size_t i = 0; i < n; ++i)
        for (size_t j = i + 1; j < n; ++j)
          pairs[{c.combo, i, j}].insert({c.attr_values[i], c.attr_values[j]});
    for (Candidate& c : candidates) {
      for (size_t i = 0; i < n; ++i) {
        for (size_t j = i + 1; j < n; ++j) {
          const std::string &vi = c.attr_values[i], &vj = c.attr_values[j];
          const std::string &a = rule_.attr_vars[i].name, &b = rule_.attr_vars[j].name;
          size_t total = pairs.at({c.combo, i, j}).size();
          size_t stride = (total + choice_.all_pairs - 1) / choice_.all_pairs;
          if (stride <= 1 || fnv1a(vi + "|" + vj) % stride == 0)
            c.features.insert(fmt::format("attrs ?{} = {} with ?{} = {} in combination {}", a, vi,
                                          b, vj, c.combo));
          if (vi != vj)
            c.features.insert(
                fmt::format("attrs ?{} and ?{} differing in combination {}", a, b, c.combo));
        }
      }
    }
  }

  // ---- candidates and their selection ----

  void add(std::vector<Candidate>& candidates, std::set<std::string>& seen, const Point& p,
           const std::vector<int64_t>& ranks, size_t combo_index, bool general) {
    Candidate c;
    c.binding = build(p);
    if (!seen.insert(binding_key(c.binding)).second) return;
    c.combo = combo_index;
    std::string combo = ranks_key(ranks);
    std::vector<Slot> all = slots(p);
    for (size_t a = 0; a < all.size(); ++a)
      for (size_t b = a + 1; b < all.size(); ++b)
        if (separated(p, all[a], all[b])) c.features.insert(pair_feature(all[a], all[b], combo));
    c.features.insert("combo " + combo);
    if (general) c.features.insert("general " + combo);
    for (size_t g = 0; g < groups_.size(); ++g) {
      const std::vector<int64_t>& d = p.dims[g];
      size_t r = d.size();
      for (const std::string& v : groups_[g]) c.features.insert(fmt::format("rank ?{} {}", v, r));
      const std::string& v = groups_[g][0];
      bool all_one = r > 0;
      for (size_t i = 0; i < r; ++i) {
        if (d[i] != 1) {
          all_one = false;
          continue;
        }
        size_t j = r - 1 - i;  // position from the right, where broadcasting aligns
        c.features.insert(fmt::format("one ?{} {}", v, j));
        for (size_t h = 0; h < groups_.size(); ++h) {
          const std::vector<int64_t>& e = p.dims[h];
          if (h != g && e.size() > j && e[e.size() - 1 - j] > 1)
            c.features.insert(fmt::format("broadcast ?{} {}", v, j));
        }
      }
      if (all_one) c.features.insert("all-ones ?" + v);
    }
    for (size_t i = 0; i < rule_.attr_vars.size(); ++i) {
      c.attr_values.push_back(ir::encode_attr(p.attrs[i]));
      c.features.insert(
          fmt::format("attr ?{} {} {}", rule_.attr_vars[i].name, c.attr_values.back(), combo));
    }
    candidates.push_back(std::move(c));
  }

  void select(const std::vector<Candidate>& candidates, Enumeration& out) {
    std::set<std::string> wanted;
    for (const Candidate& c : candidates) wanted.insert(c.features.begin(), c.features.end());
    std::set<std::string> covered;
    std::vector<bool> taken(candidates.size(), false);
    BindingCoverage& cov = out.coverage;
    while (out.bindings.size() < choice_.wanted && covered.size() < wanted.size()) {
      size_t best = candidates.size(), best_gain = 0;
      for (size_t i = 0; i < candidates.size(); ++i) {
        if (taken[i]) continue;
        size_t gain = 0;
        for (const std::string& f : candidates[i].features) gain += !covered.count(f);
        if (gain > best_gain) best = i, best_gain = gain;
      }
      if (best == candidates.size()) break;
      taken[best] = true;
      covered.insert(candidates[best].features.begin(), candidates[best].features.end());
      out.bindings.push_back(candidates[best].binding);
    }
    for (const std::string& f : wanted) {
      bool dims = f.rfind("dims ", 0) == 0, attrs = f.rfind("attrs ", 0) == 0;
      if (!dims && !attrs) continue;
      if (covered.count(f)) {
        (dims ? cov.dim_pairs : cov.attr_pairs) += 1;
      } else {
        cov.unseparated.push_back(f.substr(dims ? 5 : 6) + " (not covered within the cap of " +
                                  std::to_string(choice_.wanted) + " bindings)");
      }
    }
    cov.candidates = candidates.size();
    cov.features = wanted.size();
    cov.uncovered = wanted.size() - covered.size();
    cov.bindings = out.bindings.size();
    cov.cap = choice_.wanted;
    cov.checks = checks_;
    cov.exhausted = exhausted_;
    for (const RuleBinding& b : out.bindings) {
      for (const auto& [name, t] : b.types) {
        cov.ranks[name].insert(static_cast<int64_t>(t.shape.rank()));
        for (int64_t d : t.shape.static_dims()) cov.dim_sizes.insert(d);
      }
      for (const auto& [name, t] : b.values) {
        cov.ranks[name].insert(static_cast<int64_t>(t.dims().size()));
        for (int64_t d : t.dims()) cov.dim_sizes.insert(d);
      }
      for (const auto& [name, a] : b.attrs) cov.attrs[name].insert(ir::encode_attr(a));
    }
  }

  const Rule& rule_;
  const ShapeChoice& choice_;
  Facts facts_;
  std::vector<std::vector<std::string>> groups_;  // same-shape groups of class variables
  std::vector<std::vector<int64_t>> rank_options_;
  size_t checks_ = 0;
  bool exhausted_ = false;
  static constexpr size_t kWitnessTries = 2000;
  Phase phase_ = Phase::Enumerate;
  size_t separation_checks_ = 0;
  bool separation_exhausted_ = false;
  size_t witness_checks_ = 0;
};

std::string set_str(const std::set<int64_t>& s) {
  std::string out = "{";
  for (int64_t x : s) out += (out.size() > 1 ? "," : "") + std::to_string(x);
  return out + "}";
}

}  // namespace

std::string BindingCoverage::str() const {
  std::string out = "ranks";
  bool first = true;
  for (const auto& [name, r] : ranks) {
    out += fmt::format("{} ?{} {}", first ? "" : ",", name, set_str(r));
    first = false;
  }
  out += "; dim sizes " + set_str(dim_sizes);
  for (const auto& [name, values] : attrs) {
    out += fmt::format("; ?{} ", name);
    size_t i = 0;
    for (const std::string& v : values) {
      if (i == 12) {
        out += fmt::format(" ... ({} values)", values.size());
        break;
      }
      out += (i++ ? " " : "") + v;
    }
  }
  out += fmt::format("; {} bindings of {} candidates", bindings, candidates);
  if (dim_pairs || attr_pairs)
    out += fmt::format("; pairs separated: {} dims, {} attrs", dim_pairs, attr_pairs);
  if (!unseparated.empty()) out += fmt::format("; {} pairs NOT separated", unseparated.size());
  if (uncovered)
    out += fmt::format(" (cap {}: {} of {} features uncovered)", cap, uncovered, features);
  if (exhausted) out += fmt::format(" (check budget of {} spent)", checks);
  return out;
}

Enumeration enumerate_bindings(const Rule& rule, const ShapeChoice& choice) {
  return Enumerator(rule, choice).run();
}

std::vector<RuleBinding> representative_bindings(const Rule& rule, const ShapeChoice& choice) {
  return enumerate_bindings(rule, choice).bindings;
}

}  // namespace eqfuse::rules
