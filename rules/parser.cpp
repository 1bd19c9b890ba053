#include "rules/parser.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "egraph/egraph.h"
#include "ir/attr_text.h"
#include "ir/op_table.h"
#include "rules/condition.h"

namespace eqfuse::rules {

namespace fs = std::filesystem;

namespace {

Sexpr make_atom(Sexpr::Kind kind, std::string text, const Sexpr& near) {
  Sexpr s;
  s.kind = kind;
  s.text = std::move(text);
  s.where = near.where;
  s.source = near.source;
  return s;
}

// Copies `from`'s location (recursively) onto a generated node, so errors still point at the
// value the author wrote.
void locate(Sexpr& s, const Sexpr& from) {
  s.where = from.where;
  s.source = from.source;
  for (Sexpr& item : s.items) locate(item, from);
}

std::string schema_names(const ir::OpDef& def) {
  if (def.attrs.empty()) return "it has none";
  std::string out = "its attributes:";
  for (const ir::AttrSpec& spec : def.attrs) out += " :" + spec.name;
  return out;
}

// Reads one rule's sides and conditions into a Rule.
class RuleReader {
 public:
  explicit RuleReader(Rule& rule) : rule_(rule) {}

  Sexpr lhs(const Sexpr& term) { return normalize(term, true, false); }
  Sexpr rhs(const Sexpr& term) { return normalize(term, false, false); }

  VarScope scope() const {
    VarScope s;
    s.class_vars = rule_.class_vars;
    for (const AttrVar& a : rule_.attr_vars) s.attr_vars.push_back(a.name);
    return s;
  }

 private:
  const AttrVar* find_attr_var(std::string_view name) const {
    for (const AttrVar& a : rule_.attr_vars)
      if (a.name == name) return &a;
    return nullptr;
  }
  bool is_class_var(std::string_view name) const {
    return std::find(rule_.class_vars.begin(), rule_.class_vars.end(), name) !=
           rule_.class_vars.end();
  }

  void use_class_var(const Sexpr& v, bool binding) {
    if (find_attr_var(v.text))
      throw sexpr_error(
          v, "variable '?" + v.text + "' is used both as a tensor and as an attribute value");
    if (is_class_var(v.text)) return;
    if (!binding)
      throw sexpr_error(v, "variable '?" + v.text + "' is not bound by the left-hand side");
    rule_.class_vars.push_back(v.text);
  }

  void use_attr_var(const Sexpr& v, const ir::AttrSpec& spec, bool binding) {
    if (is_class_var(v.text))
      throw sexpr_error(
          v, "variable '?" + v.text + "' is used both as a tensor and as an attribute value");
    if (const AttrVar* a = find_attr_var(v.text)) {
      if (a->kind != spec.kind)
        throw sexpr_error(v, "attribute variable '?" + v.text + "' holds " +
                                 std::string(ir::attr_kind_name(a->kind)) + ", but ':" + spec.name +
                                 "' expects " + std::string(ir::attr_kind_name(spec.kind)));
      return;
    }
    if (!binding)
      throw sexpr_error(v, "variable '?" + v.text + "' is not bound by the left-hand side");
    rule_.attr_vars.push_back({v.text, spec.kind});
  }

