// Property tests of the core e-graph against an independent, slow congruence-closure model.
#include "egraph/egraph.h"

#include <catch2/catch.hpp>
#include <map>
#include <random>
#include <set>

#include "egraph/term.h"

using namespace eqfuse::egraph;

namespace {

// The slow model: terms as (op, child term indices), a naive union-find, and congruence closure
// by repeated all-pairs comparison until nothing changes.
struct SlowModel {
  struct Term {
    Symbol op;
    std::vector<size_t> children;
  };
  std::vector<Term> terms;
  std::vector<size_t> parent;
  size_t find(size_t i) {
    while (parent[i] != i) i = parent[i];
    return i;
  }
  void unite(size_t a, size_t b) { parent[find(a)] = find(b); }
  size_t add(Symbol op, std::vector<size_t> children) {
    terms.push_back({op, std::move(children)});
    parent.push_back(parent.size());
    return terms.size() - 1;
  }
  void close() {
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t i = 0; i < terms.size(); ++i)
        for (size_t j = i + 1; j < terms.size(); ++j) {
          if (find(i) == find(j) || terms[i].op != terms[j].op ||
              terms[i].children.size() != terms[j].children.size())
            continue;
          bool eq = true;
          for (size_t k = 0; k < terms[i].children.size() && eq; ++k)
            eq = find(terms[i].children[k]) == find(terms[j].children[k]);
          if (eq) {
            unite(i, j);
            changed = true;
          }
        }
    }
  }
};

// The invariants that hold after rebuild, checked from scratch.
void check_invariants(const EGraph& g) {
  REQUIRE(g.clean());
  std::map<std::tuple<Symbol, AttrId, std::vector<EClassId>>, EClassId> seen;
  size_t live = 0;
  std::set<EClassId> classes;
  for (NodeId n = 0; n < g.num_node_slots(); ++n) {
    if (!g.is_live(n)) continue;
    ++live;
    std::vector<EClassId> kids(g.children(n).begin(), g.children(n).end());
    for (EClassId c : kids) REQUIRE(g.find(c) == c);  // every child canonical
    auto key = std::make_tuple(g.op(n), g.attrs(n), kids);
    // No two canonical nodes with equal forms: congruence closure and hash-cons agree.
    REQUIRE(seen.emplace(key, g.find(n)).second);
    REQUIRE(g.lookup(g.op(n), g.attrs(n), kids) == g.find(n));
    classes.insert(g.find(n));
  }
  REQUIRE(live == g.num_nodes());
  REQUIRE(classes.size() == g.num_classes());
  REQUIRE(g.classes().size() == g.num_classes());
  size_t indexed = 0;
  for (EClassId c : g.classes()) {
    REQUIRE(g.find(c) == c);
    for (NodeId n : g.class_nodes(c)) {
      REQUIRE(g.find(n) == c);
      auto with_op = g.classes_with_op(g.op(n));
      REQUIRE(std::binary_search(with_op.begin(), with_op.end(), c));
      ++indexed;
    }
  }
  REQUIRE(indexed == live);
}

}  // namespace

TEST_CASE("random adds and unions keep congruence closure (slow checker)", "[egraph]") {
  std::mt19937 rng(12345);
  const Symbol ops[] = {intern("f"), intern("g"), intern("h"), intern("x"), intern("y")};
  for (int round = 0; round < 1500; ++round) {
    EGraph g;
    SlowModel model;
    std::vector<EClassId> ids;  // class returned for each model term
    int steps = 10 + static_cast<int>(rng() % 50);
    for (int s = 0; s < steps; ++s) {
      unsigned kind = rng() % 10;
      if (ids.size() < 3 || kind < 6) {
        Symbol op = ops[rng() % 5];
        size_t arity = ids.empty() ? 0 : (op == ops[3] || op == ops[4]) ? 0 : rng() % 3;
        std::vector<size_t> kids;
        std::vector<EClassId> kid_ids;
        for (size_t k = 0; k < arity; ++k) {
          kids.push_back(rng() % ids.size());
          kid_ids.push_back(ids[kids.back()]);
        }
        ids.push_back(g.add(op, kid_ids));
        model.add(op, kids);
      } else {
        size_t a = rng() % ids.size(), b = rng() % ids.size();
        g.merge(ids[a], ids[b]);
        model.unite(a, b);
      }
      if (rng() % 8 == 0) g.rebuild();
    }
    g.rebuild();
    model.close();
    check_invariants(g);
    for (size_t i = 0; i < ids.size(); ++i)
      for (size_t j = 0; j < ids.size(); ++j)
        REQUIRE((g.find(ids[i]) == g.find(ids[j])) == (model.find(i) == model.find(j)));
  }
}

TEST_CASE("congruence propagates up a deep chain", "[egraph]") {
  EGraph g;
  Symbol f = intern("f");
  EClassId a = add_term(g, "a"), b = add_term(g, "b");
  EClassId fa = a, fb = b;
  for (int i = 0; i < 200; ++i) {
    fa = g.add(f, std::vector<EClassId>{fa});
    fb = g.add(f, std::vector<EClassId>{fb});
  }
  CHECK(g.num_classes() == 402);
  g.merge(a, b);
  g.rebuild();
  CHECK(g.find(fa) == g.find(fb));
  CHECK(g.num_classes() == 201);
  CHECK(g.num_nodes() == 202);
  check_invariants(g);
}

TEST_CASE("a node found congruent to another reads as the one kept", "[egraph]") {
  EGraph g;
  Symbol f = intern("f");
  EClassId a = add_term(g, "a"), b = add_term(g, "b");
  EClassId fa = g.add(f, std::vector<EClassId>{a}), fb = g.add(f, std::vector<EClassId>{b});
  g.rebuild();
  NodeId na = g.class_nodes(fa)[0], nb = g.class_nodes(fb)[0];
  CHECK(g.live_node(na) == na);
  CHECK(g.live_node(kNoId) == kNoId);
  g.merge(a, b);
  g.rebuild();
  REQUIRE(g.is_live(na) != g.is_live(nb));  // congruence kept one of f(a), f(b)
  NodeId kept = g.is_live(na) ? na : nb;
  CHECK(g.live_node(na) == kept);
  CHECK(g.live_node(nb) == kept);
}

TEST_CASE("terms with attributes and hash-consing", "[egraph]") {
  EGraph g;
  EClassId t1 = add_term(g, "(Transpose :perm (0 2 1) x)");
  EClassId t2 = add_term(g, "(Transpose x :perm (0  2 1))");
  EClassId t3 = add_term(g, "(Transpose :perm (1 0 2) x)");
  CHECK(t1 == t2);
  CHECK(t1 != t3);
  g.rebuild();
  CHECK(g.num_nodes() == 3);
  CHECK_THROWS_WITH(add_term(g, "(f ?x)"), Catch::Contains("<term>:1:4: error: pattern variable"));
  CHECK_THROWS_WITH(add_term(g, "(f :k)"), Catch::Contains("has no value"));
}
