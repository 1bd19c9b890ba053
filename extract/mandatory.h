#pragma once
// Which e-classes a term cannot do without. E-class D is mandatory for e-class c when every
// acyclic term of c contains D; an optimal choice that picks c then picks D too, so
//   (sum of x over D's e-nodes)  >=  (sum of x over c's e-nodes)
// holds for it. The ILP's plain constraints (an e-node needs each child e-class) only say so
// for direct children, and its LP relaxation exploits that: a root spread over 40 alternatives
// that all lead to the same expensive convolutions pays 1/40 of them (resnet50's LP bound is 1%
// of the optimum; with these rows it is 99.8%).
//
// Found by removing D and propagating upwards: an e-node with a removed child is removed, an
// e-class whose e-nodes are all removed is removed. Everything removed that way truly needs D
// (by induction on the order of removal); classes kept alive only through a cycle are missed,
// which leaves the rows valid, just fewer.
#include <cstddef>
#include <utility>
#include <vector>

#include "extract/problem.h"

namespace eqfuse::extract {

struct MandatoryPair {
  ClassIndex needed;  // D
  ClassIndex by;      // c: every term of c contains D
};

// The pairs, transitively reduced (a pair implied by two others is left out: D needed by c',
// c' needed by c) when the problem is small enough for a bit matrix of `max_matrix_bytes`;
// beyond that only the pairs whose `by` is a root. Sorted by `needed`, then `by`.
std::vector<MandatoryPair> mandatory_pairs(const ExtractionProblem& problem,
                                           size_t max_matrix_bytes = size_t{256} << 20);

}  // namespace eqfuse::extract
