#include "rules/checker.h"

#include "ir/attr_text.h"
#include "rules/condition.h"
#include "rules/parser.h"

namespace eqfuse::rules {

std::string binding_string(const RuleBinding& b) {
  std::string out;
  auto sep = [&] {
    if (!out.empty()) out += ", ";
  };
  for (const auto& [name, t] : b.types) {
    sep();
    out += "?" + name + ": " + t.str();
  }
  for (const auto& [name, t] : b.values) {
    sep();
    out += "?" + name + " = " + t.str();
  }
  for (const auto& [name, a] : b.attrs) {
    sep();
    out += "?" + name + " = " + ir::encode_attr(a);
  }
  return out;
}

namespace {
[[noreturn]] void rule_fail(const Rule& rule, const Sexpr& at, const std::string& message) {
  throw sexpr_error(at, "rule '" + rule.name + "': " + message);
}
}  // namespace

namespace {
void check_rule_at(const Rule& rule, const std::vector<RuleBinding>& bindings) {
  for (const RuleBinding& b : bindings) {
    BindingView view(b);
    for (size_t i = 0; i < rule.rhs.size(); ++i) {
      auto left = term_types(rule.lhs[i], view);
      auto right = term_types(rule.rhs[i], view);
      if (!right) {
        std::string why;
        try {
          instantiate_rule(rule, b);
        } catch (const Error& e) {
          why = std::string(": ") + e.what();
        }
        rule_fail(rule, rule.rhs[i],
                  "the right-hand side fails shape inference at " + binding_string(b) + why);
      }
      if (left && (*left)[0] != (*right)[0])
        rule_fail(rule, rule.rhs[i],
                  "the right-hand side has type " + (*right)[0].str() +
                      " where the left-hand side has " + (*left)[0].str() + " (at " +
                      binding_string(b) + ")");
    }
  }
}

}  // namespace

void check_rule(const Rule& rule, const ShapeChoice& choice) {
  check_rule_at(rule, representative_bindings(rule, choice));
}

void check_rules(RuleSet& set, const ShapeChoice& choice) {
  for (const Rule& rule : set.rules) {
    std::vector<RuleBinding> bindings = representative_bindings(rule, choice);
    if (bindings.empty()) {
      set.warnings.push_back(rule.where.str() + ": rule '" + rule.name +
                             "': no shapes found that satisfy its left-hand side and conditions; "
                             "its right-hand side was not shape-checked");
      continue;
    }
    check_rule_at(rule, bindings);
  }
}

RuleSet load_rules(const std::vector<std::string>& paths, const LoadOptions& options) {
  RuleSet all;
  for (const std::string& path : paths) {
    RuleSet one = parse_rule_file(path);
    for (Rule& r : one.rules) {
      if (all.find(r.name)) throw Error(r.where, "rule '" + r.name + "' is defined in two files");
      all.rules.push_back(std::move(r));
    }
  }
  if (options.check_shapes) check_rules(all, {});
  return all.select(options.enable_groups, options.disable_groups);
}

}  // namespace eqfuse::rules
