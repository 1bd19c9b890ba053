// Kernel kinds declared in rule files (rules/fusion_kinds.h): what the forms read into, and each
// error with file:line:col.
#include "rules/fusion_kinds.h"

#include <catch2/catch.hpp>

#include "rules/library.h"
#include "rules/parser.h"

using namespace eqfuse;
using namespace eqfuse::rules;

namespace {

std::string parse_error(const std::string& text) {
  try {
    parse_rules(text, "k.rules");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("kernel kinds: roles, stages, contractions and their options are read",
          "[rules][fusion][fast]") {
  RuleSet set = parse_rules(R"(
    (fusion-ops index-map Transpose Reshape)
    (fusion-ops contraction MatMul)
    (rewrite relu-twice (Relu (Relu ?x)) (Relu ?x))
    (kernel-kind scores
      (stage pointwise index-map)
      (contract MatMul)
      (stage pointwise (one Softmax) :row-max 512)))",
                            "k.rules");
  REQUIRE(set.rules.size() == 1);
  REQUIRE(set.fusion.kinds.size() == 1);
  const KernelKindDecl& kind = set.fusion.kinds[0];
  CHECK(kind.name == "scores");
  CHECK(kind.where.str() == "k.rules:5:5");
  REQUIRE(kind.stages.size() == 2);
  REQUIRE(kind.contractions.size() == 1);
  CHECK(kind.contractions[0].names == std::vector<std::string>{"MatMul"});
  CHECK(!kind.contractions[0].chained_operand);
  CHECK(kind.stages[1].row_max == 512);
  REQUIRE(kind.stages[1].items.size() == 2);
  CHECK(kind.stages[1].items[1].exactly_one);
  CHECK(set.fusion.declared_in_role("index-map", "Reshape"));
  CHECK(!set.fusion.declared_in_role("index-map", "MatMul"));
}

TEST_CASE("kernel kinds: each error names file:line:col", "[rules][fusion][fast]") {
  CHECK_THAT(parse_error("(kernel-kind k (stage pointwise Relux))"),
             Catch::Contains("k.rules:1:33") && Catch::Contains("'Relux' is neither a role"));
  CHECK_THAT(parse_error("(kernel-kind k (stage pointwise) (stage pointwise))"),
             Catch::Contains("k.rules:1:34") && Catch::Contains("expected (contract ...)"));
  CHECK_THAT(parse_error("(kernel-kind k (stage pointwise) (contract MatMul))"),
             Catch::Contains("a kind ends with a stage"));
  CHECK_THAT(parse_error("(kernel-kind k (stage pointwise) (contract MatMul) (stage pointwise)"
                         " (contract MatMul) (stage pointwise))"),
             Catch::Contains("give it :operand K"));
  CHECK_THAT(parse_error("(kernel-kind k (stage pointwise) (contract MatMul :operands loaded) "
                         "(stage pointwise))"),
             Catch::Contains("k.rules:1:51") && Catch::Contains("'computed' or 'stored'"));
  CHECK_THAT(parse_error("(kernel-kind k (stage pointwise :row-max 0))"),
             Catch::Contains("k.rules:1:33") && Catch::Contains("':row-max' needs an integer"));
  CHECK_THAT(parse_error("(kernel-kind k (stage pointwise) (contract (one MatMul)) (stage Relu))"),
             Catch::Contains("(one ...) belongs in a stage"));
  CHECK_THAT(parse_error("(fusion-ops pointwise Relu)"), Catch::Contains("is built in"));
  CHECK_THAT(parse_error("(fusion-ops index-map Transpos)"),
             Catch::Contains("k.rules:1:23") && Catch::Contains("not an op of the op table"));
  CHECK_THAT(parse_error("(kernel-rule k)"), Catch::Contains("unknown form 'kernel-rule'"));
}

TEST_CASE("the library declares the kinds code generation implements", "[rules][fusion][fast]") {
  const FusionKinds& kinds = library_fusion_kinds();
  std::vector<std::string> names;
  for (const KernelKindDecl& k : kinds.kinds)
    if (std::find(names.begin(), names.end(), k.name) == names.end()) names.push_back(k.name);
  CHECK(names == std::vector<std::string>{"pointwise", "reduction", "attention", "contraction"});
  CHECK(kinds.declared_in_role("contraction", "Conv"));
  CHECK(kinds.declared_in_role("row-reduction", "LayerNormalization"));
  // The one-stage attention loads its operands and computes their pointwise work; the other
  // contractions read theirs stored.
  for (const KernelKindDecl& k : kinds.kinds)
    for (const auto& c : k.contractions)
      CHECK(c.computed_operands == (k.name == "attention" && k.contractions.size() == 2));
}
