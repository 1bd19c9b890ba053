#pragma once
// Rule files for `eqfuse saturate`: one form per rule,
//   (rewrite NAME LHS RHS)     LHS => RHS
//   (birewrite NAME LHS RHS)   both directions: NAME (LHS => RHS) and NAME-rev (RHS => LHS)
// The rules module extends this syntax (`:when` conditions, attribute checks, multi-patterns)
// and must keep accepting it; so parsing is split in two steps it can reuse: `read_rule_forms`
// checks the shape of each form and collects trailing `:keyword value` options, and
// `to_rewrites` builds the engine's Rewrites. Options this module does not know are errors
// here, at their file:line:col.
#include <string>
#include <vector>

#include "egraph/rewrite.h"
#include "support/sexpr.h"

namespace eqfuse::egraph {

struct RuleForm {
  enum class Kind { Rewrite, Birewrite } kind;
  std::string name;
  const Sexpr* form;  // the whole (rewrite ...) list
  const Sexpr* lhs;
  const Sexpr* rhs;
  std::vector<std::pair<const Sexpr*, const Sexpr*>> options;  // (:keyword, value)
};

// Checks each top-level form is a rewrite/birewrite with a unique symbol name and two patterns.
// The returned forms point into `forms`.
std::vector<RuleForm> read_rule_forms(const std::vector<Sexpr>& forms);
// Builds the rewrites (two per birewrite); rejects options, and a birewrite whose sides do not
// bind the same variables.
std::vector<Rewrite> to_rewrites(const std::vector<RuleForm>& rules);
// Both steps on a file / on text.
std::vector<Rewrite> read_rewrite_file(const std::string& path);
std::vector<Rewrite> parse_rewrites(std::string_view text, std::string_view file = "<rules>");

}  // namespace eqfuse::egraph
