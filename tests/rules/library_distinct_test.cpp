// The library (rules/library/*.rules) holds at least 150 distinct rules: no two the same up to
// the names of their variables and the argument order of commutative ops. library_test.cpp
// compares the rules' normalized texts, which catches copies but not a rule written again with
// other variable names or with `(Add ?b ?a)` for `(Add ?a ?b)`; this test canonicalizes first.
//
// The canonical form of a rule is the least rendering of it over renamings of its variables,
// where a rendering sorts the operands of commutative ops, the (LHS root, RHS result) pairs of a
// multi-pattern rule and the conditions. Trying every renaming would be n!, so the variables are
// first colored by where they occur (op, argument position, or "any position" under a
// commutative op), which no renaming or reordering changes, and only renamings that keep the
// colors in order are tried. Two rules are the same exactly when their canonical forms are.
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ir/op_table.h"
#include "rules/parser.h"
#include "tests/test_data.h"

using namespace eqfuse;

namespace {

bool commutative_op(const std::string& op) {
  static const std::set<std::string> ops = {"Add",        "Mul",       "Max",       "Min", "Sum",
                                            "Mean",       "And",       "Or",        "Xor", "Equal",
                                            "BitwiseAnd", "BitwiseOr", "BitwiseXor"};
  return ops.count(op) > 0;
}

// Symmetric forms of the condition language (rules/condition.h).
bool commutative_expr(const std::string& head) {
  static const std::set<std::string> heads = {
      "and",        "or",       "=", "!=", "same-shape", "broadcastable",
      "same-dtype", "distinct", "+", "*",  "min",        "max"};
  return heads.count(head) > 0;
}

bool is_term_head(const std::string& head) {
  return head == "Proj" || ir::find_op(head) != nullptr;
}

// (> A B) is (< B A) and (>= A B) is (<= B A).
Sexpr flip_comparisons(Sexpr e) {
  if (!e.is_list()) return e;
  for (Sexpr& item : e.items) item = flip_comparisons(std::move(item));
  if (e.items.size() == 3 && (e.items[0].is_symbol(">") || e.items[0].is_symbol(">="))) {
    e.items[0].text = e.items[0].text == ">" ? "<" : "<=";
    std::swap(e.items[1], e.items[2]);
  }
  return e;
}

class Canonicalizer {
 public:
  explicit Canonicalizer(const rules::Rule& rule) : rule_(rule) {
    for (const rules::Condition& c : rule.conditions)
      conditions_.push_back(flip_comparisons(c.form));
  }

  std::string canonical() {
    // Where each variable occurs, written without variable names or commutative positions.
    for (size_t i = 0; i < rule_.lhs.size(); ++i) {
      contexts(rule_.lhs[i], "L", true);
      contexts(rule_.rhs[i], "R", true);
    }
    for (const Sexpr& c : conditions_) contexts(c, "C", false);
    std::vector<std::pair<std::string, std::string>> colored;  // (color, variable)
    for (auto& [var, where] : contexts_) {
      std::sort(where.begin(), where.end());
      std::string color;
      for (const std::string& w : where) color += w + "|";
      colored.emplace_back(color, var);
    }
    std::sort(colored.begin(), colored.end());
    // Groups of one color; a renaming gives the i-th variable (in this order) label i, with
    // the variables of each group permuted among themselves.
    std::vector<std::vector<std::string>> groups;
    for (size_t i = 0; i < colored.size(); ++i) {
      if (i == 0 || colored[i].first != colored[i - 1].first) groups.emplace_back();
      groups.back().push_back(colored[i].second);
    }
    size_t renamings = 1;
    for (auto& g : groups) {
      std::sort(g.begin(), g.end());
      for (size_t k = 2; k <= g.size(); ++k) renamings *= k;
    }
    if (renamings > 50000)
      FAIL(rule_.name << ": " << renamings << " renamings to try; refine the colors");
    std::string best;
    bool first = true;
    while (true) {
      labels_.clear();
      for (const auto& g : groups)
        for (const std::string& v : g) labels_[v] = "v" + std::to_string(labels_.size());
      std::string r = render();
      if (first || r < best) best = r;
      first = false;
      // Next renaming: the groups' permutations as an odometer.
      size_t k = 0;
      while (k < groups.size() && !std::next_permutation(groups[k].begin(), groups[k].end())) ++k;
      if (k == groups.size()) break;
    }
    return best;
  }

 private:
  void contexts(const Sexpr& e, const std::string& path, bool as_term) {
    if (e.kind == Sexpr::Kind::Var) {
      contexts_[e.text].push_back(path);
      return;
    }
    if (!e.is_list()) return;
    std::string head = !e.items.empty() && e.items[0].kind == Sexpr::Kind::Symbol
                           ? e.items[0].text
                           : std::string("list");
    bool term = as_term || is_term_head(head);
    bool comm = term ? commutative_op(head) : commutative_expr(head);
    size_t first = head == "list" ? 0 : 1;
    size_t child = 0;
    for (size_t i = first; i < e.items.size(); ++i) {
      const Sexpr& item = e.items[i];
      if (term && item.kind == Sexpr::Kind::Keyword && i + 1 < e.items.size()) {
        contexts(e.items[i + 1], path + "/" + head + ":" + item.text, false);
        ++i;
        continue;
      }
      std::string pos = comm ? "*" : std::to_string(child);
      ++child;
      contexts(item, path + "/" + head + "#" + pos, term);
    }
  }

