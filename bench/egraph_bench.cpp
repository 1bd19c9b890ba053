// E-graph engine benchmarks: add/lookup, union+rebuild, e-matching throughput, and the
// AC+distributivity saturation of issue 3 (egg's reference workload) with e-nodes/s, peak bytes
// per final e-node, and the 2-thread/1-thread search ratio measured in the same run.
//
//   build/bench/egraph_bench                                  # everything
//   build/bench/egraph_bench --benchmark_filter=Saturate      # the headline figures
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <random>

#include "egraph/rewrite_file.h"
#include "egraph/runner.h"
#include "egraph/term.h"

using namespace eqfuse::egraph;

namespace {

const char* kAcRules = R"(
(rewrite comm-add (+ ?a ?b) (+ ?b ?a))
(rewrite comm-mul (* ?a ?b) (* ?b ?a))
(rewrite assoc-add (+ ?a (+ ?b ?c)) (+ (+ ?a ?b) ?c))
(rewrite assoc-mul (* ?a (* ?b ?c)) (* (* ?a ?b) ?c))
(rewrite distribute (* ?a (+ ?b ?c)) (+ (* ?a ?b) (* ?a ?c)))
(rewrite factor (+ (* ?a ?b) (* ?a ?c)) (* ?a (+ ?b ?c)))
)";
const char* kAcTerm = "(* (+ a (+ b (+ c d))) (+ e (+ f (+ g h))))";

size_t peak_rss() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<size_t>(usage.ru_maxrss) * 1024;
}

double cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_utime.tv_sec + usage.ru_utime.tv_usec * 1e-6 + usage.ru_stime.tv_sec +
         usage.ru_stime.tv_usec * 1e-6;
}

// Random terms over f/g/h and 64 leaves: n nodes added, then looked up again.
void BM_AddLookup(benchmark::State& state) {
  const size_t n = state.range(0);
  Symbol ops[3] = {intern("f"), intern("g"), intern("h")};
  for (auto _ : state) {
    EGraph g;
    std::mt19937 rng(1);
    std::vector<EClassId> ids;
    for (int i = 0; i < 64; ++i) ids.push_back(g.add(intern("x" + std::to_string(i))));
    for (size_t i = 0; i < n; ++i) {
      EClassId kids[2] = {ids[rng() % ids.size()], ids[rng() % ids.size()]};
      ids.push_back(g.add(ops[rng() % 3], kNoAttrs, kids));
    }
    size_t found = 0;
    for (size_t i = 64; i < ids.size(); ++i)
      found += g.lookup(ops[0], kNoAttrs, std::vector<EClassId>{ids[i], ids[i / 2]}) != kNoId;
    benchmark::DoNotOptimize(found);
  }
  state.SetItemsProcessed(state.iterations() * n * 2);
}
BENCHMARK(BM_AddLookup)->Arg(1 << 20)->Unit(benchmark::kMillisecond);

// n random nodes, then n/2 random unions and one rebuild (congruence cascades included).
void BM_UnionRebuild(benchmark::State& state) {
  const size_t n = state.range(0);
  Symbol f = intern("f");
  for (auto _ : state) {
    state.PauseTiming();
    EGraph g;
    std::mt19937 rng(2);
    std::vector<EClassId> ids;
    for (int i = 0; i < 256; ++i) ids.push_back(g.add(intern("y" + std::to_string(i))));
    for (size_t i = 0; i < n; ++i) {
      EClassId kids[2] = {ids[rng() % ids.size()], ids[rng() % ids.size()]};
      ids.push_back(g.add(f, kNoAttrs, kids));
    }
    g.rebuild();
    state.ResumeTiming();
    for (size_t i = 0; i < n / 2; ++i) g.merge(ids[rng() % ids.size()], ids[rng() % ids.size()]);
    g.rebuild();
    benchmark::DoNotOptimize(g.num_classes());
  }
  state.SetItemsProcessed(state.iterations() * n / 2);
}
BENCHMARK(BM_UnionRebuild)->Arg(1 << 19)->Unit(benchmark::kMillisecond);

// The AC e-graph after 7 iterations (~96k e-nodes); search all six rules once.
void BM_Ematch(benchmark::State& state) {
  EGraph g;
  add_term(g, kAcTerm);
  std::vector<Rewrite> rules = parse_rewrites(kAcRules);
  RunnerOptions opts;
  opts.limits.iterations = 7;
  run(g, rules, opts);
  size_t matches = 0;
  for (auto _ : state) {
    matches = 0;
    for (const Rewrite& rw : rules)
      matches += rw.search(g, static_cast<int>(state.range(0))).size();
  }
  state.SetItemsProcessed(state.iterations() * matches);
  state.counters["matches"] = static_cast<double>(matches);
}
BENCHMARK(BM_Ematch)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

// Issue 3's headline: 8 iterations, simple scheduler; must reach exactly 964,678 e-nodes and
// 327,584 e-classes (egg 0.11's figures). Reports e-nodes/s (wall and CPU), peak bytes per final
// e-node, and search time on 2 threads over 1 thread, measured in one run.
void BM_SaturateAC(benchmark::State& state) {
  std::vector<Rewrite> rules = parse_rewrites(kAcRules);
  RunReport one, two;
  double cpu = 0;
  size_t peak = 0;
  for (auto _ : state) {
    {
      double cpu0 = cpu_seconds();
      EGraph g;
      add_term(g, kAcTerm);
      RunnerOptions opts;
      opts.limits.iterations = 8;
      one = run(g, rules, opts);
      cpu = cpu_seconds() - cpu0;
      peak = peak_rss();  // before the 2-thread run, whose e-graph is as large
    }
    state.PauseTiming();
    {
      EGraph g;
      add_term(g, kAcTerm);
      RunnerOptions opts;
      opts.limits.iterations = 8;
      opts.threads = 2;
      two = run(g, rules, opts);
    }
    state.ResumeTiming();
  }
  if (one.nodes != 964678 || one.classes != 327584 || two.nodes != one.nodes)
    state.SkipWithError("e-graph differs from egg's 964,678 e-nodes / 327,584 e-classes");
  state.counters["enodes"] = static_cast<double>(one.nodes);
  state.counters["eclasses"] = static_cast<double>(one.classes);
  state.counters["enodes_per_s"] = one.nodes / one.seconds;
  state.counters["enodes_per_cpu_s"] = one.nodes / cpu;
  state.counters["peak_bytes_per_enode"] = static_cast<double>(peak) / one.nodes;
  state.counters["search_s_1t"] = one.search_seconds;
  state.counters["search_s_2t"] = two.search_seconds;
  state.counters["search_ratio_2t_1t"] = two.search_seconds / one.search_seconds;
}
BENCHMARK(BM_SaturateAC)->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
