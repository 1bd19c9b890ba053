// Every deliberately wrong rule of tests/rules/wrong_rules/ is refuted with a counterexample.
#include <catch2/catch.hpp>

#include "rules/parser.h"
#include "rules/prove/prover.h"
#include "tests/test_data.h"

using namespace eqfuse;
using namespace eqfuse::rules::prove;

TEST_CASE("deliberately wrong rules are refuted with counterexamples", "[rules][prove][fast]") {
  auto path = test::source_dir() / "tests" / "rules" / "wrong_rules" / "wrong.rules";
  rules::RuleSet set = rules::parse_rule_file(path.string());
  REQUIRE(set.rules.size() == 7);
  for (const rules::Rule& rule : set.rules) {
    RuleProof p = prove_rule(rule);
    INFO(rule.name << ": " << verdict_name(p.verdict) << " " << p.reason);
    CHECK(p.verdict == Verdict::Refuted);
    CHECK(p.counterexample.has_value());
    if (p.counterexample) INFO(p.counterexample->text);
  }
}
