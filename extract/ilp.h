#pragma once
// Exact extraction by integer linear programming (CBC). A binary variable per e-node, a
// coverage constraint per root and per child e-class of each chosen e-node, and acyclicity
// only where the e-class graph has cycles: inside each non-trivial strongly connected
// component an order variable per e-class must strictly decrease along every chosen edge
// (tensat's cyclic e-graphs have few such components, so the ILP stays small). The DAG-aware
// heuristic's choice is the warm start, so the answer is never worse than it; on a time limit
// the best choice found is returned with `optimal` false and CBC's proven lower bound.
#include "extract/choice.h"

namespace eqfuse::extract {

struct IlpOptions {
  double time_limit_seconds = 60;
  // A complete, valid choice to start from (e.g. extract_dag's); computed when empty.
  Choice warm_start;
};

ExtractionResult extract_ilp(const ExtractionProblem& problem, const IlpOptions& options = {});

}  // namespace eqfuse::extract
