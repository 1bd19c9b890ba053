#pragma once
// A choice picks one e-node per needed e-class; it is what an extractor returns. Its DAG cost
// (each distinct chosen e-node counted once, as a compiled graph runs each op once) is the
// measure eqfuse optimizes; the tree cost (shared subterms counted once per use) is what
// bottom-up greedy optimizes, reported for comparison.
#include <optional>
#include <string>
#include <vector>

#include "extract/problem.h"

namespace eqfuse::extract {

// One e-node per e-class, kNoNode where the e-class is not chosen.
using Choice = std::vector<NodeIndex>;

struct ExtractionResult {
  Choice choice;  // set exactly on the e-classes reachable from the roots
  double dag_cost = 0;
  double tree_cost = 0;
  double seconds = 0;
  bool optimal = false;         // proved optimal (ILP only)
  std::optional<double> bound;  // a proven lower bound on the DAG cost (ILP only)
  std::string stop_reason;      // why a search stopped (DAG-aware only: extract/dag.h)
};

// The e-classes reachable from the roots through the choice, children before parents, or
// nullopt when that part of the choice has a cycle, misses an e-class or names a node of the
// wrong e-class.
std::optional<std::vector<ClassIndex>> chosen_classes_bottom_up(const ExtractionProblem& problem,
                                                                const Choice& choice);
bool is_valid_choice(const ExtractionProblem& problem, const Choice& choice);

// Both throw eqfuse::Error (Internal) on an invalid choice.
double dag_cost(const ExtractionProblem& problem, const Choice& choice);
double tree_cost(const ExtractionProblem& problem, const Choice& choice);

// Keeps the choice only on the e-classes reachable from the roots, and fills in both costs.
ExtractionResult make_result(const ExtractionProblem& problem, const Choice& choice);

}  // namespace eqfuse::extract
