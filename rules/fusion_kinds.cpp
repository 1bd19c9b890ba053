#include "rules/fusion_kinds.h"

#include <algorithm>

#include "ir/op_table.h"
#include "rules/library.h"

namespace eqfuse::rules {

bool FusionKinds::declared_in_role(const std::string& role, const std::string& op) const {
  for (const auto& [name, ops] : roles)
    if (name == role && std::find(ops.begin(), ops.end(), op) != ops.end()) return true;
  return false;
}

void FusionKinds::add(const FusionKinds& other) {
  roles.insert(roles.end(), other.roles.begin(), other.roles.end());
  kinds.insert(kinds.end(), other.kinds.begin(), other.kinds.end());
}

bool is_fusion_form(const std::string& head) {
  return head == "fusion-ops" || head == "kernel-kind";
}

namespace {

bool is_builtin_role(const std::string& name) {
  return name == kPointwiseRole || name == kIndexMapRole || name == kRowReductionRole ||
         name == kContractionRole;
}

bool is_role(const FusionKinds& kinds, const std::string& name) {
  if (is_builtin_role(name)) return true;
  return std::any_of(kinds.roles.begin(), kinds.roles.end(),
                     [&](const auto& r) { return r.first == name; });
}

// A role or op name.
std::string read_name(const Sexpr& item, const FusionKinds& kinds) {
  if (item.kind != Sexpr::Kind::Symbol)
    throw sexpr_error(item, "expected a role or an op name, found '" + item.str() + "'");
  if (!is_role(kinds, item.text) && !ir::find_op(item.text))
    throw sexpr_error(item, "'" + item.text + "' is neither a role (pointwise, index-map, " +
                                "row-reduction, contraction or one declared by fusion-ops) " +
                                "nor an op of the op table");
  return item.text;
}

// The part's items up to its options; returns the index of the first keyword.
size_t read_items(const Sexpr& part, const FusionKinds& kinds, std::vector<KindItem>& out) {
  size_t i = 1;
  for (; i < part.items.size() && part.items[i].kind != Sexpr::Kind::Keyword; ++i) {
    const Sexpr& item = part.items[i];
    KindItem k;
    if (item.is_list()) {
      if (item.items.size() < 2 || !item.items[0].is_symbol("one"))
        throw sexpr_error(item, "expected (one ROLE-OR-OP...)");
      k.exactly_one = true;
      for (size_t j = 1; j < item.items.size(); ++j)
        k.names.push_back(read_name(item.items[j], kinds));
    } else {
      k.names.push_back(read_name(item, kinds));
    }
    out.push_back(std::move(k));
  }
  if (out.empty()) throw sexpr_error(part, "a stage or contraction needs at least one item");
  return i;
}

int64_t read_count(const Sexpr& part, size_t i, const std::string& option, int64_t min) {
  if (i + 1 >= part.items.size() || part.items[i + 1].kind != Sexpr::Kind::Integer ||
      part.items[i + 1].integer < min)
    throw sexpr_error(part.items[i],
                      "':" + option + "' needs an integer of at least " + std::to_string(min));
  return part.items[i + 1].integer;
}

KindStage read_stage(const Sexpr& part, const FusionKinds& kinds) {
  KindStage stage;
  for (size_t i = read_items(part, kinds, stage.items); i < part.items.size(); i += 2) {
    if (part.items[i].kind != Sexpr::Kind::Keyword || part.items[i].text != "row-max")
      throw sexpr_error(part.items[i], "expected :row-max N after a stage's items, found '" +
                                           part.items[i].str() + "'");
    stage.row_max = read_count(part, i, "row-max", 1);
  }
  return stage;
}

KindContraction read_contraction(const Sexpr& part, const FusionKinds& kinds) {
  std::vector<KindItem> items;
  size_t i = read_items(part, kinds, items);
  KindContraction c;
  for (const KindItem& item : items) {
    if (item.exactly_one) throw sexpr_error(part, "(one ...) belongs in a stage");
    c.names.push_back(item.names[0]);
  }
  for (; i < part.items.size(); i += 2) {
    const Sexpr& option = part.items[i];
    if (option.kind == Sexpr::Kind::Keyword && option.text == "operands") {
      if (i + 1 >= part.items.size() ||
          !(part.items[i + 1].is_symbol("computed") || part.items[i + 1].is_symbol("stored")))
        throw sexpr_error(option, "':operands' needs 'computed' or 'stored'");
      c.computed_operands = part.items[i + 1].is_symbol("computed");
      continue;
    }
    if (option.kind != Sexpr::Kind::Keyword || option.text != "operand")
      throw sexpr_error(option,
                        "expected :operand K or :operands computed after a contraction's ops, "
                        "found '" +
                            option.str() + "'");
    c.chained_operand = static_cast<size_t>(read_count(part, i, "operand", 0));
  }
  return c;
}

void read_kind(const Sexpr& form, FusionKinds& kinds) {
  if (form.items.size() < 3 || form.items[1].kind != Sexpr::Kind::Symbol)
    throw sexpr_error(form,
                      "expected (kernel-kind NAME (stage ...) [(contract ...) (stage ...)]...)");
  KernelKindDecl kind;
  kind.name = form.items[1].text;
  kind.where = form.where;
  for (size_t i = 2; i < form.items.size(); ++i) {
    const Sexpr& part = form.items[i];
    bool want_stage = (i - 2) % 2 == 0;
    const char* want = want_stage ? "stage" : "contract";
    if (!part.is_list() || part.items.empty() || !part.items[0].is_symbol(want))
      throw sexpr_error(part, std::string("expected (") + want +
                                  " ...): a kind alternates stages and contractions, starting " +
                                  "and ending with a stage");
    if (want_stage)
      kind.stages.push_back(read_stage(part, kinds));
    else
      kind.contractions.push_back(read_contraction(part, kinds));
  }
  if (kind.stages.size() != kind.contractions.size() + 1)
    throw sexpr_error(form.items.back(), "a kind ends with a stage");
  for (size_t k = 1; k < kind.contractions.size(); ++k)
    if (!kind.contractions[k].chained_operand)
      throw sexpr_error(form,
                        "every contraction after the first reads the stage before it: "
                        "give it :operand K");
  kinds.kinds.push_back(std::move(kind));
}

void read_roles(const Sexpr& form, FusionKinds& kinds) {
  if (form.items.size() < 3 || form.items[1].kind != Sexpr::Kind::Symbol)
    throw sexpr_error(form, "expected (fusion-ops ROLE OP...)");
  const std::string& role = form.items[1].text;
  if (role == kPointwiseRole)
    throw sexpr_error(form.items[1],
                      "'pointwise' is built in: the op table's elementwise and "
                      "broadcast ops with one output");
  std::vector<std::string> ops;
  for (size_t i = 2; i < form.items.size(); ++i) {
    const Sexpr& op = form.items[i];
    if (op.kind != Sexpr::Kind::Symbol || !ir::find_op(op.text))
      throw sexpr_error(op, "'" + op.str() + "' is not an op of the op table");
    ops.push_back(op.text);
  }
  kinds.roles.emplace_back(role, std::move(ops));
}

}  // namespace

void read_fusion_form(const Sexpr& form, FusionKinds& kinds) {
  if (form.items[0].text == "fusion-ops")
    read_roles(form, kinds);
  else
    read_kind(form, kinds);
}

const FusionKinds& library_fusion_kinds() {
  static const FusionKinds kinds = library_rules().fusion;
  return kinds;
}

}  // namespace eqfuse::rules
