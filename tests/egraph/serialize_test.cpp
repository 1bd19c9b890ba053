#include "egraph/serialize.h"

#include <catch2/catch.hpp>

#include "egraph/rewrite_file.h"
#include "egraph/runner.h"
#include "egraph/term.h"

using namespace eqfuse::egraph;

namespace {
std::string saturated_json(int threads) {
  EGraph g;
  EClassId root = add_term(g, "(* (+ a (+ b (+ c d))) (+ e (+ f g)))");
  auto rules = parse_rewrites(
      "(rewrite comm-add (+ ?a ?b) (+ ?b ?a))\n(rewrite comm-mul (* ?a ?b) (* ?b ?a))\n"
      "(rewrite assoc-add (+ ?a (+ ?b ?c)) (+ (+ ?a ?b) ?c))\n"
      "(rewrite dist (* ?a (+ ?b ?c)) (+ (* ?a ?b) (* ?a ?c)))\n");
  RunnerOptions opts;
  opts.threads = threads;
  opts.limits.iterations = 6;
  run(g, rules, opts);
  return serialized_egraph_to_json(to_serialized(g, {root}));
}
}  // namespace

TEST_CASE("serialized e-graphs are byte-identical across runs and thread counts", "[serialize]") {
  std::string one = saturated_json(1);
  CHECK(one.size() > 100000);
  CHECK(one == saturated_json(1));
  CHECK(one == saturated_json(2));
  CHECK(one == saturated_json(3));
}

TEST_CASE("egraph-serialize round trip keeps the e-graph", "[serialize]") {
  EGraph g;
  EClassId root = add_term(g, "(f (T :perm (1 0) x) (g x y))");
  EClassId gx = add_term(g, "(g x y)");
  g.merge(gx, add_term(g, "(h (T :perm (1 0) x))"));
  g.rebuild();
  SerializedEGraph s = to_serialized(g, {root});
  SerializedEGraph back = parse_serialized_egraph(serialized_egraph_to_json(s));
  EGraph h;
  auto roots = add_serialized(h, back);
  REQUIRE(roots.size() == 1);
  CHECK(h.num_nodes() == g.num_nodes());
  CHECK(h.num_classes() == g.num_classes());
  CHECK(h.find(roots[0]) == h.find(add_term(h, "(f (T :perm (1 0) x) (h (T :perm (1 0) x)))")));
  h.rebuild();
  CHECK(serialized_egraph_to_json(to_serialized(h, roots)).size() ==
        serialized_egraph_to_json(s).size());
  std::string dot = to_dot(g, {root});
  CHECK(dot.find("digraph egraph") == 0);
  CHECK(dot.find("label=\"T :perm (1 0)\"") != std::string::npos);
}
