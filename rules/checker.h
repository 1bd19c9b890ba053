#pragma once
// The shape check of tensor rules, the last check before use: a rule whose right-hand side does
// not type-check where its left-hand side does would add ill-typed nodes to every e-graph it
// fires on. Each rule is instantiated at a few representative bindings (rules/shapes.h) that
// satisfy its left-hand side and conditions; at each, every result must infer (ir op table) and
// have the type of the root it replaces. A rule for which no binding is found cannot be checked
// and gets a warning, not an error: the prover has the final word on it.
#include <string>
#include <vector>

#include "rules/rule.h"
#include "rules/shapes.h"

namespace eqfuse::rules {

// Throws Error (file:line:col of the rule, with a caret) naming the binding and the failure.
void check_rule(const Rule& rule, const ShapeChoice& choice = {});
// check_rule on every rule; appends a warning to set.warnings for each unchecked rule.
void check_rules(RuleSet& set, const ShapeChoice& choice = {});

struct LoadOptions {
  std::vector<std::string> enable_groups;  // empty: all
  std::vector<std::string> disable_groups;
  bool check_shapes = true;
};
// Parses the files (rules/parser.h), checks the rules, and keeps the selected groups.
RuleSet load_rules(const std::vector<std::string>& paths, const LoadOptions& options = {});

// "x: f32[2,3], y: f32[3]; ?p = (1 0)": a binding for messages.
std::string binding_string(const RuleBinding& binding);

}  // namespace eqfuse::rules
