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
#include <vector>

#include "extract/problem.h"

namespace eqfuse::extract {

struct MandatoryPair {
  ClassIndex needed;  // D
  ClassIndex by;      // c: every term of c contains D
};

struct MandatoryOptions {
  // The bit matrix for the transitive reduction; beyond it only the pairs whose `by` is a root
  // are kept.
  size_t max_matrix_bytes = size_t{256} << 20;
  // Pairs found before the reduction. A long chain of e-classes has quadratically many (every
  // e-class needs all below it); past this the search stops, keeping what it found.
  size_t max_pairs = size_t{1} << 24;
};

// The pairs, transitively reduced (a pair implied by two others is left out: D needed by c',
// c' needed by c). Sorted by `needed`, then `by`.
std::vector<MandatoryPair> mandatory_pairs(const ExtractionProblem& problem,
                                           const MandatoryOptions& options = {});

}  // namespace eqfuse::extract
