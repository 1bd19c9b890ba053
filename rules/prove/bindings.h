#pragma once
// The bindings a rule is proved at. They start from rules/shapes.h (the one place that decides
// representative shapes) and are topped up here when that sampler, which draws every variable's
// rank at random, finds too few for rules with many variables and rank conditions (folding a
// BatchNormalization into a Conv binds seven tensors, four of them of rank 1). The top-up reads
// the plain facts of the conditions, `(rank ?v N)` and `(same-shape ?a ?b)`, draws the rest at
// random as rules/shapes.h does, and keeps only candidates whose left-hand side type-checks and
// whose conditions hold, so it never widens what a rule claims.
#include <vector>

#include "rules/rule.h"
#include "rules/shapes.h"

namespace eqfuse::rules::prove {

// Distinct bindings, deterministic for a rule and a choice; at most choice.wanted.
std::vector<RuleBinding> proof_bindings(const Rule& rule, const ShapeChoice& choice);

}  // namespace eqfuse::rules::prove
