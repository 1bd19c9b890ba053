#include "ir/sym_int.h"

#include <algorithm>
#include <set>
#include <stdexcept>

namespace eqfuse::ir {

namespace {

enum class AtomKind { Symbol, FloorDiv, Mod, Min, Max };

struct SymAtom {
  AtomKind kind = AtomKind::Symbol;
  std::string name;  // Symbol
  SymInt a, b;       // operands of the others
  std::string key;   // canonical text
};
using AtomPtr = std::shared_ptr<const SymAtom>;
using Monomial = std::vector<AtomPtr>;  // sorted by key; a repeated atom is a power

struct MonomialLess {
  bool operator()(const Monomial& x, const Monomial& y) const {
    return std::lexicographical_compare(
        x.begin(), x.end(), y.begin(), y.end(),
        [](const AtomPtr& p, const AtomPtr& q) { return p->key < q->key; });
  }
};

using Terms = std::map<Monomial, int64_t, MonomialLess>;

}  // namespace

struct SymPoly {
  Terms terms;  // no zero coefficients; the empty monomial is the constant term
  std::string key;
};

namespace {

std::string monomial_str(const Monomial& m) {
  std::string out;
  for (const AtomPtr& a : m) out += (out.empty() ? "" : "*") + a->key;
  return out;
}

std::string terms_str(const Terms& terms) {
  std::string out;
  for (const auto& [m, c] : terms) {
    if (m.empty()) continue;
    int64_t mag = c < 0 ? -c : c;
    if (c < 0)
      out += "-";
    else if (!out.empty())
      out += "+";
    out += monomial_str(m);
    if (mag != 1) out += "*" + std::to_string(mag);
  }
  if (auto k = terms.find(Monomial{}); k != terms.end()) {
    if (!out.empty() && k->second >= 0) out += "+";
    out += std::to_string(k->second);
  }
  return out.empty() ? "0" : out;
}

SymInt make(Terms terms) {
  for (auto it = terms.begin(); it != terms.end();) it = it->second == 0 ? terms.erase(it) : ++it;
  auto p = std::make_shared<SymPoly>();
  p->key = terms_str(terms);
  p->terms = std::move(terms);
  return SymInt(std::shared_ptr<const SymPoly>(std::move(p)));
}

const Terms& terms_of(const SymInt& x) {
  return x.poly()->terms;
}

// The text of an operand of / or %: parenthesized unless it is one atom or a constant >= 0.
std::string operand(const SymInt& x) {
  const Terms& t = terms_of(x);
  if (t.empty()) return "0";
  if (t.size() == 1) {
    const auto& [m, c] = *t.begin();
    if ((m.empty() && c >= 0) || (m.size() == 1 && c == 1)) return x.str();
  }
  return "(" + x.str() + ")";
}

SymInt atom(AtomKind kind, const SymInt& a, const SymInt& b) {
  auto at = std::make_shared<SymAtom>();
  at->kind = kind;
  at->a = a;
  at->b = b;
  switch (kind) {
    case AtomKind::FloorDiv:
      at->key = operand(a) + "/" + operand(b);
      break;
    case AtomKind::Mod:
      at->key = operand(a) + "%" + operand(b);
      break;
    case AtomKind::Min:
      at->key = "min(" + a.str() + "," + b.str() + ")";
      break;
    case AtomKind::Max:
      at->key = "max(" + a.str() + "," + b.str() + ")";
      break;
    case AtomKind::Symbol:
      break;
  }
  Terms t;
  t[Monomial{AtomPtr(std::move(at))}] = 1;
  return make(std::move(t));
}

int64_t floor_div_int(int64_t a, int64_t b) {
  int64_t q = a / b;
  if (a % b != 0 && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t floor_mod_int(int64_t a, int64_t b) {
  return a - floor_div_int(a, b) * b;
}

Monomial multiply(const Monomial& x, const Monomial& y) {
  Monomial out;
  std::merge(x.begin(), x.end(), y.begin(), y.end(), std::back_inserter(out),
             [](const AtomPtr& p, const AtomPtr& q) { return p->key < q->key; });
  return out;
}

// m / d when every atom of d occurs in m (with multiplicity).
std::optional<Monomial> divide(const Monomial& m, const Monomial& d) {
  std::multiset<std::string> need;
  for (const AtomPtr& a : d) need.insert(a->key);
  Monomial out;
  for (const AtomPtr& a : m) {
    if (auto it = need.find(a->key); it != need.end()) {
      need.erase(it);
    } else {
      out.push_back(a);
    }
  }
  if (!need.empty()) return std::nullopt;
  return out;
}

void collect_symbols(const SymInt& x, std::set<std::string>& out) {
  if (!x.is_known()) return;
  for (const auto& [m, c] : terms_of(x)) {
    for (const AtomPtr& a : m) {
      if (a->kind == AtomKind::Symbol) {
        out.insert(a->name);
      } else {
        collect_symbols(a->a, out);
        collect_symbols(a->b, out);
      }
    }
  }
}

}  // namespace

SymInt::SymInt(int64_t constant) {
  Terms t;
  if (constant != 0) t[Monomial{}] = constant;
  *this = make(std::move(t));
}

SymInt SymInt::symbol(const std::string& name) {
  auto at = std::make_shared<SymAtom>();
  at->kind = AtomKind::Symbol;
  at->name = name;
  at->key = name;
  Terms t;
  t[Monomial{AtomPtr(std::move(at))}] = 1;
  return make(std::move(t));
}

SymInt SymInt::unknown() {
  return SymInt(std::shared_ptr<const SymPoly>());
}

std::optional<int64_t> SymInt::constant() const {
  if (!poly_) return std::nullopt;
  if (poly_->terms.empty()) return 0;
  if (poly_->terms.size() == 1 && poly_->terms.begin()->first.empty())
    return poly_->terms.begin()->second;
  return std::nullopt;
}

std::optional<int64_t> SymInt::evaluate(const std::map<std::string, int64_t>& symbols) const {
  if (!poly_) return std::nullopt;
  int64_t sum = 0;
  for (const auto& [m, c] : poly_->terms) {
    int64_t term = c;
    for (const AtomPtr& a : m) {
      std::optional<int64_t> v;
      if (a->kind == AtomKind::Symbol) {
        auto it = symbols.find(a->name);
        if (it == symbols.end()) return std::nullopt;
        v = it->second;
      } else {
        auto x = a->a.evaluate(symbols), y = a->b.evaluate(symbols);
        if (!x || !y) return std::nullopt;
        switch (a->kind) {
          case AtomKind::FloorDiv:
            if (*y == 0) return std::nullopt;
            v = floor_div_int(*x, *y);
            break;
          case AtomKind::Mod:
            if (*y == 0) return std::nullopt;
            v = floor_mod_int(*x, *y);
            break;
          case AtomKind::Min:
            v = std::min(*x, *y);
            break;
          default:
            v = std::max(*x, *y);
            break;
        }
      }
      term *= *v;
    }
    sum += term;
  }
  return sum;
}

std::vector<std::string> SymInt::symbols() const {
  std::set<std::string> out;
  collect_symbols(*this, out);
  return {out.begin(), out.end()};
}

std::string SymInt::str() const {
  return poly_ ? poly_->key : "?";
}

namespace {

std::string atom_c_expr(const SymAtom& a,
                        const std::function<std::string(const std::string&)>& symbol) {
  switch (a.kind) {
    case AtomKind::Symbol:
      return symbol(a.name);
    case AtomKind::FloorDiv:
      return "(" + a.a.c_expr(symbol) + ")/(" + a.b.c_expr(symbol) + ")";
    case AtomKind::Mod:
      return "(" + a.a.c_expr(symbol) + ")%(" + a.b.c_expr(symbol) + ")";
    case AtomKind::Min:
      return "eqf_min(" + a.a.c_expr(symbol) + ", " + a.b.c_expr(symbol) + ")";
    case AtomKind::Max:
      return "eqf_max(" + a.a.c_expr(symbol) + ", " + a.b.c_expr(symbol) + ")";
  }
  return "0";
}

}  // namespace

std::string SymInt::c_expr(const std::function<std::string(const std::string&)>& symbol) const {
  if (!poly_) throw std::logic_error("SymInt::c_expr of an unknown value");
  std::string out;
  for (const auto& [m, c] : poly_->terms) {
    std::string term;
    for (const AtomPtr& a : m)
      term += (term.empty() ? "" : "*") + ("(" + atom_c_expr(*a, symbol) + ")");
    if (term.empty())
      term = "INT64_C(" + std::to_string(c < 0 ? -c : c) + ")";
    else if (c != 1 && c != -1)
      term += "*INT64_C(" + std::to_string(c < 0 ? -c : c) + ")";
    out += c < 0 ? "-" + term : (out.empty() ? "" : "+") + term;
  }
  return out.empty() ? "INT64_C(0)" : out;
}

bool SymInt::operator==(const SymInt& other) const {
  if (!poly_ || !other.poly_) return !poly_ && !other.poly_;
  return poly_ == other.poly_ || poly_->key == other.poly_->key;
}

SymInt operator+(const SymInt& a, const SymInt& b) {
  if (!a.is_known() || !b.is_known()) return SymInt::unknown();
  Terms t = terms_of(a);
  for (const auto& [m, c] : terms_of(b)) t[m] += c;
  return make(std::move(t));
}

SymInt operator-(const SymInt& a, const SymInt& b) {
  if (!a.is_known() || !b.is_known()) return SymInt::unknown();
  Terms t = terms_of(a);
  for (const auto& [m, c] : terms_of(b)) t[m] -= c;
  return make(std::move(t));
}

SymInt operator*(const SymInt& a, const SymInt& b) {
  if (!a.is_known() || !b.is_known()) return SymInt::unknown();
  Terms t;
  for (const auto& [ma, ca] : terms_of(a)) {
    for (const auto& [mb, cb] : terms_of(b)) t[multiply(ma, mb)] += ca * cb;
  }
  return make(std::move(t));
}

SymInt floor_div(const SymInt& a, const SymInt& b) {
  if (!a.is_known() || !b.is_known()) return SymInt::unknown();
  auto ca = a.constant(), cb = b.constant();
  if (cb && *cb == 0) return SymInt::unknown();
  if (ca && cb) return SymInt(floor_div_int(*ca, *cb));
  if (cb && *cb == 1) return a;
  if (a == b) return SymInt(1);
  if (cb && *cb > 0) {
    // (c*q + r) / c = q + r / c when q is integral: every non-constant coefficient divides.
    Terms q;
    int64_t r = 0;
    for (const auto& [m, c] : terms_of(a)) {
      if (m.empty()) {
        r = c;
      } else if (c % *cb == 0) {
        q[m] = c / *cb;
      } else {
        return atom(AtomKind::FloorDiv, a, b);
      }
    }
    return make(std::move(q)) + SymInt(floor_div_int(r, *cb));
  }
  const Terms& tb = terms_of(b);
  if (tb.size() == 1) {  // one term: exact division term by term
    const auto& [mb, kb] = *tb.begin();
    Terms q;
    for (const auto& [m, c] : terms_of(a)) {
      auto rest = divide(m, mb);
      if (!rest || c % kb != 0) return atom(AtomKind::FloorDiv, a, b);
      q[*rest] += c / kb;
    }
    return make(std::move(q));
  }
  return atom(AtomKind::FloorDiv, a, b);
}

SymInt ceil_div(const SymInt& a, const SymInt& b) {
  return floor_div(a + b - SymInt(1), b);
}

SymInt mod(const SymInt& a, const SymInt& b) {
  if (!a.is_known() || !b.is_known()) return SymInt::unknown();
  auto ca = a.constant(), cb = b.constant();
  if (cb && *cb == 0) return SymInt::unknown();
  if (ca && cb) return SymInt(floor_mod_int(*ca, *cb));
  if (a == b) return SymInt(0);
  if (cb && *cb > 0) {
    int64_t r = 0;
    for (const auto& [m, c] : terms_of(a)) {
      if (m.empty()) {
        r = c;
      } else if (c % *cb != 0) {
        return atom(AtomKind::Mod, a, b);
      }
    }
    return SymInt(floor_mod_int(r, *cb));
  }
  return atom(AtomKind::Mod, a, b);
}

namespace {
SymInt min_max(const SymInt& a, const SymInt& b, bool is_min) {
  if (!a.is_known() || !b.is_known()) return SymInt::unknown();
  auto ca = a.constant(), cb = b.constant();
  if (ca && cb) return SymInt(is_min ? std::min(*ca, *cb) : std::max(*ca, *cb));
  if (a == b) return a;
  if (surely_at_least(a, b)) return is_min ? b : a;
  if (surely_at_least(b, a)) return is_min ? a : b;
  bool swap = b.str() < a.str();  // commutative: one canonical order
  return atom(is_min ? AtomKind::Min : AtomKind::Max, swap ? b : a, swap ? a : b);
}
}  // namespace

SymInt sym_min(const SymInt& a, const SymInt& b) {
  return min_max(a, b, true);
}

SymInt sym_max(const SymInt& a, const SymInt& b) {
  return min_max(a, b, false);
}

namespace {
// A lower bound of d over bindings of its symbols to sizes >= 1, when one is evident.
std::optional<int64_t> lower_bound(const SymInt& d) {
  if (!d.is_known()) return std::nullopt;
  // Symbols are sizes >= 1; other atoms (quotients, min, max of sizes) are >= 0.
  int64_t low = 0;
  for (const auto& [m, c] : terms_of(d)) {
    if (m.empty()) {
      low += c;
      continue;
    }
    if (c < 0) return std::nullopt;
    bool all_symbols = std::all_of(m.begin(), m.end(),
                                   [](const AtomPtr& x) { return x->kind == AtomKind::Symbol; });
    if (all_symbols) low += c;
  }
  return low;
}
}  // namespace

bool surely_greater(const SymInt& a, const SymInt& b) {
  auto low = lower_bound(a - b);
  return low && *low > 0;
}

bool surely_at_least(const SymInt& a, const SymInt& b) {
  auto low = lower_bound(a - b);
  return low && *low >= 0;
}

}  // namespace eqfuse::ir
