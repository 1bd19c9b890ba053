#include "egraph/rewrite_file.h"

#include <set>

namespace eqfuse::egraph {

std::vector<RuleForm> read_rule_forms(const std::vector<Sexpr>& forms) {
  std::vector<RuleForm> rules;
  std::set<std::string> names;
  for (const Sexpr& f : forms) {
    if (!f.is_list() || f.items.empty())
      throw sexpr_error(f, "expected (rewrite NAME LHS RHS) or (birewrite NAME LHS RHS)");
    const Sexpr& head = f.items[0];
    RuleForm rule;
    if (head.is_symbol("rewrite")) {
      rule.kind = RuleForm::Kind::Rewrite;
    } else if (head.is_symbol("birewrite")) {
      rule.kind = RuleForm::Kind::Birewrite;
    } else {
      throw sexpr_error(head, "unknown form '" + head.str() + "': expected rewrite or birewrite");
    }
    if (f.items.size() < 4)
      throw sexpr_error(f, "expected (" + head.text + " NAME LHS RHS): too few items");
    const Sexpr& name = f.items[1];
    if (name.kind != Sexpr::Kind::Symbol)
      throw sexpr_error(name, "expected a rule name, found '" + name.str() + "'");
    rule.name = name.text;
    if (!names.insert(rule.name).second)
      throw sexpr_error(name, "rule '" + rule.name + "' is defined twice");
    if (rule.kind == RuleForm::Kind::Birewrite && !names.insert(rule.name + "-rev").second)
      throw sexpr_error(name, "rule '" + rule.name + "-rev' is defined twice");
    rule.form = &f;
    rule.lhs = &f.items[2];
    rule.rhs = &f.items[3];
    for (size_t i = 4; i < f.items.size(); i += 2) {  // :key value pairs
      const Sexpr& key = f.items[i];
      if (key.kind != Sexpr::Kind::Keyword)
        throw sexpr_error(
            key, "expected a :keyword option after the right-hand side, found '" + key.str() + "'");
      if (i + 1 >= f.items.size())
        throw sexpr_error(key, "option ':" + key.text + "' has no value");
      rule.options.emplace_back(&key, &f.items[i + 1]);
    }
    rules.push_back(rule);
  }
  return rules;
}

std::vector<Rewrite> to_rewrites(const std::vector<RuleForm>& rules) {
  std::vector<Rewrite> out;
  for (const RuleForm& rule : rules) {
    if (!rule.options.empty())
      throw sexpr_error(*rule.options[0].first,
                        "option ':" + rule.options[0].first->text + "' is not supported here");
    out.push_back(Rewrite::make(rule.name, *rule.lhs, *rule.rhs));
    if (rule.kind == RuleForm::Kind::Birewrite) {
      Rewrite back = Rewrite::make(rule.name + "-rev", *rule.rhs, *rule.lhs);
      if (back.vars.size() != out.back().vars.size())
        throw sexpr_error(*rule.lhs, "birewrite '" + rule.name +
                                         "': the left-hand side binds variables the right-hand "
                                         "side does not");
      out.push_back(std::move(back));
    }
  }
  return out;
}

std::vector<Rewrite> read_rewrite_file(const std::string& path) {
  return to_rewrites(read_rule_forms(read_sexpr_file(path)));
}

std::vector<Rewrite> parse_rewrites(std::string_view text, std::string_view file) {
  std::vector<Sexpr> forms = parse_sexprs(text, file);
  return to_rewrites(read_rule_forms(forms));
}

}  // namespace eqfuse::egraph