  // `tuple_ok`: the term may be tuple-valued (it is Proj's child).
  Sexpr normalize(const Sexpr& t, bool binding, bool tuple_ok) {
    switch (t.kind) {
      case Sexpr::Kind::Var:
        if (tuple_ok) throw sexpr_error(t, "Proj takes a multi-output op, not a variable");
        use_class_var(t, binding);
        return t;
      case Sexpr::Kind::List:
        break;
      default:
        throw sexpr_error(t, "expected a variable ?x or a term (Op ...), found '" + t.str() + "'");
    }
    if (t.items.empty() || t.items[0].kind != Sexpr::Kind::Symbol)
      throw sexpr_error(t, "expected a term (Op child...) with an op name first");
    const Sexpr& head = t.items[0];
    std::vector<std::pair<const Sexpr*, const Sexpr*>> attrs;
    std::vector<const Sexpr*> children;
    for (size_t i = 1; i < t.items.size(); ++i) {
      const Sexpr& item = t.items[i];
      if (item.kind == Sexpr::Kind::Keyword) {
        if (i + 1 >= t.items.size())
          throw sexpr_error(item, "attribute ':" + item.text + "' has no value");
        for (auto& [k, v] : attrs)
          if (k->text == item.text)
            throw sexpr_error(item, "attribute ':" + item.text + "' is given twice");
        attrs.emplace_back(&item, &t.items[i + 1]);
        ++i;
      } else {
        children.push_back(&item);
      }
    }
    Sexpr out;
    out.kind = Sexpr::Kind::List;
    out.where = t.where;
    out.source = t.source;
    out.items.push_back(head);
    if (head.text == egraph::kProjOp) return normalize_proj(t, out, attrs, children, binding);
    if (tuple_ok == false && head.text == "multi")
      throw sexpr_error(head, "(multi ...) is only allowed as a whole side of a rule");
    const ir::OpDef* def = ir::find_op(head.text);
    if (!def) throw sexpr_error(head, "unknown op '" + head.text + "' (not in the op table)");
    auto n = static_cast<int>(children.size());
    if (n < def->min_inputs || (def->max_inputs >= 0 && n > def->max_inputs)) {
      std::string range =
          def->max_inputs < 0 ? "at least " + std::to_string(def->min_inputs)
          : def->min_inputs == def->max_inputs
              ? std::to_string(def->min_inputs)
              : std::to_string(def->min_inputs) + " to " + std::to_string(def->max_inputs);
      throw sexpr_error(t, "wrong arity: " + def->name + " takes " + range + " input" +
                               (range == "1" ? "" : "s") + ", got " + std::to_string(n));
    }
    // Attributes in key order, defaults filled in.
    std::map<std::string, Sexpr> values;
    for (auto& [key, value] : attrs) {
      const ir::AttrSpec* spec = def->find_attr(key->text);
      if (!spec)
        throw sexpr_error(*key, "unknown attribute ':" + key->text + "' for " + def->name + " (" +
                                    schema_names(*def) + ")");
      if (value->kind == Sexpr::Kind::Var) {
        use_attr_var(*value, *spec, binding);
        values[key->text] = *value;
        continue;
      }
      if (auto literal = ir::read_attr_literal(*value, spec->kind)) {
        Sexpr canon = ir::attr_to_sexpr(*literal);
        locate(canon, *value);
        values[key->text] = canon;
        continue;
      }
      bool is_expr = value->is_list() && !value->items.empty();
      if (binding || !is_expr)
        throw sexpr_error(*value, "expected " + std::string(ir::attr_kind_name(spec->kind)) +
                                      " for ':" + key->text + "'" +
                                      (binding ? ", or an attribute variable ?v"
                                               : ", an attribute variable or an expression"));
      check_expr(*value, scope(), false);
      values[key->text] = *value;
    }
    for (const ir::AttrSpec& spec : def->attrs) {
      if (values.count(spec.name)) continue;
      if (spec.default_value) {
        Sexpr canon = ir::attr_to_sexpr(*spec.default_value);
        locate(canon, head);
        values[spec.name] = canon;
      } else if (spec.required) {
        throw sexpr_error(t, def->name + " needs attribute ':" + spec.name + "'");
      }
    }
    if (def->name == "Split" && !values.count("split") && !values.count("num_outputs"))
      throw sexpr_error(t, "Split in a rule needs :split or :num_outputs (how many outputs)");
    for (auto& [key, value] : values) {
      out.items.push_back(make_atom(Sexpr::Kind::Keyword, key, value));
      out.items.push_back(value);
    }
    for (const Sexpr* child : children) out.items.push_back(normalize(*child, binding, false));
    // Tuple-valued ops are read through Proj only.
    ir::Attributes literal_attrs;
    for (auto& [key, value] : values) {
      const ir::AttrSpec* spec = def->find_attr(key);
      if (auto v = ir::read_attr_literal(value, spec->kind)) literal_attrs.set(key, *v);
    }
    bool tuple = ir::is_tuple_term(*def, literal_attrs);
    if (tuple && !tuple_ok)
      throw sexpr_error(t, def->name + " yields several values; take one with (Proj :index K (" +
                               def->name + " ...))");
    if (!tuple && tuple_ok)
      throw sexpr_error(t, "Proj takes a multi-output op; " + def->name + " yields one value");
    return out;
  }

