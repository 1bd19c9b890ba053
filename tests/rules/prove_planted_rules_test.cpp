// The planted wrong rules of tests/rules/wrong_rules/planted.rules: of the kinds a bounded proof
// misses (confused dims, axes and attribute pairs, rank-4 only, Concat/Split sizes, Conv and
// pooling attributes). Ten of them came out `proved` under per-variable coverage
// (planted.verdicts); every one must now be refuted, with a counterexample that replays in the
// interpreter, and every verdict and its bindings must be the same under any rule name.
#include <catch2/catch.hpp>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <sstream>
#include <string>

#include "ir/interpreter.h"
#include "rules/checker.h"
#include "rules/parser.h"
#include "rules/prove/prover.h"
#include "rules/prove/witness.h"
#include "tests/test_data.h"

using namespace eqfuse;
using namespace eqfuse::rules;
using namespace eqfuse::rules::prove;

namespace {

std::filesystem::path planted_dir() {
  return test::source_dir() / "tests" / "rules" / "wrong_rules";
}

RuleSet planted() {
  return parse_rule_file((planted_dir() / "planted.rules").string());
}

// "proved NAME" lines of the verdicts recorded before per-pair coverage.
std::map<std::string, std::string> recorded_verdicts() {
  std::ifstream in(planted_dir() / "planted.verdicts");
  std::map<std::string, std::string> out;
  std::string verdict, name;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    fields >> verdict >> name;
    out[name] = verdict;
  }
  return out;
}

// The binding the counterexample names, found among the rule's bindings by its text.
std::optional<RuleBinding> binding_named(const Rule& rule, const std::string& where) {
  Enumeration en = enumerate_bindings(rule);
  for (const auto* list : {&en.bindings, &en.witness})
    for (const RuleBinding& b : *list)
      if (binding_string(b) == where) return b;
  return std::nullopt;
}

// Replays a counterexample: Z3's and the witness's inputs give different outputs in the float64
// interpreter; a shape counterexample gives outputs of different shapes, or a right side that
// cannot be built at that binding.
void check_replays(const Rule& rule, const RuleProof& p) {
  REQUIRE(p.counterexample.has_value());
  const nlohmann::json& cx = p.counterexample->json;
  INFO(p.counterexample->text);
  std::string where = cx.value("binding", "");
  std::string found_by = cx.value("found_by", "");
  if (found_by == "shape inference") {
    auto b = binding_named(rule, where);
    REQUIRE(b.has_value());
    ir::Graph g;
    try {
      g = instantiate_rule(rule, *b);
    } catch (const Error&) {
      CHECK(cx.contains("rhs_error"));
      return;
    }
    std::mt19937_64 rng(7);
    std::vector<ir::Tensor> outs = ir::Interpreter(as_float64(g)).run(random_inputs(g, {}, rng));
    bool differ = false;
    for (size_t k = 0; k < rule.lhs.size(); ++k)
      differ = differ || outs.at(k).dims() != outs.at(k + rule.lhs.size()).dims();
    CHECK(differ);
    return;
  }
  // Values: rebuild the graph at the named binding and run the recorded inputs. Constants the
  // rule only requires to be constant are inputs of the proof graph, so the inputs are matched
  // by name against the graph the prover used.
  REQUIRE(cx.contains("inputs"));
  auto b = binding_named(rule, where);
  REQUIRE(b.has_value());
  ir::Graph g = instantiate_rule(rule, *b);
  std::vector<ir::Tensor> inputs;
  for (ir::ValueId id : g.inputs()) {
    const std::string& name = g.value(id).name;
    REQUIRE(cx["inputs"].contains(name));
    const auto& in = cx["inputs"][name];
    auto dims = in.at("shape").get<std::vector<int64_t>>();
    auto values = in.at("values").get<std::vector<double>>();
    ir::DType dtype =
        ir::is_floating(g.value(id).type.dtype) ? ir::DType::f64 : g.value(id).type.dtype;
    inputs.push_back(ir::Tensor::from_doubles(dtype, dims, values));
  }
  CHECK(compare_sides(g, rule.lhs.size(), inputs).has_value());
}

}  // namespace

TEST_CASE("the planted wrong rules test something: ten came out proved before",
          "[rules][prove][fast]") {
  RuleSet set = planted();
  auto recorded = recorded_verdicts();
  REQUIRE(set.rules.size() >= 34);
  REQUIRE(recorded.size() == set.rules.size());
  size_t proved = 0;
  for (const Rule& r : set.rules) proved += recorded.at(r.name) == "proved";
  CHECK(proved >= 10);
}

TEST_CASE("every planted wrong rule is refuted, with a counterexample that replays, under any name",
          "[rules][prove][fast]") {
  RuleSet set = planted();
  auto recorded = recorded_verdicts();
  // The same file with every rule renamed.
  std::ifstream in(planted_dir() / "planted.rules");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t index = 0;
  for (const Rule& rule : set.rules) {
    std::string from = "(rewrite " + rule.name + "\n";
    auto at = text.find(from);
    REQUIRE(at != std::string::npos);
    text.replace(at, from.size(),
                 "(rewrite q" + std::to_string(rule.name.size() * 7919 + index++) + "-x\n");
  }
  RuleSet renamed = parse_rules(text);
  REQUIRE(renamed.rules.size() == set.rules.size());
  for (size_t r = 0; r < set.rules.size(); ++r) {
    const Rule &rule = set.rules[r], &other = renamed.rules[r];
    INFO(rule.name << " renamed " << other.name);
    REQUIRE(rule.name != other.name);
    Enumeration a = enumerate_bindings(rule), b = enumerate_bindings(other);
    REQUIRE(a.bindings.size() == b.bindings.size());
    for (size_t i = 0; i < a.bindings.size(); ++i)
      CHECK(binding_string(a.bindings[i]) == binding_string(b.bindings[i]));
    REQUIRE(a.witness.size() == b.witness.size());
    for (size_t i = 0; i < a.witness.size(); ++i)
      CHECK(binding_string(a.witness[i]) == binding_string(b.witness[i]));
    RuleProof pa = prove_rule(rule), pb = prove_rule(other);
    INFO("recorded before: " << recorded[rule.name] << ", now: " << verdict_name(pa.verdict) << " "
                             << pa.reason << "\n  " << pa.coverage_text);
    CHECK(pa.verdict == Verdict::Refuted);
    if (pa.verdict == Verdict::Refuted) check_replays(rule, pa);
    CHECK(pa.verdict == pb.verdict);
    CHECK(pa.bounds == pb.bounds);
    CHECK(pa.coverage_text == pb.coverage_text);
    // Reasons quote the rule by name.
    std::string reason = pb.reason;
    for (size_t at; (at = reason.find(other.name)) != std::string::npos;)
      reason.replace(at, other.name.size(), rule.name);
    CHECK(pa.reason == reason);
  }
}
