// Proofs are cached by normalized rule text under the cache directory, and reused.
#include <catch2/catch.hpp>
#include <filesystem>

#include "rules/parser.h"
#include "rules/prove/batch.h"

using namespace eqfuse;
using namespace eqfuse::rules::prove;

TEST_CASE("a second check reads proofs from the cache", "[rules][prove][fast]") {
  auto dir = std::filesystem::temp_directory_path() / "eqfuse-prove-cache-test";
  std::filesystem::remove_all(dir);
  ProofCache cache(dir);
  rules::RuleSet set = rules::parse_rules(
      "(rewrite add-comm (Add ?a ?b) (Add ?b ?a))\n"
      "(rewrite sub-comm (Sub ?a ?b) (Sub ?b ?a))\n");
  std::vector<const rules::Rule*> rules = {&set.rules[0], &set.rules[1]};
  std::vector<RuleProof> first = prove_rules(rules, {}, 2, &cache);
  CHECK(first[0].verdict == Verdict::Proved);
  CHECK(first[1].verdict == Verdict::Refuted);
  CHECK_FALSE(first[0].from_cache);
  std::vector<RuleProof> second = prove_rules(rules, {}, 1, &cache);
  CHECK(second[0].from_cache);
  CHECK(second[0].verdict == Verdict::Proved);
  CHECK(second[1].from_cache);
  CHECK(second[1].verdict == Verdict::Refuted);
  CHECK(second[1].counterexample.has_value());
  CHECK(second[0].bounds == first[0].bounds);
  // The same rule spelled with other variable names is another text: a miss, not a wrong hit.
  CHECK(ProofCache::key(set.rules[0], {}) != ProofCache::key(set.rules[1], {}));
  std::filesystem::remove_all(dir);
}
