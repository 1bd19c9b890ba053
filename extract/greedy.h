#pragma once
// Bottom-up greedy extraction: each e-class takes the e-node of least tree cost (its cost plus
// its children's tree costs), computed as a fixpoint so cyclic e-graphs work. It is optimal
// for tree cost, fast, and the start of the DAG-aware extractors; on tensor graphs, where
// subterms are shared, its DAG cost can be far from the best (nasneta: 15% above).
#include <vector>

#include "extract/choice.h"

namespace eqfuse::extract {

struct TreeCosts {
  Choice choice;             // every e-class with a finite tree cost, acyclic
  std::vector<double> cost;  // tree cost by e-class; +inf where no finite term exists
};

// The tree-optimal choice for every e-class. `fixed`, when given, holds e-classes (entries
// other than kNoNode) whose e-node is already decided and whose cost counts as 0: the DAG-aware
// extractor uses it to price what a new e-node adds to a graph already paid for. The fixed
// part must be closed under children and acyclic; the result then is acyclic too.
TreeCosts tree_costs(const ExtractionProblem& problem, const Choice* fixed = nullptr);

// Greedy and DAG-aware extraction need non-negative costs: tree costs are a fixpoint that a
// cycle of negative total cost drives down forever, and taking strict improvements keeps the
// tree-optimal choice acyclic only when a term never costs less than its subterms. The
// DAG-aware search starts from those tree costs and prices its moves with them.
// Throws eqfuse::Error (bad input) naming the first e-node with a negative cost and `method`,
// and pointing at the ILP, which handles negative costs exactly.
void require_non_negative_costs(const ExtractionProblem& problem, const char* method);

// Throws eqfuse::Error when a root has no finite term or a cost is negative.
ExtractionResult extract_greedy(const ExtractionProblem& problem);

}  // namespace eqfuse::extract
