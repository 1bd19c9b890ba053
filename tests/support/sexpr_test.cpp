#include "support/sexpr.h"

#include <catch2/catch.hpp>

using eqfuse::Error;
using eqfuse::parse_sexpr;
using eqfuse::parse_sexprs;
using eqfuse::Sexpr;

TEST_CASE("sexpr reads atoms of every kind with their locations") {
  auto forms =
      parse_sexprs("(rewrite comm ; a comment\n  (+ ?a ?b) :when -3 1.5 \"s\\\"q\")", "r.rules");
  REQUIRE(forms.size() == 1);
  const Sexpr& f = forms[0];
  REQUIRE(f.is_list());
  REQUIRE(f.items.size() == 7);
  CHECK(f.items[0].is_symbol("rewrite"));
  CHECK(f.items[2].is_list());
  CHECK(f.items[2].where.line == 2);
  CHECK(f.items[2].where.column == 3);
  CHECK(f.items[2].items[1].kind == Sexpr::Kind::Var);
  CHECK(f.items[2].items[1].text == "a");
  CHECK(f.items[3].kind == Sexpr::Kind::Keyword);
  CHECK(f.items[3].text == "when");
  CHECK(f.items[4].kind == Sexpr::Kind::Integer);
  CHECK(f.items[4].integer == -3);
  CHECK(f.items[5].kind == Sexpr::Kind::Float);
  CHECK(f.items[5].number == 1.5);
  CHECK(f.items[6].kind == Sexpr::Kind::String);
  CHECK(f.items[6].text == "s\"q");
  CHECK(f.str() == "(rewrite comm (+ ?a ?b) :when -3 1.5 \"s\\\"q\")");
  CHECK(f.where.file == "r.rules");
}

TEST_CASE("sexpr symbols that look like operators stay symbols") {
  auto e = parse_sexpr("(- a -b <= +)");
  CHECK(e.items[0].kind == Sexpr::Kind::Symbol);
  CHECK(e.items[2].kind == Sexpr::Kind::Symbol);
  CHECK(e.items[3].kind == Sexpr::Kind::Symbol);
  CHECK(e.items[4].kind == Sexpr::Kind::Symbol);
  CHECK(parse_sexpr("-inf").kind == Sexpr::Kind::Float);
  CHECK(parse_sexpr("1e3").number == 1000.0);
}

TEST_CASE("sexpr errors carry file:line:col and a caret") {
  try {
    parse_sexprs("(a b)\n(c (d e)", "x.rules");
    FAIL("no error");
  } catch (const Error& e) {
    std::string text = e.what();
    CHECK(text.find("x.rules:2:1: error: unclosed '('") == 0);
    CHECK(text.find("\n  (c (d e)\n  ^") != std::string::npos);
    CHECK(e.exit_code() == 2);
  }
  CHECK_THROWS_WITH(parse_sexprs("(a))", "y"), Catch::Contains("y:1:4: error: unexpected ')'"));
  CHECK_THROWS_WITH(parse_sexprs("(a \"xx", "y"), Catch::Contains("y:1:4: error: unterminated"));
  CHECK_THROWS_WITH(parse_sexprs("(a ? b)", "y"), Catch::Contains("y:1:4"));
  CHECK_THROWS_WITH(parse_sexpr("a b", "t"), Catch::Contains("t:1:3: error: expected one form"));
  CHECK_THROWS_WITH(parse_sexpr("  ", "t"), Catch::Contains("expected one form"));
}

TEST_CASE("sexpr_error quotes the node's line") {
  auto forms = parse_sexprs("(ok)\n(rewrite bad (+ ?a))", "f");
  Error e = eqfuse::sexpr_error(forms[1].items[2], "wrong arity");
  std::string text = e.what();
  CHECK(text.find("f:2:14: error: wrong arity") == 0);
  CHECK(text.find("\n  (rewrite bad (+ ?a))\n               ^") != std::string::npos);
}
