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
  // Provenance is part of the bytes: the rules' names tag the nodes they made.
  CHECK(one.find("\"origin\":\"comm-add\"") != std::string::npos);
  CHECK(one.find("\"origin\":\"dist\"") != std::string::npos);
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

TEST_CASE("each e-node records the rule that created it", "[serialize][provenance]") {
  EGraph g;
  EClassId root = add_term(g, "(* a (+ b c))");
  auto rules = parse_rewrites(
      "(rewrite comm-add (+ ?a ?b) (+ ?b ?a))\n"
      "(rewrite dist (* ?a (+ ?b ?c)) (+ (* ?a ?b) (* ?a ?c)))\n");
  RunnerOptions opts;
  opts.limits.iterations = 1;
  run(g, rules, opts);
  // The origin of the node written `term` (its children are classes already there).
  auto origin_of = [&](const char* term) {
    eqfuse::Sexpr t = eqfuse::parse_sexpr(term);
    std::vector<EClassId> kids;
    for (size_t i = 1; i < t.items.size(); ++i) kids.push_back(add_term(g, t.items[i].str()));
    EClassId cls = g.lookup(intern(t.items[0].text), kNoAttrs, kids);
    REQUIRE(cls != kNoId);
    for (NodeId n : g.class_nodes(cls))
      if (symbol_name(g.op(n)) == t.items[0].text) {
        auto ch = g.children(n);
        bool same = ch.size() == kids.size();
        for (size_t i = 0; same && i < kids.size(); ++i) same = g.find(ch[i]) == g.find(kids[i]);
        if (same)
          return g.origin(n) == kNoOrigin ? std::string("input")
                                          : std::string(symbol_name(g.origin(n)));
      }
    return std::string("not found");
  };
  CHECK(origin_of("(* a (+ b c))") == "input");
  CHECK(origin_of("(+ b c)") == "input");
  CHECK(origin_of("(+ c b)") == "comm-add");
  CHECK(origin_of("(* a b)") == "dist");
  CHECK(origin_of("(+ (* a b) (* a c))") == "dist");
  // Equal nodes made later keep their first creator, and a round trip keeps every origin.
  SerializedEGraph s = to_serialized(g, {root});
  EGraph h;
  add_serialized(h, parse_serialized_egraph(serialized_egraph_to_json(s)));
  CHECK(serialized_egraph_to_json(to_serialized(h, {})).find("\"origin\":\"dist\"") !=
        std::string::npos);
  size_t tagged = 0;
  for (const SerializedNode& n : s.nodes) tagged += !n.origin.empty();
  SerializedEGraph back = to_serialized(h, {});
  size_t tagged_back = 0;
  for (const SerializedNode& n : back.nodes) tagged_back += !n.origin.empty();
  CHECK(tagged > 0);
  CHECK(tagged_back == tagged);
}

TEST_CASE("an origin that is not a string is an error naming the node", "[egraph][fast]") {
  const char* text = R"({"nodes": {"n0": {"op": "a", "eclass": "c0", "children": []},
                                   "n1": {"op": "b", "eclass": "c1", "children": [], "origin": 7}}})";
  CHECK_THROWS_WITH(parse_serialized_egraph(text, "bad.json"),
                    Catch::Contains("bad.json") && Catch::Contains("n1") &&
                        Catch::Contains("\"origin\" must be a string"));
  const char* ok = R"({"nodes": {"n0": {"op": "a", "eclass": "c0", "origin": null}}})";
  CHECK(parse_serialized_egraph(ok).nodes.at(0).origin.empty());
}
