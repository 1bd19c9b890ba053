// Every extractor on the ten Tensat e-graphs of extraction-gym (../shared/egraphs/tensat):
// valid acyclic choices (checked by an independent validator), the DAG-aware heuristic never
// worse than greedy and within 0.1% of the best known cost, and the ILP proving the known
// optima of the two truly acyclic files. The ILP on the cyclic files is in
// extract_ilp_tensat_test.cpp (slow).
#include <catch2/catch.hpp>

#include "extract/dag.h"
#include "extract/greedy.h"
#include "extract/ilp.h"
#include "tests/extract/tensat_files.h"
#include "tests/extract/validator.h"

using namespace eqfuse;
using namespace eqfuse::extract;

TEST_CASE("greedy and DAG-aware extraction on every tensat e-graph", "[tensat]") {
  for (const auto& file : test::kTensatFiles) {
    DYNAMIC_SECTION(file.name) {
      auto g = egraph::read_serialized_egraph(test::tensat_path(file.name));
      auto sp = make_problem(g);
      auto greedy = extract_greedy(sp.problem);
      auto dag = extract_dag(sp.problem);
      for (const auto* r : {&greedy, &dag}) {
        auto v = test::validate_choice(g, test::to_choice_map(sp, *r));
        INFO(v.error);
        REQUIRE(v.ok);
        CHECK(v.dag_cost == Approx(r->dag_cost).epsilon(1e-12));
      }
      CHECK(greedy.dag_cost == Approx(file.greedy).epsilon(file.greedy_tolerance));
      CHECK(dag.dag_cost <= greedy.dag_cost);
      CHECK(dag.dag_cost <= file.best_known * 1.001);
      CHECK(dag.seconds < 1.0);
    }
  }
}

TEST_CASE("ILP proves the optimum of the acyclic tensat e-graphs", "[tensat][ilp]") {
  for (const auto* name : {"resnet50_acyclic", "vgg_acyclic"}) {
    DYNAMIC_SECTION(name) {
      auto g = egraph::read_serialized_egraph(test::tensat_path(name));
      auto sp = make_problem(g);
      auto warm = extract_dag(sp.problem);
      IlpOptions options;
      options.time_limit_seconds = 30;
      options.warm_start = warm.choice;
      auto ilp = extract_ilp(sp.problem, options);
      auto v = test::validate_choice(g, test::to_choice_map(sp, ilp));
      INFO(v.error);
      REQUIRE(v.ok);
      CHECK(ilp.optimal);
      CHECK(ilp.dag_cost <= warm.dag_cost);
      CHECK(ilp.dag_cost == Approx(test::tensat_file(name).best_known).margin(1e-5));
      REQUIRE(ilp.bound.has_value());
      CHECK(*ilp.bound == Approx(ilp.dag_cost).margin(1e-9));
    }
  }
}
