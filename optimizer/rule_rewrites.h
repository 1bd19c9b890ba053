#pragma once
// Tensor rules (rules/rule.h) as e-graph rewrites over a TensorEGraph. The engine knows nothing
// of tensors, so the tensor meaning of a rule lives in what is attached to its Rewrite:
//  - one Condition that evaluates the rule's `:when` conditions against the TensorAnalysis of
//    the matched classes and then checks, before anything is added, that every right-hand
//    side infers and has the type of the root it replaces: a rule whose result would fail shape
//    inference (or change a type) is not applied, and counts as not applied;
//  - an Applier that evaluates computed attributes (`:axis (+ ?a 1)`) and adds the results,
//    merging result i with root i.
// Rewrites must run on an e-graph whose analysis is a TensorAnalysis (from_graph's).
#include <vector>

#include "egraph/rewrite.h"
#include "rules/rule.h"

namespace eqfuse::optimizer {

egraph::Rewrite compile_rule(const rules::Rule& rule);
std::vector<egraph::Rewrite> compile_rules(const rules::RuleSet& rules);

}  // namespace eqfuse::optimizer
