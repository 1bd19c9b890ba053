#pragma once
// The optimizer's own check: the original and the optimized graph run in the reference
// interpreter on the same random inputs and must agree, output by output, within
// |a - b| <= atol + rtol * |b|. It is what makes "never a silent wrong graph" hold even where a
// proof's bounds did not reach (float reassociation, shapes beyond the proof).
#include <map>
#include <string>

#include "ir/graph.h"

namespace eqfuse::optimizer {

struct VerifyOptions {
  double rtol = 1e-3, atol = 1e-4;
  int trials = 1;                               // random input sets
  std::map<std::string, int64_t> dim_bindings;  // symbolic dims (others: 1)
  uint64_t seed = 1;
};

struct VerifyResult {
  std::string outcome;  // "passed", "failed", "skipped"
  std::string note;     // the tolerance and inputs; the output that differs; why skipped
  double max_abs_error = 0;
};

VerifyResult verify_same_outputs(const ir::Graph& original, const ir::Graph& optimized,
                                 const VerifyOptions& options = {});

}  // namespace eqfuse::optimizer
