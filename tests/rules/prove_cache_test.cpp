// Proofs are cached by normalized rule text under the cache directory, and reused.
#include <catch2/catch.hpp>
#include <filesystem>
#include <set>
#include <string>

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

TEST_CASE("an unseparated proof is stored and reloaded as it is, never as proved or refuted",
          "[rules][prove][fast]") {
  auto dir = std::filesystem::temp_directory_path() / "eqfuse-prove-cache-unseparated-test";
  std::filesystem::remove_all(dir);
  ProofCache cache(dir);
  // The first binding of a rank-4 tensor is (2,4,3,2): dims 0 and 3 share a size. With the
  // element cap at 1 (4 for separating pairs) even (2,1,1,3) is too large to tell them apart,
  // so the proof is at bounds that do not separate them.
  rules::RuleSet set = rules::parse_rules(
      "(rewrite relu-twice (Relu (Relu ?x)) (Relu ?x) "
      ":when (rank ?x 4))");
  ProveOptions small;
  small.shapes.max_numel = 1;
  std::vector<const rules::Rule*> rules = {&set.rules[0]};
  RuleProof first = prove_rules(rules, small, 1, &cache).at(0);
  INFO(first.reason);
  CHECK(first.verdict == Verdict::Unseparated);
  CHECK(first.reason.find("do not separate ?x dim 0 and ?x dim 3") != std::string::npos);
  CHECK_FALSE(first.coverage.at("unseparated").empty());
  RuleProof second = prove_rules(rules, small, 1, &cache).at(0);
  CHECK(second.from_cache);
  CHECK(second.verdict == Verdict::Unseparated);
  CHECK(second.reason == first.reason);
  // At the default bounds the same rule separates every pair and is proved.
  CHECK(prove_rules(rules, {}, 1, &cache).at(0).verdict == Verdict::Proved);
  std::filesystem::remove_all(dir);
}

TEST_CASE("progress hears each rule once, proved afresh or from the cache",
          "[rules][prove][fast]") {
  auto dir = std::filesystem::temp_directory_path() / "eqfuse-prove-progress-test";
  std::filesystem::remove_all(dir);
  ProofCache cache(dir);
  rules::RuleSet set = rules::parse_rules(
      "(rewrite add-comm (Add ?a ?b) (Add ?b ?a))\n"
      "(rewrite sub-comm (Sub ?a ?b) (Sub ?b ?a))\n"
      "(rewrite mul-comm (Mul ?a ?b) (Mul ?b ?a))\n");
  std::vector<const rules::Rule*> rules = {&set.rules[0], &set.rules[1], &set.rules[2]};
  for (int pass = 0; pass < 2; ++pass) {
    std::vector<size_t> counts;
    std::multiset<std::string> names;
    size_t refuted = 0;
    prove_rules(rules, {}, 2, &cache, [&](size_t done, size_t total, const RuleProof& p) {
      CHECK(total == 3);
      counts.push_back(done);
      names.insert(p.name);
      refuted += p.verdict == Verdict::Refuted;
    });
    INFO("pass " << pass);
    CHECK(counts == std::vector<size_t>{1, 2, 3});
    CHECK(names == std::multiset<std::string>{"add-comm", "mul-comm", "sub-comm"});
    CHECK(refuted == 1);
  }
  std::filesystem::remove_all(dir);
}
