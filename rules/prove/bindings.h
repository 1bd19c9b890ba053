#pragma once
// The bindings a rule is proved at: the systematic enumeration of rules/shapes.h (the one place
// that decides which shapes a rule is tried at), with what it covered, so that a proof can state
// its bounds.
#include <vector>

#include "rules/rule.h"
#include "rules/shapes.h"

namespace eqfuse::rules::prove {

// Distinct bindings, deterministic for a rule and a choice; at most choice.wanted.
std::vector<RuleBinding> proof_bindings(const Rule& rule, const ShapeChoice& choice);

}  // namespace eqfuse::rules::prove