  Sexpr normalize_proj(const Sexpr& t, Sexpr& out,
                       const std::vector<std::pair<const Sexpr*, const Sexpr*>>& attrs,
                       const std::vector<const Sexpr*>& children, bool binding) {
    if (attrs.size() != 1 || attrs[0].first->text != "index" ||
        attrs[0].second->kind != Sexpr::Kind::Integer || attrs[0].second->integer < 0)
      throw sexpr_error(t, "expected (Proj :index K TERM) with K a non-negative integer");
    if (children.size() != 1)
      throw sexpr_error(t,
                        "wrong arity: Proj takes 1 input, got " + std::to_string(children.size()));
    out.items.push_back(*attrs[0].first);
    out.items.push_back(*attrs[0].second);
    Sexpr child = normalize(*children[0], binding, true);
    // Check the index against a statically known output count.
    const ir::OpDef* def = ir::find_op(child.items[0].text);
    ir::Attributes literal_attrs;
    for (size_t i = 1; i + 1 < child.items.size(); ++i)
      if (child.items[i].kind == Sexpr::Kind::Keyword) {
        if (const ir::AttrSpec* spec = def->find_attr(child.items[i].text))
          if (auto v = ir::read_attr_literal(child.items[i + 1], spec->kind))
            literal_attrs.set(child.items[i].text, *v);
        ++i;
      }
    size_t count = ir::term_output_count(*def, literal_attrs);
    bool known =
        !(def->name == "Split" && !literal_attrs.has("split") && !literal_attrs.has("num_outputs"));
    if (known && static_cast<size_t>(attrs[0].second->integer) >= count)
      throw sexpr_error(*attrs[0].second, "index " + std::to_string(attrs[0].second->integer) +
                                              " is out of range: " + def->name + " has " +
                                              std::to_string(count) + " outputs here");
    out.items.push_back(std::move(child));
    return out;
  }

  Rule& rule_;
};

std::vector<const Sexpr*> side_terms(const Sexpr& side) {
  std::vector<const Sexpr*> out;
  if (side.is_list() && !side.items.empty() && side.items[0].is_symbol("multi")) {
    if (side.items.size() < 2) throw sexpr_error(side, "(multi ...) needs at least one term");
    for (size_t i = 1; i < side.items.size(); ++i) out.push_back(&side.items[i]);
  } else {
    out.push_back(&side);
  }
  return out;
}

std::string side_text(const std::vector<Sexpr>& terms) {
  if (terms.size() == 1) return terms[0].str();
  std::string out = "(multi";
  for (const Sexpr& t : terms) out += " " + t.str();
  return out + ")";
}

struct Loader {
  RuleSet set;
  std::map<std::string, SourceLocation> names;
  std::vector<std::string> stack;  // files being read, for include cycles

  void read_file(const std::string& path, const std::string& group, const Sexpr* from) {
    std::string canonical = fs::weakly_canonical(fs::path(path)).string();
    auto it = std::find(stack.begin(), stack.end(), canonical);
    if (it != stack.end()) {
      std::string chain;
      for (; it != stack.end(); ++it) chain += *it + " -> ";
      chain += canonical;
      throw sexpr_error(*from, "include cycle: " + chain);
    }
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      if (from) throw sexpr_error(*from, "cannot read included file '" + path + "'");
      fail("cannot read '" + path + "'");
    }
    std::stringstream buffer;
    buffer << in.rdbuf();
    stack.push_back(canonical);
    read_text(buffer.str(), path, group);
    stack.pop_back();
  }

  void read_text(std::string_view text, const std::string& file, const std::string& group) {
    std::vector<Sexpr> forms = parse_sexprs(text, file);
    for (const Sexpr& f : forms) read_form(f, file, group);
  }

  void read_form(const Sexpr& f, const std::string& file, const std::string& group) {
    if (!f.is_list() || f.items.empty() || f.items[0].kind != Sexpr::Kind::Symbol)
      throw sexpr_error(
          f,
          "expected (rewrite ...), (birewrite ...), (include \"file\"), (group NAME ...), "
          "(fusion-ops ...) or (kernel-kind ...)");
    const Sexpr& head = f.items[0];
    if (head.text == "include") {
      if (f.items.size() != 2 || f.items[1].kind != Sexpr::Kind::String)
        throw sexpr_error(f, "expected (include \"file\")");
      fs::path base =
          file.empty() || file[0] == '<' ? fs::current_path() : fs::path(file).parent_path();
      read_file((base / f.items[1].text).string(), group, &f.items[1]);
      return;
    }
    if (head.text == "group") {
      if (f.items.size() < 2 || f.items[1].kind != Sexpr::Kind::Symbol)
        throw sexpr_error(f, "expected (group NAME FORM...)");
      for (size_t i = 2; i < f.items.size(); ++i) read_form(f.items[i], file, f.items[1].text);
      return;
    }
    if (is_fusion_form(head.text)) {
      read_fusion_form(f, set.fusion);
      return;
    }
    if (head.text != "rewrite" && head.text != "birewrite")
      throw sexpr_error(head, "unknown form '" + head.text +
                                  "': expected rewrite, birewrite, include, group, fusion-ops or "
                                  "kernel-kind");
    read_rule(f, file, group);
  }

  void add_name(const Sexpr& where, const std::string& name) {
    auto [it, inserted] = names.emplace(name, where.where);
    if (!inserted)
      throw sexpr_error(where,
                        "rule '" + name + "' is defined twice (first at " + it->second.str() + ")");
  }

