#pragma once
// Representative bindings of a rule: concrete types for its class variables (and values for
// its attribute variables and constant leaves) under which the left-hand side type-checks and
// the conditions hold. The checker instantiates the right-hand side at these to reject rules
// whose right side fails shape inference; the prover may extend the choice (more ranks,
// broadcasting cases) for its bounded proofs. Kept apart from both so that one function decides
// which shapes a rule is tried at.
#include <cstdint>
#include <vector>

#include "rules/rule.h"

namespace eqfuse::rules {

struct ShapeChoice {
  int max_rank = 4;
  std::vector<int64_t> dims = {1, 2, 3, 4};
  size_t wanted = 4;        // bindings to return at most
  size_t max_tries = 3000;  // random candidates tried (deterministic: fixed seed)
  uint64_t seed = 1;
};

// Distinct bindings, deterministic for a given rule and choice; empty when none was found
// within max_tries (the rule may be unsatisfiable, or need shapes the sampler does not reach).
std::vector<RuleBinding> representative_bindings(const Rule& rule, const ShapeChoice& choice = {});

}  // namespace eqfuse::rules
