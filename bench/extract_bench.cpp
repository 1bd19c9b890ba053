// Each extractor on each tensat e-graph of extraction-gym (../shared/egraphs/tensat, or
// $EQFUSE_SHARED/egraphs/tensat). Counters: dag_cost of the choice, and dag_vs_greedy, the
// ratio of the method's DAG cost to bottom-up greedy's measured in the same run. The ILP runs
// with a 60 s limit, once per file, on the six files where it proves optimality (the others
// take the full limit: see bench/extract_ilp_table.sh).
//   ./extract_bench --benchmark_filter=dag
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>

#include "egraph/serialized_egraph.h"
#include "extract/dag.h"
#include "extract/greedy.h"
#include "extract/ilp.h"

namespace {

using namespace eqfuse;
using namespace eqfuse::extract;

const char* const kFiles[] = {"bert",   "bert_acyclic",  "resnet50", "resnet50_acyclic",
                              "vgg",    "vgg_acyclic",   "nasneta",  "nasneta_acyclic",
                              "nasrnn", "nasrnn_acyclic"};

std::filesystem::path tensat_path(const std::string& name) {
  std::filesystem::path shared = EQFUSE_SHARED_DIR;
  if (const char* env = std::getenv("EQFUSE_SHARED")) shared = env;
  return shared / "egraphs" / "tensat" / (name + ".json");
}

const SerializedProblem& problem(const std::string& name) {
  static std::map<std::string, SerializedProblem> cache;
  auto it = cache.find(name);
  if (it == cache.end())
    it = cache.emplace(name, make_problem(egraph::read_serialized_egraph(tensat_path(name)))).first;
  return it->second;
}

template <typename Extract>
void run(benchmark::State& state, const std::string& name, Extract extract) {
  if (!std::filesystem::exists(tensat_path(name))) {
    state.SkipWithError("tensat e-graphs not found (set EQFUSE_SHARED)");
    return;
  }
  const ExtractionProblem& p = problem(name).problem;
  const double greedy = extract_greedy(p).dag_cost;
  ExtractionResult result;
  for (auto _ : state) {
    result = extract(p);
    benchmark::DoNotOptimize(result.dag_cost);
  }
  state.counters["dag_cost"] = result.dag_cost;
  state.counters["dag_vs_greedy"] = result.dag_cost / greedy;
  if (result.bound) state.counters["bound"] = *result.bound;
  if (result.bound) state.counters["optimal"] = result.optimal;
}

void read_file(benchmark::State& state, const std::string& name) {
  if (!std::filesystem::exists(tensat_path(name))) {
    state.SkipWithError("tensat e-graphs not found (set EQFUSE_SHARED)");
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(egraph::read_serialized_egraph(tensat_path(name)));
}

const bool registered = [] {
  for (const char* file : kFiles) {
    std::string name = file;
    benchmark::RegisterBenchmark(("read/" + name).c_str(), read_file, name)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
    benchmark::RegisterBenchmark(
        ("greedy/" + name).c_str(),
        [name](benchmark::State& s) {
          run(s, name, [](const ExtractionProblem& p) { return extract_greedy(p); });
        })
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
    benchmark::RegisterBenchmark(("dag/" + name).c_str(),
                                 [name](benchmark::State& s) {
                                   run(s, name,
                                       [](const ExtractionProblem& p) { return extract_dag(p); });
                                 })
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
    if (name == "resnet50_acyclic" || name == "vgg_acyclic" || name == "vgg" ||
        name == "resnet50" || name == "nasneta" || name == "nasneta_acyclic")
      benchmark::RegisterBenchmark(("ilp/" + name).c_str(),
                                   [name](benchmark::State& s) {
                                     run(s, name,
                                         [](const ExtractionProblem& p) { return extract_ilp(p); });
                                   })
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
  }
  return true;
}();

}  // namespace

BENCHMARK_MAIN();