  std::string term(const Sexpr& t) const {
    if (t.kind == Sexpr::Kind::Var) return "?" + labels_.at(t.text);
    if (!t.is_list()) return t.str();
    const std::string& op = t.items[0].text;
    std::string out = "(" + op;
    std::vector<std::string> children;
    for (size_t i = 1; i < t.items.size(); ++i) {
      if (t.items[i].kind == Sexpr::Kind::Keyword && i + 1 < t.items.size()) {
        out += " :" + t.items[i].text + " " + expr(t.items[i + 1]);
        ++i;
        continue;
      }
      children.push_back(term(t.items[i]));
    }
    if (commutative_op(op)) std::sort(children.begin(), children.end());
    for (const std::string& c : children) out += " " + c;
    return out + ")";
  }

  std::string expr(const Sexpr& e) const {
    if (e.kind == Sexpr::Kind::Var) return "?" + labels_.at(e.text);
    if (!e.is_list()) return e.str();
    bool headed = !e.items.empty() && e.items[0].kind == Sexpr::Kind::Symbol;
    if (headed && is_term_head(e.items[0].text)) return term(e);
    std::vector<std::string> args;
    for (size_t i = headed ? 1 : 0; i < e.items.size(); ++i) args.push_back(expr(e.items[i]));
    if (headed && commutative_expr(e.items[0].text)) std::sort(args.begin(), args.end());
    std::string out = "(" + (headed ? e.items[0].text : std::string());
    for (size_t i = 0; i < args.size(); ++i) out += (i == 0 && !headed ? "" : " ") + args[i];
    return out + ")";
  }

  std::string render() const {
    std::vector<std::string> pairs, conds;
    for (size_t i = 0; i < rule_.lhs.size(); ++i)
      pairs.push_back("(" + term(rule_.lhs[i]) + " => " + term(rule_.rhs[i]) + ")");
    std::sort(pairs.begin(), pairs.end());
    for (const Sexpr& c : conditions_) conds.push_back(expr(c));
    std::sort(conds.begin(), conds.end());
    conds.erase(std::unique(conds.begin(), conds.end()), conds.end());
    std::string out;
    for (const std::string& p : pairs) out += p + " ";
    out += ":when";
    for (const std::string& c : conds) out += " " + c;
    return out;
  }

  const rules::Rule& rule_;
  std::vector<Sexpr> conditions_;
  std::map<std::string, std::vector<std::string>> contexts_;
  std::map<std::string, std::string> labels_;
};

std::string canonical(const rules::Rule& rule) {
  return Canonicalizer(rule).canonical();
}

// The reverse direction of a birewrite (NAME-rev), which is not counted as a rule of its own.
bool is_reverse(const rules::Rule& r) {
  return r.from_birewrite && r.name.size() > 4 && r.name.ends_with("-rev");
}

bool birewrite_pair(const rules::Rule& a, const rules::Rule& b) {
  return a.from_birewrite && b.from_birewrite && a.file == b.file &&
         (a.name + "-rev" == b.name || b.name + "-rev" == a.name);
}

std::string describe(const rules::Rule& r) {
  return r.name + " (" + r.where.str() + ")";
}

struct Duplicate {
  const rules::Rule* a;
  const rules::Rule* b;
};

// Pairs of rules with one canonical form, a birewrite's two directions excepted.
std::vector<Duplicate> duplicates(const std::vector<rules::Rule>& rules,
                                  const std::vector<std::string>& forms) {
  std::map<std::string, std::vector<size_t>> by_form;
  for (size_t i = 0; i < rules.size(); ++i) by_form[forms[i]].push_back(i);
  std::vector<Duplicate> out;
  for (const auto& [form, ids] : by_form)
    for (size_t i = 0; i < ids.size(); ++i)
      for (size_t j = i + 1; j < ids.size(); ++j)
        if (!birewrite_pair(rules[ids[i]], rules[ids[j]]))
          out.push_back({&rules[ids[i]], &rules[ids[j]]});
  return out;
}

std::vector<rules::Rule> parse(const std::string& text) {
  return rules::parse_rules(text, "<test>").rules;
}

std::vector<std::string> forms(const std::vector<rules::Rule>& rules) {
  std::vector<std::string> out;
  for (const rules::Rule& r : rules) out.push_back(canonical(r));
  return out;
}

bool same(const std::string& text) {
  std::vector<rules::Rule> rules = parse(text);
  REQUIRE(rules.size() == 2);
  INFO(canonical(rules[0]) << "\n" << canonical(rules[1]));
  return canonical(rules[0]) == canonical(rules[1]);
}

}  // namespace

