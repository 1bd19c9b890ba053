#include "rules/condition.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

#include "egraph/egraph.h"
#include "ir/attr_text.h"

namespace eqfuse::rules {

BindingView::BindingView(const RuleBinding& binding) : binding_(binding), types_(binding.types) {
  for (const auto& [name, value] : binding.values) types_[name] = value.type();
}

const ir::TensorType* BindingView::type(std::string_view var) const {
  auto it = types_.find(std::string(var));
  return it == types_.end() ? nullptr : &it->second;
}
const ir::Tensor* BindingView::value(std::string_view var) const {
  auto it = binding_.values.find(std::string(var));
  return it == binding_.values.end() ? nullptr : &it->second;
}
const ir::AttrValue* BindingView::attr(std::string_view var) const {
  auto it = binding_.attrs.find(std::string(var));
  return it == binding_.attrs.end() ? nullptr : &it->second;
}

bool VarScope::is_class(std::string_view v) const {
  return std::find(class_vars.begin(), class_vars.end(), v) != class_vars.end();
}
bool VarScope::is_attr(std::string_view v) const {
  return std::find(attr_vars.begin(), attr_vars.end(), v) != attr_vars.end();
}

namespace {

ExprValue unknown() {
  return {};
}
ExprValue boolean(bool b) {
  ExprValue v;
  v.kind = ExprValue::Kind::Bool;
  v.boolean = b;
  return v;
}
ExprValue integer(int64_t i) {
  ExprValue v;
  v.kind = ExprValue::Kind::Int;
  v.integer = i;
  v.number = static_cast<double>(i);
  return v;
}
ExprValue real(double d) {
  ExprValue v;
  v.kind = ExprValue::Kind::Float;
  v.number = d;
  return v;
}
ExprValue symbol(std::string s) {
  ExprValue v;
  v.kind = ExprValue::Kind::Symbol;
  v.symbol = std::move(s);
  return v;
}
ExprValue list(std::vector<ExprValue> items) {
  ExprValue v;
  v.kind = ExprValue::Kind::Ints;
  v.items = std::move(items);
  return v;
}
ExprValue dim_value(const ir::Dim& d) {
  if (d.is_static()) return integer(d.value());
  if (!d.symbol_name().empty()) return symbol(d.symbol_name());
  return unknown();
}

ExprValue from_attr(const ir::AttrValue& a) {
  switch (ir::attr_kind(a)) {
    case ir::AttrKind::Int:
      return integer(std::get<int64_t>(a));
    case ir::AttrKind::Float:
      return real(std::get<double>(a));
    case ir::AttrKind::String:
      return symbol(std::get<std::string>(a));
    case ir::AttrKind::Ints: {
      std::vector<ExprValue> items;
      for (int64_t i : std::get<std::vector<int64_t>>(a)) items.push_back(integer(i));
      return list(std::move(items));
    }
    case ir::AttrKind::Floats: {
      std::vector<ExprValue> items;
      for (double d : std::get<std::vector<double>>(a)) items.push_back(real(d));
      return list(std::move(items));
    }
    default:
      return unknown();
  }
}

// Three-valued equality: nullopt when undecidable (a static dim against a symbolic one).
std::optional<bool> equal(const ExprValue& a, const ExprValue& b) {
  using K = ExprValue::Kind;
  if (!a.known() || !b.known()) return std::nullopt;
  if (a.kind == K::Symbol && b.kind == K::Symbol) return a.symbol == b.symbol;
  if (a.kind == K::Symbol || b.kind == K::Symbol) return std::nullopt;
  if (a.kind == K::Bool || b.kind == K::Bool)
    return a.kind == b.kind ? std::optional<bool>(a.boolean == b.boolean) : std::nullopt;
  if (a.kind == K::Ints || b.kind == K::Ints) {
    if (a.kind != b.kind) return false;
    if (a.items.size() != b.items.size()) return false;
    bool all = true;
    for (size_t i = 0; i < a.items.size(); ++i) {
      auto e = equal(a.items[i], b.items[i]);
      if (!e) return std::nullopt;
      all = all && *e;
    }
    return all;
  }
  return a.number == b.number;
}

bool is_number(const ExprValue& v) {
  return v.kind == ExprValue::Kind::Int || v.kind == ExprValue::Kind::Float;
}

const ir::TensorType* single_type(const Sexpr& t, const MatchView& view,
                                  std::optional<ir::TensorType>& storage) {
  if (t.kind == Sexpr::Kind::Var) return view.type(t.text);
  auto types = term_types(t, view);
  if (!types || types->size() != 1) return nullptr;
  storage = (*types)[0];
  return &*storage;
}

std::optional<int64_t> as_int(const ExprValue& v) {
  if (v.kind == ExprValue::Kind::Int) return v.integer;
  return std::nullopt;
}

// Dim i of t (negative from the end), or unknown.
ExprValue dim_of(const ir::TensorType* t, const ExprValue& index) {
  auto i = as_int(index);
  if (!t || !i || !t->shape.has_rank()) return unknown();
  int64_t r = static_cast<int64_t>(t->shape.rank());
  int64_t k = *i < 0 ? *i + r : *i;
  if (k < 0 || k >= r) return unknown();
  return dim_value(t->shape[static_cast<size_t>(k)]);
}

std::optional<bool> broadcastable(const ir::Shape& a, const ir::Shape& b) {
  if (!a.has_rank() || !b.has_rank()) return std::nullopt;
  size_t r = std::max(a.rank(), b.rank());
  bool sure = true;
  for (size_t i = 0; i < r; ++i) {
    if (i >= a.rank() || i >= b.rank()) continue;
    const ir::Dim& x = a[a.rank() - 1 - i];
    const ir::Dim& y = b[b.rank() - 1 - i];
    if (x == y && (x.is_static() || !x.symbol_name().empty())) continue;
    if ((x.is_static() && x.value() == 1) || (y.is_static() && y.value() == 1)) continue;
    if (x.is_static() && y.is_static()) return false;
    sure = false;
  }
  if (!sure) return std::nullopt;
  return true;
}

std::optional<bool> same_shape(const ir::Shape& a, const ir::Shape& b) {
  if (!a.has_rank() || !b.has_rank()) return std::nullopt;
  if (a.rank() != b.rank()) return false;
  bool sure = true;
  for (size_t i = 0; i < a.rank(); ++i) {
    auto e = equal(dim_value(a[i]), dim_value(b[i]));
    if (!e) {
      sure = false;
      continue;
    }
    if (!*e) return false;
  }
  if (!sure) return std::nullopt;
  return true;
}

ExprValue from_optional(std::optional<bool> b) {
  return b ? boolean(*b) : unknown();
}

// Every element of a constant satisfies `pred`.
ExprValue const_all(const Sexpr& arg, const MatchView& view,
                    const std::function<bool(double)>& pred) {
  if (arg.kind != Sexpr::Kind::Var) return unknown();
  const ir::Tensor* t = view.value(arg.text);
  if (!t) return boolean(false);
  for (int64_t i = 0; i < t->numel(); ++i)
    if (!pred(t->get(i))) return boolean(false);
  return boolean(true);
}

ExprValue arith(const std::string& op, const std::vector<ExprValue>& args) {
  for (const ExprValue& a : args)
    if (!is_number(a)) return unknown();
  bool all_int = std::all_of(args.begin(), args.end(),
                             [](const ExprValue& a) { return a.kind == ExprValue::Kind::Int; });
  if (op == "-" && args.size() == 1)
    return all_int ? integer(-args[0].integer) : real(-args[0].number);
  if (all_int) {
    int64_t acc = args[0].integer;
    for (size_t i = 1; i < args.size(); ++i) {
      int64_t b = args[i].integer;
      if (op == "+")
        acc += b;
      else if (op == "-")
        acc -= b;
      else if (op == "*")
        acc *= b;
      else if (op == "min")
        acc = std::min(acc, b);
      else if (op == "max")
        acc = std::max(acc, b);
      else if (op == "/" || op == "%") {
        if (b == 0) return unknown();
        // Floor division and modulo, as Python: axis arithmetic wants non-negative remainders.
        int64_t q = acc / b, r = acc % b;
        if (r != 0 && ((r < 0) != (b < 0))) {
          --q;
          r += b;
        }
        acc = op == "/" ? q : r;
      }
    }
    return integer(acc);
  }
  double acc = args[0].number;
  for (size_t i = 1; i < args.size(); ++i) {
    double b = args[i].number;
    if (op == "+")
      acc += b;
    else if (op == "-")
      acc -= b;
    else if (op == "*")
      acc *= b;
    else if (op == "/")
      acc /= b;
    else if (op == "%")
      acc = std::fmod(acc, b);
    else if (op == "min")
      acc = std::min(acc, b);
    else if (op == "max")
      acc = std::max(acc, b);
  }
  return real(acc);
}

std::optional<bool> compare(const std::string& op, const ExprValue& a, const ExprValue& b) {
  if (op == "=") return equal(a, b);
  if (op == "!=") {
    auto e = equal(a, b);
    if (!e) return std::nullopt;
    return !*e;
  }
  if (!is_number(a) || !is_number(b)) return std::nullopt;
  if (op == "<") return a.number < b.number;
  if (op == "<=") return a.number <= b.number;
  if (op == ">") return a.number > b.number;
  return a.number >= b.number;
}

}  // namespace

ExprValue evaluate(const Sexpr& e, const MatchView& view) {
  switch (e.kind) {
    case Sexpr::Kind::Integer:
      return integer(e.integer);
    case Sexpr::Kind::Float:
      return real(e.number);
    case Sexpr::Kind::Symbol:
      if (e.text == "true") return boolean(true);
      if (e.text == "false") return boolean(false);
      return symbol(e.text);
    case Sexpr::Kind::String:
      return symbol(e.text);
    case Sexpr::Kind::Var: {
      if (const ir::AttrValue* a = view.attr(e.text)) return from_attr(*a);
      return unknown();
    }
    case Sexpr::Kind::Keyword:
      return unknown();
    case Sexpr::Kind::List:
      break;
  }
  if (e.items.empty()) return list({});
  const Sexpr& head = e.items[0];
  if (head.kind != Sexpr::Kind::Symbol) {  // a list of expressions
    std::vector<ExprValue> items;
    for (const Sexpr& item : e.items) items.push_back(evaluate(item, view));
    for (const ExprValue& v : items)
      if (!v.known()) return unknown();
    return list(std::move(items));
  }
  const std::string& f = head.text;
  const size_t n = e.items.size() - 1;
  auto arg = [&](size_t i) -> const Sexpr& { return e.items[i + 1]; };
  auto val = [&](size_t i) { return evaluate(arg(i), view); };
  std::optional<ir::TensorType> s0, s1;
  auto type = [&](size_t i) { return single_type(arg(i), view, i == 0 ? s0 : s1); };

  if (f == "and" || f == "or") {
    bool is_and = f == "and";
    bool sure = true;
    for (size_t i = 0; i < n; ++i) {
      ExprValue v = val(i);
      if (v.kind != ExprValue::Kind::Bool) {
        sure = false;
        continue;
      }
      if (v.boolean != is_and) return boolean(!is_and);
    }
    return sure ? boolean(is_and) : unknown();
  }
  if (f == "not") {
    ExprValue v = val(0);
    return v.kind == ExprValue::Kind::Bool ? boolean(!v.boolean) : unknown();
  }
  if (f == "=" || f == "!=" || f == "<" || f == "<=" || f == ">" || f == ">=")
    return from_optional(compare(f, val(0), val(1)));
  if (f == "+" || f == "-" || f == "*" || f == "/" || f == "%" || f == "min" || f == "max") {
    std::vector<ExprValue> args;
    for (size_t i = 0; i < n; ++i) args.push_back(val(i));
    return arith(f, args);
  }
  if (f == "list") {
    std::vector<ExprValue> items;
    for (size_t i = 0; i < n; ++i) {
      items.push_back(val(i));
      if (!items.back().known()) return unknown();
    }
    return list(std::move(items));
  }
  if (f == "len") {
    ExprValue l = val(0);
    return l.kind == ExprValue::Kind::Ints ? integer(static_cast<int64_t>(l.items.size()))
                                           : unknown();
  }
  if (f == "nth") {
    ExprValue l = val(0);
    auto i = as_int(val(1));
    if (l.kind != ExprValue::Kind::Ints || !i) return unknown();
    int64_t k = *i < 0 ? *i + static_cast<int64_t>(l.items.size()) : *i;
    if (k < 0 || k >= static_cast<int64_t>(l.items.size())) return unknown();
    return l.items[static_cast<size_t>(k)];
  }
  if (f == "dim") return dim_of(type(0), val(1));
  if (f == "rank") {
    const ir::TensorType* t = type(0);
    if (!t || !t->shape.has_rank()) return unknown();
    ExprValue r = integer(static_cast<int64_t>(t->shape.rank()));
    if (n == 1) return r;
    return from_optional(equal(r, val(1)));
  }
  if (f == "dim-value") return from_optional(equal(dim_of(type(0), val(1)), val(2)));
  if (f == "numel") {
    const ir::TensorType* t = type(0);
    if (!t) return unknown();
    auto count = t->shape.numel();
    return count ? integer(*count) : unknown();
  }
  if (f == "shape") {
    const ir::TensorType* t = type(0);
    if (!t || !t->shape.has_rank()) return unknown();
    std::vector<ExprValue> items;
    for (const ir::Dim& d : t->shape.dims()) items.push_back(dim_value(d));
    return list(std::move(items));
  }
  if (f == "same-shape" || f == "same-dtype") {
    const ir::TensorType* a = type(0);
    const ir::TensorType* b = type(1);
    if (!a || !b) return unknown();
    if (f == "same-dtype") return boolean(a->dtype == b->dtype);
    return from_optional(same_shape(a->shape, b->shape));
  }
  if (f == "broadcastable") {
    std::vector<ir::TensorType> types;
    for (size_t i = 0; i < n; ++i) {
      std::optional<ir::TensorType> storage;
      const ir::TensorType* t = single_type(arg(i), view, storage);
      if (!t) return unknown();
      types.push_back(*t);
    }
    bool sure = true;
    for (size_t i = 0; i < types.size(); ++i)
      for (size_t j = i + 1; j < types.size(); ++j) {
        auto b = broadcastable(types[i].shape, types[j].shape);
        if (!b)
          sure = false;
        else if (!*b)
          return boolean(false);
      }
    return sure ? boolean(true) : unknown();
  }
  if (f == "dtype") {
    const ir::TensorType* t = type(0);
    if (!t) return unknown();
    return boolean(ir::dtype_name(t->dtype) == arg(1).text);
  }
  if (f == "is-float" || f == "is-int") {
    const ir::TensorType* t = type(0);
    if (!t) return unknown();
    return boolean(f == "is-float" ? ir::is_floating(t->dtype) : ir::is_integral(t->dtype));
  }
  if (f == "distinct") {
    if (arg(0).kind != Sexpr::Kind::Var || arg(1).kind != Sexpr::Kind::Var) return unknown();
    auto same = view.same_class(arg(0).text, arg(1).text);
    return same ? boolean(!*same) : unknown();
  }
  if (f == "const") return const_all(arg(0), view, [](double) { return true; });
  if (f == "scalar") {
    if (arg(0).kind != Sexpr::Kind::Var) return unknown();
    const ir::Tensor* t = view.value(arg(0).text);
    return boolean(t && t->numel() == 1);
  }
  if (f == "zero") return const_all(arg(0), view, [](double x) { return x == 0; });
  if (f == "one") return const_all(arg(0), view, [](double x) { return x == 1; });
  if (f == "nonzero") return const_all(arg(0), view, [](double x) { return x != 0; });
  if (f == "value") {
    ExprValue v = val(1);
    if (!is_number(v)) return unknown();
    double want = v.number;
    return const_all(arg(0), view, [want](double x) { return x == want; });
  }
  return unknown();
}

bool holds(const Condition& condition, const MatchView& view) {
  ExprValue v = evaluate(condition.form, view);
  return v.kind == ExprValue::Kind::Bool && v.boolean;
}

bool holds_all(const std::vector<Condition>& conditions, const MatchView& view) {
  for (const Condition& c : conditions)
    if (!holds(c, view)) return false;
  return true;
}

std::optional<ir::AttrValue> evaluate_attr(const Sexpr& expr, ir::AttrKind kind,
                                           const MatchView& view) {
  ExprValue v = evaluate(expr, view);
  switch (kind) {
    case ir::AttrKind::Int:
      if (v.kind == ExprValue::Kind::Int) return ir::AttrValue(v.integer);
      return std::nullopt;
    case ir::AttrKind::Float:
      if (is_number(v)) return ir::AttrValue(v.number);
      return std::nullopt;
    case ir::AttrKind::Ints: {
      if (v.kind != ExprValue::Kind::Ints) return std::nullopt;
      std::vector<int64_t> out;
      for (const ExprValue& item : v.items) {
        if (item.kind != ExprValue::Kind::Int) return std::nullopt;
        out.push_back(item.integer);
      }
      return ir::AttrValue(std::move(out));
    }
    case ir::AttrKind::Floats: {
      if (v.kind != ExprValue::Kind::Ints) return std::nullopt;
      std::vector<double> out;
      for (const ExprValue& item : v.items) {
        if (!is_number(item)) return std::nullopt;
        out.push_back(item.number);
      }
      return ir::AttrValue(std::move(out));
    }
    case ir::AttrKind::String:
      if (v.kind == ExprValue::Kind::Symbol) return ir::AttrValue(v.symbol);
      return std::nullopt;
    default:
      return std::nullopt;
  }
}

std::optional<ir::Attributes> term_attributes(const Sexpr& term, const ir::OpDef& def,
                                              const MatchView& view) {
  ir::Attributes attrs;
  for (size_t i = 1; i + 1 < term.items.size(); ++i) {
    const Sexpr& key = term.items[i];
    if (key.kind != Sexpr::Kind::Keyword) continue;
    const Sexpr& value = term.items[i + 1];
    ++i;
    const ir::AttrSpec* spec = def.find_attr(key.text);
    if (!spec) return std::nullopt;
    std::optional<ir::AttrValue> v;
    if (value.kind == Sexpr::Kind::Var) {
      if (const ir::AttrValue* a = view.attr(value.text)) v = *a;
    } else {
      v = ir::read_attr_literal(value, spec->kind);
      if (!v) v = evaluate_attr(value, spec->kind, view);
    }
    if (!v) return std::nullopt;
    attrs.set(key.text, std::move(*v));
  }
  return attrs;
}

std::optional<std::vector<ir::TensorType>> term_types(const Sexpr& term, const MatchView& view) {
  if (term.kind == Sexpr::Kind::Var) {
    const ir::TensorType* t = view.type(term.text);
    if (!t) return std::nullopt;
    return std::vector<ir::TensorType>{*t};
  }
  if (!term.is_list() || term.items.empty()) return std::nullopt;
  const std::string& op = term.items[0].text;
  std::vector<const Sexpr*> children;
  for (size_t i = 1; i < term.items.size(); ++i) {
    if (term.items[i].kind == Sexpr::Kind::Keyword) {
      ++i;
      continue;
    }
    children.push_back(&term.items[i]);
  }
  if (op == egraph::kProjOp) {
    if (children.size() != 1) return std::nullopt;
    std::optional<int64_t> index;
    for (size_t i = 1; i + 1 < term.items.size(); ++i)
      if (term.items[i].kind == Sexpr::Kind::Keyword && term.items[i].text == "index") {
        ExprValue v = evaluate(term.items[i + 1], view);
        if (v.kind == ExprValue::Kind::Int) index = v.integer;
      }
    auto tuple = term_types(*children[0], view);
    if (!index || !tuple || *index < 0 || static_cast<size_t>(*index) >= tuple->size())
      return std::nullopt;
    return std::vector<ir::TensorType>{(*tuple)[static_cast<size_t>(*index)]};
  }
  const ir::OpDef* def = ir::find_op(op);
  if (!def) return std::nullopt;
  std::vector<ir::TensorType> inputs;
  std::vector<const ir::Tensor*> values;
  inputs.reserve(children.size());
  for (const Sexpr* child : children) {
    auto t = term_types(*child, view);
    if (!t || t->size() != 1) return std::nullopt;
    inputs.push_back((*t)[0]);
    values.push_back(child->kind == Sexpr::Kind::Var ? view.value(child->text) : nullptr);
  }
  auto attrs = term_attributes(term, *def, view);
  if (!attrs) return std::nullopt;
  std::vector<const ir::TensorType*> input_types;
  for (const ir::TensorType& t : inputs) input_types.push_back(&t);
  auto app =
      ir::make_term_application(*def, std::move(*attrs), std::move(input_types), std::move(values));
  if (!app) return std::nullopt;
  return ir::infer_term_types(*app);
}

namespace {

struct FunctionSpec {
  int min_args, max_args;  // -1: any
  bool boolean;
};

const std::map<std::string, FunctionSpec>& functions() {
  static const std::map<std::string, FunctionSpec> table = {
      {"and", {1, -1, true}},       {"or", {1, -1, true}},
      {"not", {1, 1, true}},        {"=", {2, 2, true}},
      {"!=", {2, 2, true}},         {"<", {2, 2, true}},
      {"<=", {2, 2, true}},         {">", {2, 2, true}},
      {">=", {2, 2, true}},         {"rank", {1, 2, false}},
      {"dim-value", {3, 3, true}},  {"same-shape", {2, 2, true}},
      {"same-dtype", {2, 2, true}}, {"broadcastable", {2, -1, true}},
      {"dtype", {2, 2, true}},      {"is-float", {1, 1, true}},
      {"is-int", {1, 1, true}},     {"const", {1, 1, true}},
      {"scalar", {1, 1, true}},     {"zero", {1, 1, true}},
      {"one", {1, 1, true}},        {"nonzero", {1, 1, true}},
      {"value", {2, 2, true}},      {"distinct", {2, 2, true}},
      {"dim", {2, 2, false}},       {"numel", {1, 1, false}},
      {"shape", {1, 1, false}},     {"+", {1, -1, false}},
      {"-", {1, 2, false}},         {"*", {1, -1, false}},
      {"/", {2, 2, false}},         {"%", {2, 2, false}},
      {"min", {1, -1, false}},      {"max", {1, -1, false}},
      {"len", {1, 1, false}},       {"nth", {2, 2, false}},
      {"list", {0, -1, false}},
  };
  return table;
}

// Which arguments of a function are tensors (class variables or terms).
bool tensor_arg(const std::string& f, size_t i) {
  static const std::vector<std::string> all = {
      "same-shape", "same-dtype", "broadcastable", "is-float", "is-int", "const",   "scalar",
      "zero",       "one",        "nonzero",       "numel",    "shape",  "distinct"};
  if (std::find(all.begin(), all.end(), f) != all.end()) return true;
  return i == 0 && (f == "rank" || f == "dim-value" || f == "dtype" || f == "dim" || f == "value");
}

bool const_only(const std::string& f) {
  return f == "const" || f == "scalar" || f == "zero" || f == "one" || f == "nonzero" ||
         f == "value" || f == "distinct";
}

void check_tensor(const Sexpr& t, const VarScope& scope, bool must_be_var) {
  if (t.kind == Sexpr::Kind::Var) {
    if (scope.is_class(t.text)) return;
    if (scope.is_attr(t.text))
      throw sexpr_error(t, "'?" + t.text + "' is an attribute variable; expected a tensor");
    throw sexpr_error(t, "variable '?" + t.text + "' is not bound by the left-hand side");
  }
  if (must_be_var) throw sexpr_error(t, "expected a class variable ?x");
  if (!t.is_list() || t.items.empty() || t.items[0].kind != Sexpr::Kind::Symbol)
    throw sexpr_error(t, "expected a tensor: a class variable ?x or a term (Op ...)");
  const std::string& op = t.items[0].text;
  if (op != egraph::kProjOp && !ir::find_op(op))
    throw sexpr_error(t.items[0], "unknown op '" + op + "' (not in the op table)");
  for (size_t i = 1; i < t.items.size(); ++i) {
    const Sexpr& item = t.items[i];
    if (item.kind == Sexpr::Kind::Keyword) {
      if (i + 1 < t.items.size()) check_expr(t.items[i + 1], scope, false);
      ++i;
      continue;
    }
    check_tensor(item, scope, false);
  }
}

}  // namespace

void check_expr(const Sexpr& e, const VarScope& scope, bool boolean) {
  switch (e.kind) {
    case Sexpr::Kind::Integer:
    case Sexpr::Kind::Float:
    case Sexpr::Kind::String:
      if (boolean) throw sexpr_error(e, "expected a condition, found '" + e.str() + "'");
      return;
    case Sexpr::Kind::Symbol:
      if (boolean && e.text != "true" && e.text != "false")
        throw sexpr_error(e, "expected a condition, found '" + e.text + "'");
      return;
    case Sexpr::Kind::Keyword:
      throw sexpr_error(e, "unexpected keyword ':" + e.text + "' in an expression");
    case Sexpr::Kind::Var:
      if (scope.is_attr(e.text)) {
        if (boolean) throw sexpr_error(e, "expected a condition, found '?" + e.text + "'");
        return;
      }
      if (scope.is_class(e.text))
        throw sexpr_error(
            e, "'?" + e.text + "' is a tensor; use it inside (dim ...), (rank ...), ... here");
      throw sexpr_error(e, "variable '?" + e.text + "' is not bound by the left-hand side");
    case Sexpr::Kind::List:
      break;
  }
  if (e.items.empty()) {
    if (boolean) throw sexpr_error(e, "expected a condition, found ()");
    return;
  }
  const Sexpr& head = e.items[0];
  if (head.kind != Sexpr::Kind::Symbol) {
    if (boolean) throw sexpr_error(e, "expected a condition, found a list");
    for (const Sexpr& item : e.items) check_expr(item, scope, false);
    return;
  }
  auto it = functions().find(head.text);
  if (it == functions().end())
    throw sexpr_error(head, "unknown function '" + head.text +
                                "' (expected a condition such as rank, =, dim-value, "
                                "broadcastable, same-shape, dtype, const)");
  const FunctionSpec& spec = it->second;
  int n = static_cast<int>(e.items.size()) - 1;
  if (n < spec.min_args || (spec.max_args >= 0 && n > spec.max_args))
    throw sexpr_error(e, "'" + head.text + "' takes " + std::to_string(spec.min_args) +
                             (spec.max_args == spec.min_args ? ""
                              : spec.max_args < 0            ? " or more"
                                                  : " to " + std::to_string(spec.max_args)) +
                             " arguments, got " + std::to_string(n));
  bool is_bool = spec.boolean || (head.text == "rank" && n == 2);
  if (boolean && !is_bool)
    throw sexpr_error(e, "'" + head.text + "' gives a value; expected a condition");
  if (!boolean && is_bool && head.text != "rank")
    throw sexpr_error(e, "'" + head.text + "' is a condition; expected a value");
  bool args_boolean = head.text == "and" || head.text == "or" || head.text == "not";
  for (size_t i = 1; i < e.items.size(); ++i) {
    const Sexpr& a = e.items[i];
    if (tensor_arg(head.text, i - 1)) {
      check_tensor(a, scope, const_only(head.text));
    } else if (head.text == "dtype") {
      if (a.kind != Sexpr::Kind::Symbol || !ir::parse_dtype(a.text))
        throw sexpr_error(a, "expected a dtype name (f32, f16, bf16, f64, i8, u8, i32, i64, bool)");
    } else {
      check_expr(a, scope, args_boolean);
    }
  }
}

}  // namespace eqfuse::rules
