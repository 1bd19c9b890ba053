#pragma once
// DAG-aware heuristic extraction. Tree-cost greedy pays for a shared subterm once per use;
// a compiled tensor graph runs it once. This extractor starts from the greedy choice and
// improves its DAG cost by local search: it re-chooses one e-class at a time, pricing exactly
// what the switch frees (subterms no longer used) and adds (new subterms, themselves chosen
// greedily given everything already in the graph is free), and keeps every switch that lowers
// the DAG cost and keeps the choice acyclic. It is what eqfuse uses when the ILP is too slow,
// and the ILP's warm start.
#include "extract/choice.h"

namespace eqfuse::extract {

struct DagOptions {
  double time_limit_seconds = 0.8;  // stops improving (keeping the best so far) after this
};

// Throws eqfuse::Error when a root has no finite term.
ExtractionResult extract_dag(const ExtractionProblem& problem, const DagOptions& options = {});

}  // namespace eqfuse::extract
