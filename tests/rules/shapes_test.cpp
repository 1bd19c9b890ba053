// The systematic enumeration of rules/shapes.h: every rank, every attribute value, size-1 and
// broadcast dims, distinct sizes for dims a rule does not tie together, a reported cap.
#include <catch2/catch.hpp>

#include "ir/attr_text.h"
#include "rules/parser.h"
#include "rules/shapes.h"

using namespace eqfuse;
using namespace eqfuse::rules;

namespace {

Rule one_rule(const std::string& text) {
  RuleSet set = parse_rules(text);
  REQUIRE(set.rules.size() == 1);
  return set.rules[0];
}

std::vector<int64_t> dims(const RuleBinding& b, const std::string& v) {
  return b.types.at(v).shape.static_dims();
}

}  // namespace

TEST_CASE("every permutation of every rank is tried", "[rules][shapes][fast]") {
  Rule r = one_rule("(rewrite t (Transpose :perm ?p (Relu ?x)) (Relu (Transpose :perm ?p ?x)))");
  Enumeration en = enumerate_bindings(r);
  std::set<std::string> perms;
  for (const RuleBinding& b : en.bindings) {
    const auto& p = std::get<std::vector<int64_t>>(b.attrs.at("p"));
    CHECK(p.size() == dims(b, "x").size());
    std::vector<int64_t> sorted = p;
    std::sort(sorted.begin(), sorted.end());
    bool is_perm = true;
    for (size_t i = 0; i < sorted.size(); ++i) is_perm = is_perm && sorted[i] == int64_t(i);
    if (is_perm) perms.insert(ir::encode_attr(b.attrs.at("p")));
  }
  // 1 + 1 + 2 + 6 + 24 permutations of ranks 0 to 4 (and whatever else Transpose accepts,
  // such as (-1) at rank 1).
  CHECK(perms.size() == 34);
  CHECK(perms.count("(3 2 1 0)"));
  CHECK(perms.count("(0 2 1)"));
  CHECK(en.coverage.attrs.at("p").size() >= 34);
  CHECK(en.coverage.ranks.at("x") == std::set<int64_t>{0, 1, 2, 3, 4});
  CHECK(en.coverage.uncovered == 0);
}

TEST_CASE("every axis, negative forms included, at every rank", "[rules][shapes][fast]") {
  Rule r =
      one_rule("(rewrite c (Concat :axis ?k (Neg ?a) (Neg ?b)) (Neg (Concat :axis ?k ?a ?b)))");
  std::set<std::pair<size_t, int64_t>> seen;
  for (const RuleBinding& b : representative_bindings(r))
    seen.insert({dims(b, "a").size(), std::get<int64_t>(b.attrs.at("k"))});
  for (int64_t rank = 1; rank <= 4; ++rank)
    for (int64_t axis = -rank; axis < rank; ++axis) {
      INFO("rank " << rank << " axis " << axis);
      CHECK(seen.count({static_cast<size_t>(rank), axis}));
    }
}

TEST_CASE("size-1 dims and broadcasting at every position and rank", "[rules][shapes][fast]") {
  Rule r = one_rule("(rewrite add-comm (Add ?a ?b) (Add ?b ?a))");
  Enumeration en = enumerate_bindings(r);
  std::set<std::pair<size_t, size_t>> ranks;
  std::set<size_t> broadcast_positions;  // from the right, a 1 in ?a against a larger ?b dim
  for (const RuleBinding& b : en.bindings) {
    std::vector<int64_t> a = dims(b, "a"), c = dims(b, "b");
    ranks.insert({a.size(), c.size()});
    for (size_t j = 0; j < std::min(a.size(), c.size()); ++j)
      if (a[a.size() - 1 - j] == 1 && c[c.size() - 1 - j] > 1) broadcast_positions.insert(j);
  }
  CHECK(ranks.size() == 25);  // every pair of ranks 0..4
  CHECK(broadcast_positions == std::set<size_t>{0, 1, 2, 3});
  CHECK(en.coverage.dim_sizes.count(1));
  // Deterministic.
  Enumeration again = enumerate_bindings(r);
  REQUIRE(again.bindings.size() == en.bindings.size());
  for (size_t i = 0; i < en.bindings.size(); ++i)
    CHECK(dims(again.bindings[i], "a") == dims(en.bindings[i], "a"));
}

