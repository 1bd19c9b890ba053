// The rule language: what it accepts (normalized), and each error it rejects with
// file:line:col and a caret.
#include "rules/parser.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "rules/condition.h"

using namespace eqfuse;
using namespace eqfuse::rules;

namespace {

// The error message of parsing `text`, or "" when it parses.
std::string parse_error(const std::string& text) {
  try {
    parse_rules(text, "t.rules");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

void write_file(const std::filesystem::path& p, const std::string& text) {
  std::ofstream(p) << text;
}

}  // namespace

TEST_CASE("rules: a plain saturate rule and its normalized form") {
  RuleSet set = parse_rules("(rewrite relu-relu (Relu (Relu ?x)) (Relu ?x))");
  REQUIRE(set.rules.size() == 1);
  const Rule& r = set.rules[0];
  CHECK(r.name == "relu-relu");
  CHECK(r.group == "default");
  CHECK(r.class_vars == std::vector<std::string>{"x"});
  CHECK(r.text == "(rewrite relu-relu (Relu (Relu ?x)) (Relu ?x))");
  CHECK(r.where.line == 1);
}

TEST_CASE("rules: defaults are filled in and literals spelled canonically") {
  RuleSet a = parse_rules("(rewrite g (Gemm ?a ?b ?c) (Gemm ?a ?b ?c :alpha 1))");
  RuleSet b = parse_rules("(rewrite g (Gemm ?a ?b ?c :beta 1.0) (Gemm ?a ?b ?c))");
  CHECK(a.rules[0].text == b.rules[0].text);
  CHECK(a.rules[0].lhs[0].str() == "(Gemm :alpha 1 :beta 1 :transA 0 :transB 0 ?a ?b ?c)");
  RuleSet t = parse_rules("(rewrite tt (Transpose (Transpose ?x :perm (1 0)) :perm (1   0)) ?x)");
  CHECK(t.rules[0].lhs[0].str() == "(Transpose :perm (1 0) (Transpose :perm (1 0) ?x))");
}

TEST_CASE("rules: birewrite, multi, conditions, attribute variables, groups") {
  RuleSet set = parse_rules(R"(
    (birewrite add-comm (Add ?a ?b) (Add ?b ?a) :group algebra)
    (rewrite tt (Transpose (Transpose ?x :perm ?p) :perm ?q) ?x
      :when (= ?p (list 1 0)) (= ?q (list 1 0)) (rank ?x 2))
    (group layout
      (rewrite merge-matmul (multi (MatMul ?x ?w1) (MatMul ?x ?w2))
        (multi (Proj :index 0 (Split :axis -1 :split ((dim ?w1 -1) (dim ?w2 -1))
                               (MatMul ?x (Concat :axis -1 ?w1 ?w2))))
               (Proj :index 1 (Split :axis -1 :split ((dim ?w1 -1) (dim ?w2 -1))
                               (MatMul ?x (Concat :axis -1 ?w1 ?w2)))))
        :when (rank ?w1 2) (rank ?w2 2)))
  )");
  REQUIRE(set.rules.size() == 4);
  CHECK(set.rules[0].name == "add-comm");
  CHECK(set.rules[1].name == "add-comm-rev");
  CHECK(set.rules[0].from_birewrite);
  CHECK(set.rules[0].group == "algebra");
  const Rule& tt = set.rules[2];
  CHECK(tt.attr_vars.size() == 2);
  CHECK(tt.attr_vars[0].kind == ir::AttrKind::Ints);
  CHECK(tt.conditions.size() == 3);
  const Rule& mm = set.rules[3];
  CHECK(mm.group == "layout");
  CHECK(mm.lhs.size() == 2);
  CHECK(mm.rhs.size() == 2);
  CHECK(mm.class_vars == std::vector<std::string>{"x", "w1", "w2"});
  CHECK(set.groups() == std::vector<std::string>{"algebra", "default", "layout"});
  CHECK(set.select({"layout"}).rules.size() == 1);
  CHECK(set.select({}, {"algebra"}).rules.size() == 2);
}

TEST_CASE("rules: include is relative to the including file; cycles are errors") {
  auto dir = std::filesystem::temp_directory_path() / "eqfuse_rules_include_test";
  std::filesystem::create_directories(dir / "sub");
  write_file(dir / "main.rules",
             "(include \"sub/a.rules\")\n(rewrite r0 (Relu (Relu ?x)) (Relu ?x))\n");
  write_file(dir / "sub" / "a.rules", "(group algebra (include \"b.rules\"))\n");
  write_file(dir / "sub" / "b.rules", "(rewrite r1 (Neg (Neg ?x)) ?x)\n");
  RuleSet set = parse_rule_file((dir / "main.rules").string());
  REQUIRE(set.rules.size() == 2);
  CHECK(set.rules[0].name == "r1");
  CHECK(set.rules[0].group == "algebra");
  CHECK(set.rules[0].file == (dir / "sub" / "a.rules/../b.rules").lexically_normal().string());

  write_file(dir / "c1.rules", "(include \"c2.rules\")\n");
  write_file(dir / "c2.rules", "\n  (include \"c1.rules\")\n");
  try {
    parse_rule_file((dir / "c1.rules").string());
    FAIL("expected an include cycle");
  } catch (const Error& e) {
    std::string m = e.what();
    CHECK_THAT(m, Catch::Contains("c2.rules:2:12"));
    CHECK_THAT(m, Catch::Contains("include cycle"));
  }
  write_file(dir / "missing.rules", "(include \"nope.rules\")");
  CHECK_THROWS_WITH(parse_rule_file((dir / "missing.rules").string()),
                    Catch::Contains("missing.rules:1:10") && Catch::Contains("cannot read"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("rules: each static error names file:line:col, what was expected, and a caret") {
  // unknown op
  std::string e = parse_error("(rewrite r (Relu (Matmul ?x ?y)) ?x)");
  CHECK_THAT(e, Catch::Contains("t.rules:1:19") && Catch::Contains("unknown op 'Matmul'"));
  CHECK_THAT(e, Catch::Contains("^"));
  // wrong arity
  e = parse_error("(rewrite r\n  (MatMul ?x ?y ?z) ?x)");
  CHECK_THAT(e, Catch::Contains("t.rules:2:3") && Catch::Contains("MatMul takes 2 inputs, got 3"));
  // unknown attribute
  e = parse_error("(rewrite r (Relu ?x :perm (1 0)) ?x)");
  CHECK_THAT(
      e, Catch::Contains("t.rules:1:21") && Catch::Contains("unknown attribute ':perm' for Relu"));
  // attribute of the wrong kind
  e = parse_error("(rewrite r (Transpose ?x :perm 1) ?x)");
  CHECK_THAT(e, Catch::Contains("t.rules:1:32") && Catch::Contains("expected ints for ':perm'"));
  // a right-hand-side variable the left does not bind
  e = parse_error("(rewrite r (Relu ?x) (Add ?x ?y))");
  CHECK_THAT(e, Catch::Contains("t.rules:1:30") &&
                    Catch::Contains("variable '?y' is not bound by the left-hand side"));
  // a condition on an unbound variable
  e = parse_error("(rewrite r (Relu ?x) ?x :when (rank ?z 2))");
  CHECK_THAT(e, Catch::Contains("t.rules:1:37") && Catch::Contains("'?z' is not bound"));
  // an unknown condition
  e = parse_error("(rewrite r (Relu ?x) ?x :when (ranks ?x 2))");
  CHECK_THAT(e, Catch::Contains("t.rules:1:32") && Catch::Contains("unknown function 'ranks'"));
  // a value where a condition is expected
  e = parse_error("(rewrite r (Relu ?x) ?x :when (dim ?x 0))");
  CHECK_THAT(e, Catch::Contains("gives a value; expected a condition"));
  // a variable used as tensor and attribute
  e = parse_error("(rewrite r (Transpose ?x :perm ?x) ?x)");
  CHECK_THAT(e, Catch::Contains("t.rules:1:23") &&
                    Catch::Contains("both as a tensor and as an attribute"));
  // multi sides of different sizes
  e = parse_error("(rewrite r (multi (Relu ?x) (Neg ?x)) (multi ?x))");
  CHECK_THAT(e, Catch::Contains("pair up term by term"));
  // a tuple-valued op outside Proj, Proj on a single-valued op, an out-of-range index
  e = parse_error("(rewrite r (Relu ?x) (Split :axis 0 :num_outputs 2 ?x))");
  CHECK_THAT(e, Catch::Contains("t.rules:1:22") && Catch::Contains("take one with (Proj"));
  e = parse_error("(rewrite r (Relu ?x) (Proj :index 0 (Relu ?x)))");
  CHECK_THAT(e, Catch::Contains("Relu yields one value"));
  e = parse_error("(rewrite r (Relu ?x) (Proj :index 2 (Split :axis 0 :num_outputs 2 ?x)))");
  CHECK_THAT(e, Catch::Contains("t.rules:1:35") && Catch::Contains("out of range"));
  // a missing required attribute
  e = parse_error("(rewrite r (Concat ?x ?y) ?x)");
  CHECK_THAT(e, Catch::Contains("Concat needs attribute ':axis'"));
  // duplicate names, unknown options and forms
  e = parse_error("(rewrite r (Relu ?x) ?x)\n(rewrite r (Neg ?x) ?x)");
  CHECK_THAT(e, Catch::Contains("t.rules:2:10") &&
                    Catch::Contains("defined twice (first at t.rules:1:10)"));
  e = parse_error("(rewrite r (Relu ?x) ?x :if (rank ?x 2))");
  CHECK_THAT(e, Catch::Contains("unknown option ':if'"));
  e = parse_error("(rule r (Relu ?x) ?x)");
  CHECK_THAT(e, Catch::Contains("t.rules:1:2") && Catch::Contains("unknown form 'rule'"));
  // a lone variable on the left, a constant leaf
  e = parse_error("(rewrite r ?x (Relu ?x))");
  CHECK_THAT(e, Catch::Contains("not a lone variable"));
  e = parse_error("(rewrite r (Add ?x 0) ?x)");
  CHECK_THAT(
      e, Catch::Contains("t.rules:1:20") && Catch::Contains("expected a variable ?x or a term"));
  // birewrite whose right side does not bind the left's variables
  e = parse_error("(birewrite r (Mul ?x ?y) (Relu ?x))");
  CHECK_THAT(e, Catch::Contains("'?y' is not bound"));
  // a computed attribute on the left
  e = parse_error("(rewrite r (Softmax ?x :axis (+ 1 1)) ?x)");
  CHECK_THAT(e, Catch::Contains("or an attribute variable"));
}

TEST_CASE("a rule name defined in two files is refused, naming both", "[rules][parser][fast]") {
  auto dir = std::filesystem::temp_directory_path() / "eqfuse-parser-two-files";
  std::filesystem::create_directories(dir);
  std::string a = (dir / "a.rules").string(), b = (dir / "b.rules").string();
  std::ofstream(a) << "(rewrite same (Relu (Relu ?x)) (Relu ?x))\n";
  std::ofstream(b) << "\n(rewrite other (Neg (Neg ?x)) ?x)\n(rewrite same (Neg ?x) ?x)\n";
  CHECK(rules::parse_rule_files({a}).rules.size() == 1);
  CHECK_THROWS_WITH(rules::parse_rule_files({a, b}),
                    Catch::Contains("b.rules:3:") &&
                        Catch::Contains("rule 'same' is defined twice") &&
                        Catch::Contains("a.rules:1:"));
  std::filesystem::remove_all(dir);
}
