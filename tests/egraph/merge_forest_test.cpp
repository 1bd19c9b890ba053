// The merge log and the forest read from it: the path between two e-nodes is the chain of
// merges, each with the origin current when it was made; rebuild's merges are congruence.
#include "egraph/merge_forest.h"

#include <catch2/catch.hpp>
#include <random>

#include "egraph/term.h"

using namespace eqfuse::egraph;

namespace {

std::vector<std::string> origins(const std::vector<MergeRecord>& path) {
  std::vector<std::string> out;
  for (const MergeRecord& m : path)
    out.push_back(m.origin == kNoOrigin ? "-" : std::string(symbol_name(m.origin)));
  return out;
}

}  // namespace

TEST_CASE("the path between two e-nodes is the chain of merges, in order", "[egraph][fast]") {
  EGraph g;
  g.record_merges(true);
  EClassId a = add_term(g, "a"), b = add_term(g, "b"), c = add_term(g, "c"), d = add_term(g, "d"),
           e = add_term(g, "e");
  {
    OriginScope r1(g, intern("r1"));
    CHECK(g.merge(a, b));
    CHECK_FALSE(g.merge(b, a));  // already one class: not logged
  }
  {
    OriginScope r2(g, intern("r2"));
    g.merge(c, d);
  }
  {
    OriginScope r3(g, intern("r3"));
    g.merge(d, b);
  }
  g.rebuild();
  CHECK(g.merges().size() == 3);
  MergeForest forest(g);
  CHECK(origins(forest.path(a, c)) == std::vector<std::string>{"r1", "r3", "r2"});
  CHECK(origins(forest.path(c, a)) == std::vector<std::string>{"r2", "r3", "r1"});
  CHECK(origins(forest.path(a, b)) == std::vector<std::string>{"r1"});
  CHECK(forest.path(a, a).empty());
  CHECK(forest.path(a, e).empty());  // different classes
}

TEST_CASE("rebuild's merges are logged as congruence", "[egraph][fast]") {
  EGraph g;
  g.record_merges(true);
  EClassId fa = add_term(g, "(f a)"), fb = add_term(g, "(f b)");
  EClassId a = add_term(g, "a"), b = add_term(g, "b");
  {
    OriginScope rule(g, intern("a-is-b"));
    g.merge(a, b);
  }
  g.rebuild();
  REQUIRE(g.find(fa) == g.find(fb));
  EGraph quiet;  // not asked to: nothing logged
  quiet.merge(add_term(quiet, "a"), add_term(quiet, "b"));
  CHECK(quiet.merges().empty());
  std::vector<MergeRecord> path = MergeForest(g).path(fa, fb);
  CHECK(origins(path) == std::vector<std::string>{kCongruenceOrigin});
}

TEST_CASE("every class's merges form a tree: a path joins any two of its nodes", "[egraph][fast]") {
  std::mt19937 rng(7);
  EGraph g;
  g.record_merges(true);
  std::vector<EClassId> ids;
  for (int i = 0; i < 60; ++i) ids.push_back(add_term(g, "x" + std::to_string(i)));
  for (int i = 0; i < 40; ++i) {
    OriginScope scope(g, intern("m" + std::to_string(i)));
    g.merge(ids[rng() % ids.size()], ids[rng() % ids.size()]);
  }
  g.rebuild();
  MergeForest forest(g);
  for (EClassId x : ids)
    for (EClassId y : ids) {
      std::vector<MergeRecord> path = forest.path(x, y);
      if (x == y || g.find(x) != g.find(y)) {
        CHECK(path.empty());
        continue;
      }
      // A chain from x to y: each step shares a node with the next, ends at x and at y.
      REQUIRE(!path.empty());
      NodeId at = x;
      for (const MergeRecord& m : path) {
        REQUIRE((m.a == at || m.b == at));
        at = m.a == at ? m.b : m.a;
      }
      CHECK(at == y);
    }
}