TEST_CASE("dims a rule does not tie get different sizes", "[rules][shapes][fast]") {
  Rule r = one_rule(
      "(rewrite mm (MatMul (MatMul ?a ?b) ?c) (MatMul ?a (MatMul ?b ?c)) "
      ":when (rank ?a 2) (rank ?b 2) (rank ?c 2))");
  Enumeration en = enumerate_bindings(r);
  REQUIRE_FALSE(en.bindings.empty());
  bool distinct = false;
  for (const RuleBinding& b : en.bindings) {
    auto a = dims(b, "a"), m = dims(b, "b"), c = dims(b, "c");
    CHECK(a[1] == m[0]);
    CHECK(m[1] == c[0]);
    // Three sizes > 1 for four dims: the inner dims differ from each other and from the outer.
    distinct = distinct || (a[0] != a[1] && a[1] != m[1] && m[1] != c[1] && a[0] > 1 && a[1] > 1 &&
                            m[1] > 1 && c[1] > 1);
  }
  CHECK(distinct);
  CHECK(en.coverage.ranks.at("a") == std::set<int64_t>{2});
}

TEST_CASE("the cap is reported when it cuts coverage short", "[rules][shapes][fast]") {
  Rule r = one_rule("(rewrite add-comm (Add ?a ?b) (Add ?b ?a))");
  ShapeChoice small;
  small.wanted = 3;
  Enumeration en = enumerate_bindings(r, small);
  CHECK(en.bindings.size() == 3);
  CHECK(en.coverage.uncovered > 0);
  CHECK(en.coverage.str().find("cap 3") != std::string::npos);
}

TEST_CASE("two attribute variables meet in every combination", "[rules][shapes][fast]") {
  Rule r = one_rule(
      "(rewrite tt (Transpose :perm ?q (Transpose :perm ?p ?x)) "
      "(Transpose :perm ?p (Transpose :perm ?q ?x)) :when (rank ?x 3))");
  Enumeration en = enumerate_bindings(r);
  std::set<std::pair<std::string, std::string>> pairs;
  for (const RuleBinding& b : en.bindings)
    pairs.insert({ir::encode_attr(b.attrs.at("p")), ir::encode_attr(b.attrs.at("q"))});
  CHECK(pairs.size() == 36);  // all pairs of the six rank-3 permutations
  CHECK(pairs.count({"(1 2 0)", "(1 0 2)"}));
  CHECK(en.coverage.unseparated.empty());
}

TEST_CASE("every two dims not forced equal get different sizes, even at rank 4",
          "[rules][shapes][fast]") {
  // At rank 4 the general binding (2,4,3,2) is at the element cap: dims 0 and 3 share a size.
  Rule r = one_rule("(rewrite relu-twice (Relu (Relu ?x)) (Relu ?x) :when (rank ?x 4))");
  Enumeration en = enumerate_bindings(r);
  for (size_t i = 0; i < 4; ++i)
    for (size_t j = i + 1; j < 4; ++j) {
      bool apart = false;
      for (const RuleBinding& b : en.bindings) {
        auto d = dims(b, "x");
        apart = apart || (d[i] != d[j] && d[i] > 1 && d[j] > 1);
      }
      INFO("dims " << i << " and " << j);
      CHECK(apart);
    }
  CHECK(en.coverage.unseparated.empty());
  // Two kernels' output channels, tied by nothing, are told apart (TASO's grouped-Conv rule is
  // wrong exactly when they differ).
  Rule c = one_rule(
      "(rewrite cc (Concat :axis 1 (Conv ?x7 ?w10) (Conv ?x8 ?w11)) "
      "(Concat :axis 1 (Conv ?x7 ?w10) (Conv ?x8 ?w11)) "
      ":when (rank ?x7 4) (rank ?x8 4) (rank ?w10 4) (rank ?w11 4))");
  bool apart = false;
  for (const RuleBinding& b : enumerate_bindings(c).bindings) {
    auto a = dims(b, "w10"), w = dims(b, "w11");
    apart = apart || (a[0] != w[0] && a[0] > 1 && w[0] > 1);
  }
  CHECK(apart);
}

TEST_CASE("forced-equal dims are not reported as unseparated", "[rules][shapes][fast]") {
  Rule r = one_rule(
      "(rewrite mm (MatMul (MatMul ?a ?b) ?c) (MatMul ?a (MatMul ?b ?c)) "
      ":when (rank ?a 2) (rank ?b 2) (rank ?c 2))");
  CHECK(enumerate_bindings(r).coverage.unseparated.empty());
}
