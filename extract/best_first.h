#pragma once
// Exact extraction by best-first search (A*), for problems whose costs are non-negative. It
// complements CBC where the LP relaxation is weak: on the transformers' e-graphs, fused kernels
// that skip intermediate e-classes let a fractional solution share one e-class between
// alternatives that no integral choice takes together, and on resnet18's the residual algebra's
// cycles leave an LP worth under 1% of the optimum until cycle cuts are added one solve at a
// time; this search proves both in milliseconds.
//
// The e-classes are decided one at a time in a fixed top-down order of their strongly connected
// components (every component after those with an edge into it: the reverse of a depth-first
// postorder from the roots, which keeps a layer's e-classes together). A state is the set of
// e-classes that the e-nodes chosen so far need and that are not decided yet; the next one
// decided is the first of them in the order, so two partial choices that need the same e-classes
// are one state. Inside a component with a cycle the state also holds the e-nodes chosen there so
// far: an e-node whose decided children reach its own e-class through them is refused, and an
// e-class of the component needed again after its turn is decided out of order (no e-class
// outside the component can read it). Its cost so far is g; the estimate h is the larger of two
// lower bounds on what is left: the sum, over every e-class that the state's e-classes need in
// every term (the mandatory closure), of that e-class's cheapest e-node (each is still to be
// chosen, once; those decided already in the current component excepted), and the critical path
// of the costliest of them (a term costs at least its root e-node plus a term of one child; on the
// transformers' nearly sequential kernels this alone comes within 3-17% of the optimum), taken
// outside the current component when it has a cycle, where a term may reuse what is decided. h
// never overestimates, so the first complete state taken is optimal, and the largest estimate
// taken so far is a lower bound on the optimal DAG cost at any time.
#include <chrono>
#include <cstddef>
#include <optional>

#include "extract/choice.h"

namespace eqfuse::extract {

struct BestFirstOptions {
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  // The search stops when its tables (a bit set per e-class for the closures, one per state)
  // would take more than this: a stop, not an error.
  size_t max_bytes = size_t{512} << 20;
};

struct BestFirstResult {
  bool complete = false;  // the search ended: `bound` is the optimal DAG cost
  double bound = 0;       // a proven lower bound on the DAG cost
  Choice choice;          // a choice cheaper than the incumbent, when one was found
  size_t states = 0;      // states stored, for reports and tests
};

// nullopt where the search does not apply: a negative cost, so many e-classes that their
// closures take half of `max_bytes`, or an e-class on a cycle with 65,535 e-nodes or more.
// `incumbent_cost` (the DAG cost of a known valid choice) prunes every state whose estimate exceeds
// it; when nothing cheaper exists, `complete` is set with `bound` equal to it and `choice` empty.
std::optional<BestFirstResult> best_first_search(const ExtractionProblem& problem,
                                                 double incumbent_cost,
                                                 const BestFirstOptions& options = {});

}  // namespace eqfuse::extract
