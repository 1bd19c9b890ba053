#pragma once
// Splits an extraction problem at separator e-classes, so that the exact solver meets several
// small problems instead of one large one. An e-class S is a separator when everything it
// reaches is reachable only through it (S dominates, from the roots, every e-class below it).
// Then the choices below S serve S alone: the optimal DAG cost is the optimal cost of the
// problem above S with S as a leaf that costs the optimum of the problem rooted at S, and every
// cycle through an e-class below S stays below S. On resnet18's optimizer e-graph the stages
// are separators: CBC proves each in seconds, while the whole does not close in minutes.
//
// A lower bound composes too: if each part's solve returns its best cost and a lower bound
// (nested separators priced at their parts' best costs), the sum of the parts' gaps bounds the
// whole problem's gap. Lowering the price of a nested leaf by d lowers any choice's cost by at
// most d.
#include <limits>
#include <utility>
#include <vector>

#include "extract/problem.h"

namespace eqfuse::extract {

struct ProblemPart {
  // The part's root: a separator, or kNoClass for the part that holds the problem's roots.
  ClassIndex separator;
  // The e-classes of the part (the separator first when there is one): everything reachable
  // from it except what lies below a nested separator, and except free e-classes (free_node).
  // Nested separators are in the list, and in `nested` with the index of their part.
  std::vector<ClassIndex> classes;
  std::vector<std::pair<ClassIndex, size_t>> nested;
  size_t num_nodes = 0;  // e-nodes in the part's own e-classes (not nested separators)
};
inline constexpr ClassIndex kNoClass = std::numeric_limits<ClassIndex>::max();

// The parts of `problem`, children before parents (the last holds the roots). A separator is
// used only when its own part holds at least `min_part_nodes` e-nodes; smaller ones stay in
// their parent. One part (the whole problem) when there is nothing to split.
std::vector<ProblemPart> split_at_separators(const ExtractionProblem& problem,
                                             size_t min_part_nodes);

// A childless e-node of cost 0 in e-class c, or kNoNode. With no negative cost it is the best
// choice for c, so such e-classes (weights, inputs) tie nothing together: the parts share them.
NodeIndex free_node(const ExtractionProblem& problem, ClassIndex c);

// One part as a problem of its own: the part's e-classes with all their e-nodes, except that a
// nested separator is a single leaf e-node costing `nested_cost[k]` (by index into
// part.nested), and the free e-classes its e-nodes read, each with its free e-node alone.
// By the part's e-node and e-class: the problem's e-node (kNoNode for a nested leaf) and
// e-class.
ExtractionProblem part_problem(const ExtractionProblem& problem, const ProblemPart& part,
                               const std::vector<double>& nested_cost,
                               std::vector<NodeIndex>* node_of, std::vector<ClassIndex>* class_of);

}  // namespace eqfuse::extract
