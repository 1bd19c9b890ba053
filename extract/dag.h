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
// Switches run to a local optimum, then kicks, until neither helps or time runs out; the
// deadline is checked between any two moves (not once per e-class: one may have thousands of
// candidates), so it returns within its budget plus one move. Every move keeps the choice
// acyclic. It is what eqfuse uses when the ILP is too slow, and the ILP's warm start. With a
// time limit the result can depend on machine speed. Costs must be non-negative (see
// require_non_negative_costs in extract/greedy.h).
#include "extract/choice.h"

namespace eqfuse::extract {

struct DagOptions {
  double time_limit_seconds = 0.8;  // stops improving (keeping the best so far) after this
  // More choices to start the local search from, beside the greedy one (kNoNode where a start
  // has no opinion: the greedy choice fills those). One local optimum can hide a better one
  // that a different start reaches; the optimizer passes the graphs it already has (the input,
  // the algebra's best), whose fused forms single switches find. The cheapest result wins, the
  // earliest start among equals; a start that is not a valid acyclic choice is skipped. All
  // share the one time limit, in order; past it a start is priced as it is.
  std::vector<Choice> starts;
};

// Throws eqfuse::Error when a root has no finite term or a cost is negative.
ExtractionResult extract_dag(const ExtractionProblem& problem, const DagOptions& options = {});

}  // namespace eqfuse::extract