TEST_CASE("canonical forms ignore variable names and commutative argument order",
          "[rules][library]") {
  // Renamed, and the commutative operands of Add and Mul swapped.
  CHECK(same(R"(
    (rewrite a (Add (Mul ?x ?y) (Mul ?x ?z)) (Mul ?x (Add ?y ?z)))
    (rewrite b (Add (Mul ?c ?a) (Mul ?b ?a)) (Mul (Add ?b ?c) ?a)))"));
  // A variable's other occurrence decides which operand is which: sorting by names alone would
  // render these two differently.
  CHECK(same(R"(
    (rewrite a (Add (Mul ?a ?b) (Exp ?a)) (Mul ?b ?a))
    (rewrite b (Add (Exp ?a) (Mul ?b ?a)) (Mul ?b ?a)))"));
  // Conditions in another order, with > written as <, and with commutative arguments swapped.
  CHECK(same(R"(
    (rewrite a (MatMul ?a ?b) (MatMul ?a ?b) :when (rank ?a 2) (> (dim ?a 0) 1)
      (= (dim ?a 1) (dim ?b 0)))
    (rewrite b (MatMul ?p ?q) (MatMul ?p ?q) :when (= (dim ?q 0) (dim ?p 1)) (< 1 (dim ?p 0))
      (rank ?p 2)))"));
  // Attributes written or left at their defaults, variadic Sum in any order.
  CHECK(same(R"(
    (rewrite a (Sum ?x ?y (Softmax ?z)) (Sum ?x ?y ?z))
    (rewrite b (Sum (Softmax :axis -1 ?w) ?u ?v) (Sum ?v ?w ?u)))"));
  // Multi-pattern rules with their (root, result) pairs listed the other way round.
  CHECK(same(R"(
    (rewrite a (multi (Relu ?x) (Neg ?x)) (multi (Relu ?x) (Neg ?x)))
    (rewrite b (multi (Neg ?y) (Relu ?y)) (multi (Neg ?y) (Relu ?y))))"));

  // Different rules stay different.
  CHECK_FALSE(same(R"(
    (rewrite a (Sub ?a ?b) (Neg (Sub ?b ?a)))
    (rewrite b (Sub ?b ?a) (Neg (Sub ?b ?a))))"));
  CHECK_FALSE(same(R"(
    (rewrite a (Add (Mul ?a ?b) (Exp ?a)) (Mul ?b ?a))
    (rewrite b (Add (Mul ?a ?b) (Exp ?a)) (Mul ?b ?b)))"));
  CHECK_FALSE(same(R"(
    (rewrite a (Transpose :perm (1 0) ?x) ?x :when (rank ?x 2))
    (rewrite b (Transpose :perm (0 1) ?x) ?x :when (rank ?x 2)))"));
  CHECK_FALSE(same(R"(
    (rewrite a (Add ?x ?y) (Add ?y ?x) :when (rank ?x 2))
    (rewrite b (Add ?x ?y) (Add ?y ?x) :when (rank ?y 3)))"));
  CHECK_FALSE(same(R"(
    (rewrite a (Concat :axis 0 ?x ?y) (Concat :axis 0 ?y ?x))
    (rewrite b (Concat :axis 0 ?x ?y) (Concat :axis 0 ?x ?y)))"));
  CHECK_FALSE(same(R"(
    (rewrite a (MatMul ?a ?b) ?a :when (< (rank ?a) 3))
    (rewrite b (MatMul ?a ?b) ?a :when (< 3 (rank ?a))))"));

  // A birewrite is one rule, even where its two directions read the same (commutativity);
  // a rewrite repeating one of its directions is a duplicate.
  std::vector<rules::Rule> rules = parse(R"(
    (birewrite add-comm (Add ?a ?b) (Add ?b ?a))
    (birewrite sub-neg (Sub ?a ?b) (Add ?a (Neg ?b)))
    (rewrite sub-neg-again (Add (Neg ?y) ?x) (Sub ?x ?y)))");
  std::vector<Duplicate> found = duplicates(rules, forms(rules));
  REQUIRE(found.size() == 1);
  CHECK(found[0].a->name + " " + found[0].b->name == "sub-neg-rev sub-neg-again");
}

TEST_CASE("the rule library holds at least 150 distinct rules", "[rules][library]") {
  std::vector<rules::Rule> all;
  std::vector<std::filesystem::path> files;
  for (const auto& entry :
       std::filesystem::directory_iterator(test::source_dir() / "rules" / "library"))
    if (entry.path().extension() == ".rules") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  REQUIRE(!files.empty());
  for (const auto& f : files)
    for (rules::Rule& r : rules::parse_rule_file(f.string()).rules) all.push_back(std::move(r));

  std::vector<std::string> canon = forms(all);
  for (const Duplicate& d : duplicates(all, canon))
    FAIL_CHECK("duplicate rules: " << describe(*d.a) << " and " << describe(*d.b) << "\n  "
                                   << d.a->text << "\n  " << d.b->text);
  // A birewrite counts once: its reverse direction is left out of the count.
  std::set<std::string> distinct;
  for (size_t i = 0; i < all.size(); ++i)
    if (!is_reverse(all[i])) distinct.insert(canon[i]);
  INFO(distinct.size() << " distinct rules of " << all.size());
  CHECK(distinct.size() >= 150);
}
