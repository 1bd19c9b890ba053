// Every rule of the library (rules/library/*.rules) is proved; the library is large enough.
#include <catch2/catch.hpp>
#include <filesystem>
#include <set>

#include "rules/parser.h"
#include "rules/prove/batch.h"
#include "tests/test_data.h"

using namespace eqfuse;
using namespace eqfuse::rules::prove;

TEST_CASE("the whole rule library is proved", "[rules][prove][library]") {
  rules::RuleSet all;
  for (const auto& entry :
       std::filesystem::directory_iterator(test::source_dir() / "rules" / "library")) {
    if (entry.path().extension() != ".rules") continue;
    rules::RuleSet set = rules::parse_rule_file(entry.path().string());
    for (rules::Rule& r : set.rules) all.rules.push_back(std::move(r));
  }
  std::vector<const rules::Rule*> rules;
  std::set<std::string> texts;
  for (const rules::Rule& r : all.rules) {
    rules.push_back(&r);
    texts.insert(r.text.substr(r.text.find(' ', 9)));  // without the name
  }
  CHECK(rules.size() >= 150);
  CHECK(texts.size() == rules.size());  // no two rules the same up to their names
  std::vector<RuleProof> proofs = prove_rules(rules, {}, 2, nullptr);
  for (const RuleProof& p : proofs) {
    INFO(p.name << ": " << verdict_name(p.verdict) << " " << p.reason
                << (p.counterexample ? " " + p.counterexample->text : ""));
    CHECK(p.verdict == Verdict::Proved);
  }
}
