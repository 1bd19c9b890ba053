// Mandatory e-classes (extract/mandatory.h): on hand-made problems, and against brute force on
// random acyclic ones, where removing-and-propagating must find exactly the e-classes that every
// term contains.
#include <catch2/catch.hpp>
#include <random>
#include <set>

#include "extract/mandatory.h"

using namespace eqfuse::extract;

namespace {

std::set<std::pair<ClassIndex, ClassIndex>> as_set(const std::vector<MandatoryPair>& pairs) {
  std::set<std::pair<ClassIndex, ClassIndex>> out;
  for (const auto& p : pairs) out.insert({p.needed, p.by});
  return out;
}

// The transitive closure of the pairs: (D, c) for every D that c needs through a chain.
std::set<std::pair<ClassIndex, ClassIndex>> closure(std::set<std::pair<ClassIndex, ClassIndex>> s) {
  for (bool grew = true; grew;) {
    grew = false;
    for (auto [d, c] : std::set(s))
      for (auto [d2, c2] : std::set(s))
        if (c2 == d && s.insert({d2, c}).second) grew = true;
  }
  return s;
}

// Whether e-class c has a term (acyclic, as the problem is) that avoids e-class d.
bool has_term_avoiding(const ExtractionProblem& p, ClassIndex c, ClassIndex d) {
  if (c == d) return false;
  for (NodeIndex n : p.nodes(c)) {
    bool ok = true;
    for (ClassIndex k : p.children(n)) ok = ok && has_term_avoiding(p, k, d);
    if (ok) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("an e-class that every alternative leads to is mandatory for the root", "[extract]") {
  // R has three alternatives; each reaches X (directly or through Y); only the last avoids Z.
  ExtractionProblem p;
  ClassIndex r = p.add_class(), a = p.add_class(), b = p.add_class(), y = p.add_class();
  ClassIndex x = p.add_class(), z = p.add_class();
  p.add_node(r, 0, std::vector<ClassIndex>{a});
  p.add_node(r, 0, std::vector<ClassIndex>{b});
  p.add_node(a, 1, std::vector<ClassIndex>{x, z});
  p.add_node(b, 1, std::vector<ClassIndex>{y});
  p.add_node(y, 1, std::vector<ClassIndex>{x});
  p.add_node(x, 5, std::vector<ClassIndex>{});
  p.add_node(z, 5, std::vector<ClassIndex>{});
  p.add_root(r);
  auto pairs = as_set(mandatory_pairs(p));
  CHECK(pairs.count({x, r}) == 1);  // both alternatives need X
  CHECK(pairs.count({z, r}) == 0);  // b avoids Z
  CHECK(pairs.count({x, y}) == 1);
  CHECK(pairs.count({z, a}) == 1);
  // Reduced: X is needed by Y and Y by B, so (X, B) is implied and left out.
  CHECK(pairs.count({y, b}) == 1);
  CHECK(pairs.count({x, b}) == 0);
  CHECK(closure(pairs).count({x, b}) == 1);
}

TEST_CASE("only-roots fallback when the bit matrix does not fit, and the cap on pairs",
          "[extract]") {
  ExtractionProblem p;
  ClassIndex r = p.add_class(), a = p.add_class(), x = p.add_class();
  p.add_node(r, 0, std::vector<ClassIndex>{a});
  p.add_node(a, 0, std::vector<ClassIndex>{x});
  p.add_node(x, 1, std::vector<ClassIndex>{});
  p.add_root(r);
  MandatoryOptions no_matrix;
  no_matrix.max_matrix_bytes = 0;
  auto pairs = as_set(mandatory_pairs(p, no_matrix));
  CHECK(pairs == std::set<std::pair<ClassIndex, ClassIndex>>{{a, r}, {x, r}});
  // Capped: the search stops after the first e-class with pairs (a: needed by r), keeping it.
  MandatoryOptions capped;
  capped.max_pairs = 0;
  CHECK(as_set(mandatory_pairs(p, capped)) == std::set<std::pair<ClassIndex, ClassIndex>>{{a, r}});
}

TEST_CASE("an e-class kept alive only through a cycle is missed, never wrongly claimed",
          "[extract]") {
  // A = f(B) | g(X); B = k(A) | m(X). Every acyclic term of A or B contains X, but removing X
  // leaves f and k holding each other up, so propagation misses that: fewer rows, none wrong.
  // Nothing else is mandatory (A avoids B with g(X), B avoids A with m(X)).
  ExtractionProblem p;
  ClassIndex a = p.add_class(), b = p.add_class(), x = p.add_class();
  p.add_node(a, 0, std::vector<ClassIndex>{b});
  p.add_node(a, 1, std::vector<ClassIndex>{x});
  p.add_node(b, 0, std::vector<ClassIndex>{a});
  p.add_node(b, 1, std::vector<ClassIndex>{x});
  p.add_node(x, 1, std::vector<ClassIndex>{});
  p.add_root(a);
  CHECK(mandatory_pairs(p).empty());
}

TEST_CASE("on random acyclic problems the pairs are exactly what brute force finds", "[extract]") {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    ExtractionProblem p;
    const ClassIndex num_classes = 3 + rng() % 9;
    for (ClassIndex c = 0; c < num_classes; ++c) p.add_class();
    // E-class c's e-nodes have children among the e-classes after c: acyclic by construction.
    for (ClassIndex c = 0; c < num_classes; ++c) {
      const int num_nodes = 1 + static_cast<int>(rng() % 3);
      for (int i = 0; i < num_nodes; ++i) {
        std::vector<ClassIndex> kids;
        const ClassIndex later = num_classes - 1 - c;
        if (later > 0)
          for (uint32_t j = rng() % 3; j > 0; --j) kids.push_back(c + 1 + rng() % later);
        p.add_node(c, 1, kids);
      }
    }
    p.add_root(0);
    std::set<std::pair<ClassIndex, ClassIndex>> expected;
    for (ClassIndex c = 0; c < num_classes; ++c)
      for (ClassIndex d = 0; d < num_classes; ++d)
        if (d != c && !has_term_avoiding(p, c, d)) expected.insert({d, c});
    auto found = as_set(mandatory_pairs(p));
    INFO("trial " << trial);
    CHECK(closure(found) == expected);
    // Reduced: no pair follows from two others.
    for (auto [d, c] : found)
      for (auto [d2, c2] : found) CHECK_FALSE((d2 == d && c2 != c && found.count({c2, c}) == 1));
  }
}
