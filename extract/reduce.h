#pragma once
// Shrinks an extraction problem before the exact solver, keeping its optimal DAG cost and
// every acyclic choice's worth. On tensat's e-graphs nearly half the e-classes hold a single
// e-node of cost 0 (weights, shapes, Split, Enlarge, Merge): choosing one is forced and free,
// so the ILP need not see them. What is dropped, and why it is sound:
//  - e-nodes with a child that is their own e-class, or a child e-class with no term made of
//    kept e-nodes, or a child with no term that avoids their own e-class (only children in the
//    same strongly connected component can need it): no acyclic choice uses them;
//  - folded e-classes (one usable e-node, of cost 0): every parent points at the folded e-node's
//    children instead (recursively), which keeps paths and so cycles between the other
//    e-classes; the e-node is put back when a choice is expanded;
//  - dominated e-nodes: another e-node of the same e-class costs no more and needs a subset of
//    its child e-classes (after folding), so switching to it never costs more or closes a cycle
//    (only when no cost is negative: else what it leaves out may have paid);
//  - e-classes not reachable from the roots through what is left.
// Children are deduplicated: repeats change neither the DAG cost nor the cycles.
#include "extract/choice.h"

namespace eqfuse::extract {

struct ReducedProblem {
  ExtractionProblem problem;               // the kept e-classes and e-nodes
  std::vector<ClassIndex> original_class;  // by reduced e-class
  std::vector<NodeIndex> original_node;    // by reduced e-node
  std::vector<NodeIndex> reduced_node;     // by original e-node; kNoNode where dropped
  std::vector<NodeIndex> forced_node;      // by original e-class; its e-node where folded
  std::vector<NodeIndex> dominated_by;     // by original e-node; a kept e-node or kNoNode

  // A valid choice of the original problem as a valid choice of the reduced one, no costlier
  // (dominated e-nodes switch to their dominator). Throws eqfuse::Error on an invalid one.
  Choice reduce(const ExtractionProblem& original, const Choice& choice) const;
  // A choice of the reduced problem (kNoNode where unchosen) as one of the original, with the
  // folded e-classes filled in; same DAG cost.
  Choice expand(const ExtractionProblem& original, const Choice& reduced) const;
};

ReducedProblem reduce_problem(const ExtractionProblem& problem);

}  // namespace eqfuse::extract
