#pragma once
// Exact extraction by integer linear programming (CBC), with acyclicity added lazily.
//
// With no negative cost the problem is first split at separator e-classes (extract/decompose.h):
// the parts are solved bottom-up, each as below, with a share of the time by its size (at least
// 1.5 s), a nested separator priced at its part's best cost; the answer is optimal when every
// part is, and its bound is its cost less the sum of the parts' gaps. Each part (or the whole
// problem) is then shrunk (extract/reduce.h): on tensat's e-graphs nine e-classes in ten
// are free weights and shapes. The ILP has a binary variable per e-node, at most one per
// e-class (one for a root), and for each child e-class of an e-node: x_node <= sum of x over
// the child's e-nodes. Those rows alone make a weak LP: a root spread over many alternatives
// that all lead to the same expensive e-classes pays for them only fractionally. So for every
// e-class D that every term of an e-class c contains (extract/mandatory.h) a row says that
// choosing c chooses D; it lifts the LP bound on resnet50 from 1% to 99.8% of the optimum and
// on nasneta from 17% to 91%. The model starts without acyclicity: static order constraints
// (big-M per e-class) are what made the old model's LP bound worthless. Each solve is a
// relaxation of the real problem, so its proven optimum is a lower bound; when its optimal
// choice is acyclic it is optimal for the real problem too. Otherwise each cycle of that
// choice is cut off with
//   sum over the cycle's e-classes of x over their e-nodes with a child in the cycle  <=  length-1
// which every acyclic choice satisfies (every cycle of two e-classes, such as x and
// Neg(Neg(x)), is cut before the first solve), and CBC solves again, warm-started from the best
// acyclic choice known. A second bound that no cycle can fool is the cheapest critical path
// (an e-node's cost plus its costliest child's term), and it alone proves vgg optimal. The
// reported bound is the better of the two. The DAG-aware heuristic's choice is the first warm
// start, so the answer is never worse than it; on the time limit the best choice found is
// returned with `optimal` false. `optimal` means proven to a relative 1e-9: by CBC (its
// absolute gap on the scaled objective is within that), or by a bound that reaches the cost
// once rounded up to the next multiple of the costs' common step, where they have one
// (common_cost_step: with integer costs a bound of 5.5 proves a cost of 6). Nothing but a
// proof ends the search before the time limit. Beside the full solve, neighbourhood search
// (below) improves the best choice; each runs in a child process, both at once for the whole
// time on a machine with two cores or more (a proof ends both), else the full solve first with
// 75% of the time. Only the full solve moves the bound.
//
// Negative costs are exact too (greedy and dag refuse them). Choosing an e-class that no chosen
// e-node needs would then pay, so the model says that a non-root e-class is chosen only when a
// chosen e-node needs it, and cuts every cycle of a solution, reachable from a root or not; the
// reduction keeps no dominance; the critical-path bound becomes the sum of each e-class's most
// negative cost; the warm start is dag's choice with negative costs taken as 0.
#include <functional>

#include "extract/choice.h"

namespace eqfuse::extract {

struct IlpProgress {
  double seconds = 0;    // since the start
  double best_cost = 0;  // DAG cost of the best choice so far
  double bound = 0;      // the best proven lower bound so far
};

struct IlpOptions {
  double time_limit_seconds = 60;
  // A complete, valid choice to start from (e.g. extract_dag's); computed when empty.
  Choice warm_start;
  // Called whenever the best cost or the bound moves (in the caller's thread).
  std::function<void(const IlpProgress&)> progress;
  // Split the problem at separator e-classes (above); false solves it whole, for comparison.
  bool split = true;
  // Before CBC, search best-first (extract/best_first.h) with up to a quarter of each solve's
  // time; false leaves everything to CBC, for comparison.
  bool best_first = true;
};

ExtractionResult extract_ilp(const ExtractionProblem& problem, const IlpOptions& options = {});

// The costs' common step: the largest s such that every e-node cost is a whole multiple of s,
// for whole numbers (their greatest common divisor) and decimals of up to 6 places as read from
// text (up to a few ulps: `error` bounds how far any sum of the costs is from a multiple of s).
// step is 0 when there is none (or every cost is 0). Exposed for tests.
struct CostStep {
  double step = 0;
  double error = 0;
};
CostStep common_cost_step(const ExtractionProblem& problem);
// A proven lower bound on a sum of such costs, given a lower bound that may be off by
// `tolerance`: the least multiple of the step that the sum can be (bound itself if larger).
double round_up_to_step(double bound, const CostStep& step, double tolerance);

// Large-neighbourhood search, the ILP's primal side: pick a region of e-classes (150 at first)
// around a chosen e-class (breadth-first over parents and children of all e-nodes; the seed
// uniformly or by its e-node's cost, alternately), keep every other e-class's choice, and solve the
// sub-problem exactly with CBC and the same lazy cycle cuts. The e-classes that the roots still
// reach without passing through the region are a constant cost and stay out of the sub-problem, so
// shared e-nodes count once. A better choice is kept only if the whole choice is acyclic and
// its DAG cost is lower. The region grows (by 20%, up to 30,000 e-classes: nasrnn's better
// choices need thousands) while CBC proves its sub-problems and shrinks when it cannot. Seeded, so
// a run is repeatable up to timing. Runs in the caller's process; exposed for tests.
struct LnsOptions {
  double seconds = 1;
  double seconds_per_solve = 5;
  size_t initial_size = 150;  // e-classes in a region
  size_t max_size = 30000;
  int max_rounds = -1;  // no limit when negative
  uint32_t seed = 20261129;
};
// The best choice found from `start` (a valid acyclic choice); `on_better` sees each
// improvement.
Choice improve_by_neighbourhoods(const ExtractionProblem& problem, const Choice& start,
                                 const LnsOptions& options,
                                 const std::function<void(const Choice&)>& on_better = {});

}  // namespace eqfuse::extract
