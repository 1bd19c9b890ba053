#pragma once
// The rule language: reads rule files into a RuleSet (rules/rule.h), rejecting at file:line:col
// everything that can be rejected without shapes: unknown ops, wrong arity, unknown or
// ill-typed attributes, right-hand-side variables the left does not bind, conditions on unbound
// variables, include cycles, duplicate names. The shape check of right-hand sides is the
// checker's (rules/checker.h).
//
// It extends the `saturate` syntax (egraph/rewrite_file.h), which it keeps accepting:
//   (rewrite NAME LHS RHS [:when COND...] [:group G])
//   (birewrite NAME LHS RHS ...)        NAME and NAME-rev
//   (rewrite NAME (multi L1 L2...) (multi R1 R2...) ...)   multi-pattern: Li is replaced by Ri
//   (include "other.rules")             relative to the including file; cycles are errors
//   (group G FORM...)                   rules inside default to group G
//   (fusion-ops ...), (kernel-kind ...) which fused kernels exist (rules/fusion_kinds.h)
// Terms use op-table names: (Transpose ?x :perm (1 0)), attribute variables (:perm ?p),
// computed attributes on the right (:axis (+ ?a 1)), projections (Proj :index 0 (Split ...)).
// Unwritten attributes mean the schema default. See rules/condition.h for conditions.
#include <string>
#include <string_view>
#include <vector>

#include "rules/rule.h"

namespace eqfuse::rules {

RuleSet parse_rules(std::string_view text, std::string_view file = "<rules>");
RuleSet parse_rule_file(const std::string& path);
// The rules of several files, in order (a folder given as a file is an Error naming it, as is
// a rule name that two files define).
RuleSet parse_rule_files(const std::vector<std::string>& paths);

}  // namespace eqfuse::rules
