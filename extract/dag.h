#pragma once
// DAG-aware heuristic extraction. Tree-cost greedy pays for a shared subterm once per use;
// a compiled tensor graph runs it once. This extractor starts from the greedy choice and
// improves its DAG cost by local search over a full choice with reference counts, so a move
// is priced by touching only the subterms that enter or leave the graph:
//  - switch: re-choose one e-class; the subterms the new e-node needs are chosen greedily with
//    everything already in the graph counted free; kept if the DAG cost drops;
//  - kick: a switch taken even at a loss, followed by switches of the e-classes that can use
//    what it brought in; kept only if the two steps together lower the cost. Single switches
//    cannot see such pairs (on resnet50_acyclic they are what closes the gap to the optimum).
// Switches run to a local optimum, then kicks, until neither helps or the budget is spent; the
// budget is checked between any two moves (not once per e-class: one may have thousands of
// candidates). Every move keeps the choice acyclic. It is what eqfuse uses when the ILP is too
// slow, and the ILP's warm start. Costs must be non-negative (see require_non_negative_costs in
// extract/greedy.h).
//
// The budget is counted in the search's own steps, not in seconds, so that the same problem
// gives the same choice on any machine and under any load (a compiler's output must not depend
// on what ran beside it); a time limit stays as a safety net, and a result it cut short says so.
#include "extract/choice.h"

namespace eqfuse::extract {

// Why the search stopped: at a local optimum of every start, or at a limit (keeping the best
// choice so far). Only a time limit makes the result depend on machine speed.
enum class DagStop { converged, work_limit, time_limit };
const char* dag_stop_name(DagStop stop);  // "converged", "work limit", "time limit"

struct DagOptions {
  // Steps of the search (a step of a walk over the choice, or a question whether to go on):
  // 200-300 million a second on one core of a 2025 x86 server (AMD Zen 5). Every shared model
  // converges within a third of the default.
  uint64_t work_limit = 300'000'000;
  double time_limit_seconds = 30;
  // More choices to start the local search from, beside the greedy one (kNoNode where a start
  // has no opinion: the greedy choice fills those). One local optimum can hide a better one
  // that a different start reaches; the optimizer passes the graphs it already has (the input,
  // the algebra's best), whose fused forms single switches find. The cheapest result wins, the
  // earliest start among equals; a start that is not a valid acyclic choice is skipped. All
  // share the one budget, in order; past it a start is priced as it is.
  std::vector<Choice> starts;
};

// Throws eqfuse::Error when a root has no finite term or a cost is negative. The result's
// stop_reason is dag_stop_name of why it stopped.
ExtractionResult extract_dag(const ExtractionProblem& problem, const DagOptions& options = {});

}  // namespace eqfuse::extract
