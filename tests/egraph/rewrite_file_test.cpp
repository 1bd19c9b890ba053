#include "egraph/rewrite_file.h"

#include <catch2/catch.hpp>

#include "egraph/runner.h"
#include "egraph/term.h"

using namespace eqfuse::egraph;

TEST_CASE("rule files: rewrite and birewrite", "[rewrite_file]") {
  auto rules = parse_rewrites(
      "; comment\n(rewrite comm (+ ?a ?b) (+ ?b ?a))\n(birewrite assoc (+ ?a (+ ?b ?c)) (+ (+ ?a "
      "?b) ?c))\n");
  REQUIRE(rules.size() == 3);
  CHECK(rules[0].name == "comm");
  CHECK(rules[1].name == "assoc");
  CHECK(rules[2].name == "assoc-rev");
  EGraph g;
  add_term(g, "(+ a (+ b c))");
  run(g, rules);
  CHECK(g.num_classes() == 7);
}

TEST_CASE("rule file errors point at the offending token", "[rewrite_file]") {
  CHECK_THROWS_WITH(parse_rewrites("(rewrite r (+ ?a ?b) (+ ?c ?a))", "f.rules"),
                    Catch::Contains("f.rules:1:25: error: variable '?c' is not bound"));
  CHECK_THROWS_WITH(parse_rewrites("(rewrit r a b)", "f.rules"),
                    Catch::Contains("f.rules:1:2: error: unknown form 'rewrit'"));
  CHECK_THROWS_WITH(parse_rewrites("(rewrite r a)", "f.rules"),
                    Catch::Contains("f.rules:1:1: error: expected (rewrite NAME LHS RHS)"));
  CHECK_THROWS_WITH(parse_rewrites("(rewrite r a b)\n(rewrite r b a)", "f.rules"),
                    Catch::Contains("f.rules:2:10: error: rule 'r' is defined twice"));
  CHECK_THROWS_WITH(parse_rewrites("(rewrite r a b :when (> ?a 0))", "f.rules"),
                    Catch::Contains("f.rules:1:16: error: option ':when' is not supported"));
  CHECK_THROWS_WITH(parse_rewrites("(birewrite r (f ?a ?b) (g ?a))", "f.rules"),
                    Catch::Contains("f.rules:1:20: error: variable '?b' is not bound"));
  CHECK_THROWS_WITH(parse_rewrites("(rewrite r (f ?a) (g ?a)", "f.rules"),
                    Catch::Contains("f.rules:1:1: error: unclosed '('"));
}
