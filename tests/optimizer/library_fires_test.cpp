// Every rule of the library fires on a small graph it is meant for: the rule's own left side,
// instantiated at a representative binding that satisfies its conditions. The graph also holds
// the rule's right side; after running the runner with that one rule, each matched root must
// share an e-class with its result. A rule that never fires (a condition that cannot hold at
// match time, an attribute spelled differently from what import produces) fails here.
#include <catch2/catch.hpp>
#include <filesystem>
#include <iostream>

#include "egraph/runner.h"
#include "optimizer/rule_rewrites.h"
#include "optimizer/tensor_egraph.h"
#include "rules/checker.h"
#include "rules/prove/bindings.h"
#include "rules/shapes.h"
#include "tests/test_data.h"

using namespace eqfuse;

namespace {

std::vector<std::string> library_files() {
  std::vector<std::string> files;
  for (const auto& entry :
       std::filesystem::directory_iterator(test::source_dir() / "rules" / "library")) {
    if (entry.path().extension() == ".rules") files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

TEST_CASE("every library rule fires on the graph of its own left side", "[rules][library]") {
  rules::RuleSet library = rules::load_rules(library_files());
  REQUIRE(library.rules.size() >= 150);
  size_t fired = 0;
  for (const rules::Rule& rule : library.rules) {
    INFO("rule " << rule.name << " (" << rule.file << ")");
    // The prover's bindings: the sampler's, topped up where it finds none.
    std::vector<rules::RuleBinding> bindings =
        rules::prove::proof_bindings(rule, rules::ShapeChoice{});
    REQUIRE(!bindings.empty());
    INFO("binding " << rules::binding_string(bindings.front()));
    ir::Graph graph = rules::instantiate_rule(rule, bindings.front());
    optimizer::TensorEGraph teg = optimizer::from_graph(graph);
    const size_t roots = rule.lhs.size();
    REQUIRE(teg.outputs.size() == 2 * roots);

    auto merged = [&] {
      bool all = true;
      for (size_t k = 0; k < roots; ++k) {
        all = all && teg.egraph->find(teg.outputs[k]) == teg.egraph->find(teg.outputs[k + roots]);
      }
      return all;
    };
    REQUIRE(!merged());  // before the rule runs, the two sides are different terms

    rules::RuleSet one;
    one.rules.push_back(rule);
    egraph::RunnerOptions options;
    options.limits.iterations = 2;
    options.limits.nodes = 20000;
    options.limits.seconds = 10;
    egraph::run(*teg.egraph, optimizer::compile_rules(one), options);

    bool all_merged = merged();
    CHECK(all_merged);
    fired += all_merged;
  }
  std::cout << fired << " of " << library.rules.size()
            << " library rules fire on their own left side\n";
}
