#pragma once
// Exact extraction by integer linear programming (CBC), with acyclicity added lazily.
//
// The problem is first shrunk (extract/reduce.h): on tensat's e-graphs nine e-classes in ten
// are free weights and shapes. The ILP has a binary variable per e-node, at most one per
// e-class (one for a root), and for each child e-class of an e-node: x_node <= sum of x over
// the child's e-nodes. It starts without acyclicity: static order constraints (big-M per
// e-class) are what made the old model's LP bound worthless. Each solve is a relaxation of the
// real problem, so its proven optimum is a lower bound; when its optimal choice is acyclic it
// is optimal for the real problem too. Otherwise each cycle of that choice is cut off with
//   sum over the cycle's edges (a -> b) of x over a's e-nodes that have child b  <=  length-1
// which every acyclic choice satisfies, and CBC solves again, warm-started from the best
// acyclic choice known. Cycles are cheap in tensat's e-graphs (Split of a Concat gives back
// its input), so these relaxations can be far below the optimum; a second bound that no cycle
// can fool is the cheapest critical path (an e-node's cost plus its costliest child's term),
// and it alone proves vgg optimal. The reported bound is the better of the two. The
// DAG-aware heuristic's choice is the first warm start, so the answer is never worse than it;
// on the time limit the best choice found is returned with `optimal` false. `optimal` means
// proven to a relative 1e-9.
#include "extract/choice.h"

namespace eqfuse::extract {

struct IlpOptions {
  double time_limit_seconds = 60;
  // A complete, valid choice to start from (e.g. extract_dag's); computed when empty.
  Choice warm_start;
};

ExtractionResult extract_ilp(const ExtractionProblem& problem, const IlpOptions& options = {});

}  // namespace eqfuse::extract