  void read_rule(const Sexpr& f, const std::string& file, const std::string& group) {
    const std::string& kind = f.items[0].text;
    if (f.items.size() < 4)
      throw sexpr_error(f, "expected (" + kind + " NAME LHS RHS [:when COND...] [:group G])");
    const Sexpr& name = f.items[1];
    if (name.kind != Sexpr::Kind::Symbol)
      throw sexpr_error(name, "expected a rule name, found '" + name.str() + "'");
    std::vector<const Sexpr*> conditions;
    std::string rule_group = group;
    for (size_t i = 4; i < f.items.size(); ++i) {
      const Sexpr& key = f.items[i];
      if (key.kind != Sexpr::Kind::Keyword)
        throw sexpr_error(
            key, "expected :when or :group after the right-hand side, found '" + key.str() + "'");
      if (key.text == "when") {
        size_t j = i + 1;
        while (j < f.items.size() && f.items[j].kind != Sexpr::Kind::Keyword)
          conditions.push_back(&f.items[j++]);
        if (j == i + 1) throw sexpr_error(key, "':when' needs at least one condition");
        i = j - 1;
      } else if (key.text == "group") {
        if (i + 1 >= f.items.size() || f.items[i + 1].kind != Sexpr::Kind::Symbol)
          throw sexpr_error(key, "':group' needs a group name");
        rule_group = f.items[++i].text;
      } else {
        throw sexpr_error(key, "unknown option ':" + key.text + "' (expected :when or :group)");
      }
    }
    bool bi = kind == "birewrite";
    add_name(name, name.text);
    set.rules.push_back(
        make_rule(name.text, f, f.items[2], f.items[3], conditions, file, rule_group, bi));
    if (bi) {
      add_name(name, name.text + "-rev");
      set.rules.push_back(make_rule(name.text + "-rev", f, f.items[3], f.items[2], conditions, file,
                                    rule_group, bi));
    }
  }

  static Rule make_rule(const std::string& name, const Sexpr& form, const Sexpr& lhs_form,
                        const Sexpr& rhs_form, const std::vector<const Sexpr*>& conditions,
                        const std::string& file, const std::string& group, bool bi) {
    Rule rule;
    rule.name = name;
    rule.where = form.where;
    rule.group = group.empty() ? "default" : group;
    rule.from_birewrite = bi;
    rule.file = file.empty() || file[0] == '<' ? "" : file;
    RuleReader reader(rule);
    std::vector<const Sexpr*> lhs = side_terms(lhs_form), rhs = side_terms(rhs_form);
    if (lhs.size() != rhs.size())
      throw sexpr_error(rhs_form, "the right-hand side has " + std::to_string(rhs.size()) +
                                      " term(s) for " + std::to_string(lhs.size()) +
                                      " on the left: (multi ...) sides pair up term by term");
    for (const Sexpr* t : lhs) {
      if (t->kind == Sexpr::Kind::Var)
        throw sexpr_error(*t, "a left-hand side must be a term (Op ...), not a lone variable");
      rule.lhs.push_back(reader.lhs(*t));
    }
    VarScope scope = reader.scope();
    for (const Sexpr* c : conditions) {
      check_expr(*c, scope, true);
      rule.conditions.push_back({*c, c->str()});
    }
    for (const Sexpr* t : rhs) rule.rhs.push_back(reader.rhs(*t));
    rule.text = "(rewrite " + name + " " + side_text(rule.lhs) + " " + side_text(rule.rhs);
    if (!rule.conditions.empty()) {
      rule.text += " :when";
      for (const Condition& c : rule.conditions) rule.text += " " + c.text;
    }
    rule.text += ")";
    return rule;
  }
};

}  // namespace

RuleSet parse_rules(std::string_view text, std::string_view file) {
  Loader loader;
  loader.read_text(text, std::string(file), "");
  return std::move(loader.set);
}

RuleSet parse_rule_file(const std::string& path) {
  Loader loader;
  loader.read_file(path, "", nullptr);
  return std::move(loader.set);
}

RuleSet parse_rule_files(const std::vector<std::string>& paths) {
  RuleSet all;
  for (const std::string& path : paths) {
    // An ifstream opens a folder and reads it as empty, which would pass as a file of no rules.
    std::error_code ec;
    if (fs::is_directory(path, ec))
      throw Error("cannot read '" + path + "': it is a folder, not a rule file");
    RuleSet set = parse_rule_file(path);
    all.fusion.add(set.fusion);
    for (Rule& r : set.rules) {
      if (const Rule* first = all.find(r.name))
        throw Error(r.where,
                    "rule '" + r.name + "' is defined twice (first at " + first->where.str() + ")");
      all.rules.push_back(std::move(r));
    }
  }
  return all;
}

}  // namespace eqfuse::rules
