#include "ir/op_table.h"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>

#include "ir/scalar_expr.h"
#include "support/error.h"

namespace eqfuse::ir {

std::string_view fusion_class_name(FusionClass c) {
  switch (c) {
    case FusionClass::Elementwise:
      return "elementwise";
    case FusionClass::Broadcast:
      return "broadcast";
    case FusionClass::Reduction:
      return "reduction";
    case FusionClass::Contraction:
      return "contraction";
    case FusionClass::Layout:
      return "layout";
    case FusionClass::Opaque:
      return "opaque";
  }
  return "?";
}

const AttrSpec* OpDef::find_attr(std::string_view attr) const {
  for (const AttrSpec& spec : attrs) {
    if (spec.name == attr) return &spec;
  }
  return nullptr;
}

void OpTableBuilder::add(OpDef def) {
  defs_.push_back(std::move(def));
}

namespace {

struct OpTable {
  std::vector<OpDef> defs;
  std::vector<const OpDef*> sorted;
  std::unordered_map<std::string, const OpDef*> by_key;  // "domain::name"
};

const OpTable& table() {
  static const OpTable instance = [] {
    OpTableBuilder builder;
    register_elementwise_ops(builder);
    register_contraction_ops(builder);
    register_reduction_ops(builder);
    register_normalization_ops(builder);
    register_conv_ops(builder);
    register_pooling_ops(builder);
    register_layout_ops(builder);
    register_indexing_ops(builder);
    register_generator_ops(builder);
    register_resize_ops(builder);
    register_recurrent_ops(builder);
    register_control_flow_ops(builder);
    register_kernel_op(builder);
    OpTable t;
    t.defs = std::move(builder.defs());
    for (const OpDef& def : t.defs) {
      auto [it, inserted] = t.by_key.emplace(def.domain + "::" + def.name, &def);
      if (!inserted) {
        throw Error("op table: '" + def.name + "' is registered twice", Error::Kind::Internal);
      }
      t.sorted.push_back(&def);
    }
    std::sort(t.sorted.begin(), t.sorted.end(),
              [](const OpDef* a, const OpDef* b) { return a->name < b->name; });
    return t;
  }();
  return instance;
}

}  // namespace

const OpDef* find_op(std::string_view op_type, std::string_view domain) {
  if (domain == "ai.onnx") domain = "";
  const auto& by_key = table().by_key;
  auto it = by_key.find(std::string(domain) + "::" + std::string(op_type));
  return it == by_key.end() ? nullptr : it->second;
}

const std::vector<const OpDef*>& all_ops() {
  return table().sorted;
}

std::string OpContext::label() const {
  return node.name.empty() ? node.op_type : fmt::format("{} '{}'", node.op_type, node.name);
}

void OpContext::fail(const std::string& message) const {
  throw Error(fmt::format("{}: {}", label(), message));
}

const TensorType& OpContext::input_type(size_t i) const {
  if (!has_input(i)) fail(fmt::format("input {} is required", i));
  return *input_types[i];
}

namespace {
const AttrValue* attr_or_default(const OpContext& ctx, std::string_view name) {
  if (const AttrValue* v = ctx.node.attrs.find(name)) return v;
  const AttrSpec* spec = ctx.def.find_attr(name);
  if (spec && spec->default_value) return &*spec->default_value;
  ctx.fail(fmt::format("attribute '{}' is required", name));
}

template <typename T>
T typed_attr(const OpContext& ctx, std::string_view name, AttrKind kind) {
  const AttrValue* v = attr_or_default(ctx, name);
  if (kind == AttrKind::Float && attr_kind(*v) == AttrKind::Int) {
    if constexpr (std::is_same_v<T, double>) return static_cast<double>(std::get<int64_t>(*v));
  }
  if (attr_kind(*v) != kind) {
    ctx.fail(fmt::format("attribute '{}' should be of type {}, got {}", name, attr_kind_name(kind),
                         attr_kind_name(attr_kind(*v))));
  }
  return std::get<T>(*v);
}
}  // namespace

int64_t OpContext::attr_int(std::string_view name) const {
  return typed_attr<int64_t>(*this, name, AttrKind::Int);
}
double OpContext::attr_float(std::string_view name) const {
  return typed_attr<double>(*this, name, AttrKind::Float);
}
std::string OpContext::attr_string(std::string_view name) const {
  return typed_attr<std::string>(*this, name, AttrKind::String);
}
std::vector<int64_t> OpContext::attr_ints(std::string_view name) const {
  return typed_attr<std::vector<int64_t>>(*this, name, AttrKind::Ints);
}
std::vector<double> OpContext::attr_floats(std::string_view name) const {
  return typed_attr<std::vector<double>>(*this, name, AttrKind::Floats);
}

std::optional<std::vector<int64_t>> OpContext::ints_attr_or_input(std::string_view attr,
                                                                  size_t input) const {
  if (node.attrs.has(attr)) return attr_ints(attr);
  if (const Tensor* t = input_value(input)) return t->to_int64s();
  if (!has_input(input)) {
    const AttrSpec* spec = def.find_attr(attr);
    if (spec && spec->default_value) return std::get<std::vector<int64_t>>(*spec->default_value);
  }
  return std::nullopt;
}

std::optional<std::vector<SymInt>> OpContext::sym_ints_input(size_t input) const {
  if (const Tensor* t = input_value(input)) {
    if (!is_integral(t->dtype())) return std::nullopt;
    auto v = t->to_int64s();
    return std::vector<SymInt>(v.begin(), v.end());
  }
  if (input < input_sym_values.size() && input_sym_values[input]) return *input_sym_values[input];
  return std::nullopt;
}

std::optional<std::vector<SymInt>> OpContext::sym_ints_attr_or_input(std::string_view attr,
                                                                     size_t input) const {
  if (auto v = ints_attr_or_input(attr, input)) return std::vector<SymInt>(v->begin(), v->end());
  return sym_ints_input(input);
}

ScalarExprPtr node_scalar_expr(const OpContext& ctx) {
  if (ctx.def.scalar_for_node) return ctx.def.scalar_for_node(ctx);
  if (!ctx.def.scalar) return nullptr;
  return bind_attrs(ctx.def.scalar, [&](const std::string& name) -> std::optional<double> {
    const AttrSpec* spec = ctx.def.find_attr(name);
    if (spec && spec->kind == AttrKind::Int) {
      return static_cast<double>(ctx.attr_int(name));
    }
    return ctx.attr_float(name);
  });
}

std::shared_ptr<const IndexExpr> node_index_expr(const OpContext& ctx) {
  if (ctx.def.index_for_node) return ctx.def.index_for_node(ctx);
  return ctx.def.index;
}

double element_count(const TensorType& type) {
  if (!type.shape.has_rank()) return 1;
  double n = 1;
  for (const Dim& d : type.shape.dims()) n *= d.is_static() ? static_cast<double>(d.value()) : 1.0;
  return n;
}

double byte_count(const TensorType& type) {
  return element_count(type) * static_cast<double>(dtype_size(type.dtype));
}

OpContext make_context(const Graph& graph, const Node& node) {
  if (!node.def)
    throw Error("op '" + node.op_type + "' is not in the op table", Error::Kind::Internal);
  OpContext ctx{node, *node.def, {}, {}};
  for (ValueId in : node.inputs) {
    if (in == kNoValue) {
      ctx.input_types.push_back(nullptr);
      ctx.input_values.push_back(nullptr);
      ctx.input_sym_values.push_back(nullptr);
      continue;
    }
    const Value& v = graph.value(in);
    ctx.input_types.push_back(&v.type);
    ctx.input_values.push_back(v.data.get());
    ctx.input_sym_values.push_back(v.sym_value.get());
  }
  return ctx;
}

namespace {

// Why `ctx` is not a well-formed application of its op (arity, required inputs and attributes,
// attribute kinds), or nullopt when it is.
std::optional<std::string> application_error(const OpContext& ctx) {
  const OpDef& def = ctx.def;
  auto n_in = static_cast<int>(ctx.num_inputs());
  if (n_in < def.min_inputs || (def.max_inputs >= 0 && n_in > def.max_inputs))
    return fmt::format(
        "takes {} to {} inputs, got {}", def.min_inputs,
        def.max_inputs < 0 ? std::string("any number of") : std::to_string(def.max_inputs), n_in);
  for (int i = 0; i < def.min_inputs && i < n_in; ++i)
    if (!ctx.has_input(static_cast<size_t>(i))) return fmt::format("input {} is required", i);
  for (const auto& [name, value] : ctx.node.attrs.entries()) {
    const AttrSpec* spec = def.find_attr(name);
    if (!spec) continue;  // ONNX attributes eqfuse ignores are kept, not checked
    bool int_as_float = spec->kind == AttrKind::Float && attr_kind(value) == AttrKind::Int;
    if (attr_kind(value) != spec->kind && !int_as_float)
      return fmt::format("attribute '{}' should be of type {}, got {}", name,
                         attr_kind_name(spec->kind), attr_kind_name(attr_kind(value)));
  }
  for (const AttrSpec& spec : def.attrs)
    if (spec.required && !ctx.node.attrs.has(spec.name))
      return fmt::format("attribute '{}' is required", spec.name);
  return std::nullopt;
}

}  // namespace

std::vector<TensorType> infer_output_types(const Graph& graph, const Node& node) {
  if (node.is_opaque()) {
    std::vector<TensorType> out;
    for (ValueId v : node.outputs) out.push_back(graph.value(v).type);
    return out;
  }
  const OpDef& def = *node.def;
  OpContext ctx = make_context(graph, node);
  if (auto error = application_error(ctx)) ctx.fail(*error);
  std::vector<TensorType> out;
  try {
    out = def.infer(ctx);
  } catch (const Error&) {
    throw;
  } catch (const std::bad_alloc&) {
    throw;
  } catch (const std::exception& e) {
    // A library check tripped by inputs the entry did not foresee (an index past a list):
    // still bad input, and still named.
    ctx.fail(fmt::format("cannot infer the output types: {}", e.what()));
  }
  if (out.size() < node.outputs.size()) {
    ctx.fail(fmt::format("has {} outputs, the op defines {}", node.outputs.size(), out.size()));
  }
  out.resize(node.outputs.size());
  return out;
}

size_t term_output_count(const OpDef& def, const Attributes& attrs) {
  if (def.name == "Split") {
    if (auto n = attrs.int_if_present("num_outputs"))
      return static_cast<size_t>(std::max<int64_t>(*n, 0));
    if (auto s = attrs.ints_if_present("split")) return s->size();
    return 0;
  }
  if (def.min_outputs == def.max_outputs && def.max_outputs > 1)
    return static_cast<size_t>(def.max_outputs);
  return 1;
}

bool is_tuple_term(const OpDef& def, const Attributes& attrs) {
  return def.name == "Split" || term_output_count(def, attrs) > 1;
}

std::optional<TermApplication> make_term_application(const OpDef& def, Attributes attrs,
                                                     std::vector<const TensorType*> input_types,
                                                     std::vector<const Tensor*> input_values) {
  TermApplication app;
  app.node.op_type = def.name;
  app.node.def = &def;
  app.node.attrs = std::move(attrs);
  for (size_t i = 0; i < input_types.size(); ++i)
    app.node.inputs.push_back(static_cast<ValueId>(i));
  input_values.resize(input_types.size(), nullptr);
  app.input_types = std::move(input_types);
  app.input_values = std::move(input_values);
  size_t outputs = term_output_count(def, app.node.attrs);
  if (outputs == 0 || !def.infer || application_error(app.context())) return std::nullopt;
  app.node.outputs.resize(outputs, 0);
  return app;
}

std::optional<std::vector<TensorType>> infer_term_types(const TermApplication& app) {
  try {
    std::vector<TensorType> out = app.node.def->infer(app.context());
    if (out.size() < app.node.outputs.size()) return std::nullopt;
    out.resize(app.node.outputs.size());
    return out;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace eqfuse::ir
