#pragma once
// The op table: one entry per op kind, the single source of truth for what an op is. An entry
// holds the op's attribute schema, its shape and dtype inference, the work it does (FLOPs and
// bytes, read by the cost model), its fusion class, and its meaning: for elementwise ops a
// scalar expression (ir/scalar_expr.h), for structured ops an index expression
// (ir/index_expr.h), both read by the interpreter, the Z3 prover and the code generators; ops
// that cannot be written so (LSTM, Resize) carry only a hand-written reference kernel.
//
// Semantics are those of ONNX opset 17. The frontend upgrades nodes of older opsets at import,
// and turns constant "attribute-like" inputs (axes, split, pads, Clip's min/max, Slice's
// starts/ends/axes/steps) into attributes, so rules match them as attributes; entries accept
// both forms (see OpContext::ints_attr_or_input).
//
// Adding an op means adding one entry in the ir/ops/ file of its group.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/attribute.h"
#include "ir/graph.h"

namespace eqfuse::ir {

struct ScalarExpr;  // ir/scalar_expr.h
struct IndexExpr;   // ir/index_expr.h
using ScalarExprPtr = std::shared_ptr<const ScalarExpr>;

enum class FusionClass { Elementwise, Broadcast, Reduction, Contraction, Layout, Opaque };
std::string_view fusion_class_name(FusionClass c);

struct AttrSpec {
  std::string name;
  AttrKind kind;
  std::optional<AttrValue> default_value;  // nullopt: required, or absence is meaningful
  bool required = false;
};

struct OpDef;

// The values visible by name where a node runs (control-flow bodies read enclosing scopes);
// nullptr for a name not defined there.
using ScopeLookup = std::function<const Tensor*(const std::string&)>;

// What an op's inference, work count and kernel see of one node.
struct OpContext {
  const Node& node;
  const OpDef& def;
  std::vector<const TensorType*> input_types;  // nullptr: an omitted optional input
  // During inference: the values of inputs that are known constants (nullptr elsewhere).
  // In a kernel: every present input's value.
  std::vector<const Tensor*> input_values;
  // During inference: the symbolic elements of inputs that shape computations produce
  // (Value::sym_value; nullptr elsewhere). Empty in a kernel.
  std::vector<const std::vector<SymInt>*> input_sym_values = {};
  // In a kernel run by the interpreter: the enclosing scope, for control-flow bodies.
  const ScopeLookup* scope = nullptr;

  size_t num_inputs() const { return input_types.size(); }
  bool has_input(size_t i) const { return i < input_types.size() && input_types[i] != nullptr; }
  const TensorType& input_type(size_t i) const;  // Error naming the node if absent
  const Tensor* input_value(size_t i) const {
    return i < input_values.size() ? input_values[i] : nullptr;
  }

  // Attribute getters that apply the schema's default; Error naming node and attribute when the
  // attribute is required and absent or has the wrong type.
  int64_t attr_int(std::string_view name) const;
  double attr_float(std::string_view name) const;
  std::string attr_string(std::string_view name) const;
  std::vector<int64_t> attr_ints(std::string_view name) const;
  std::vector<double> attr_floats(std::string_view name) const;
  bool has_attr(std::string_view name) const { return node.attrs.has(name); }
  // An integer list given either as attribute `attr` (older opsets, or after the frontend's
  // normalization) or as constant input `input` (newer opsets); nullopt when neither is known.
  std::optional<std::vector<int64_t>> ints_attr_or_input(std::string_view attr, size_t input) const;
  // The elements of integer input i as symbolic integers: from its constant value, else from
  // the shape computation that produced it; nullopt when neither is known.
  std::optional<std::vector<SymInt>> sym_ints_input(size_t input) const;
  // The same as ints_attr_or_input, falling back to the input's symbolic elements.
  std::optional<std::vector<SymInt>> sym_ints_attr_or_input(std::string_view attr,
                                                            size_t input) const;

  // "Conv 'conv1'": for error messages.
  std::string label() const;
  [[noreturn]] void fail(const std::string& message) const;  // Error prefixed with label()
};

// What one execution of a node touches, for the cost model: FLOPs counted as in the
// literature (a multiply-add is 2), bytes of the data really read and written.
struct OpWork {
  double flops = 0;
  double bytes_read = 0;
  double bytes_written = 0;
};

struct OpDef {
  std::string name;    // the ONNX op type, also the op's name in rule files
  std::string domain;  // "" for the default ONNX domain
  int min_inputs = 1;
  int max_inputs = 1;  // -1: variadic
  int min_outputs = 1;
  int max_outputs = 1;
  std::vector<AttrSpec> attrs;
  FusionClass fusion = FusionClass::Opaque;

  // Output types from input types, attributes and known constant inputs. Throws Error
  // (via OpContext::fail) on inconsistent inputs.
  std::function<std::vector<TensorType>(const OpContext&)> infer;
  // Work of one execution given the inferred output types (static shapes).
  std::function<OpWork(const OpContext&, const std::vector<TensorType>&)> work;
  // Reference kernel: computes every output from ctx.input_values.
  std::function<std::vector<Tensor>(const OpContext&)> kernel;

  // The op's meaning, where it can be written as an expression (see file comment).
  std::shared_ptr<const ScalarExpr> scalar;
  std::shared_ptr<const IndexExpr> index;
  // Elementwise ops whose meaning for one node is more than `scalar` with attributes bound
  // (variadic Sum/Max/Min/Mean fold over the node's inputs; Clip takes its bounds from inputs or
  // attributes): returns that node's expression, attributes bound. See node_scalar_expr().
  std::function<ScalarExprPtr(const OpContext&)> scalar_for_node;
  // Structured ops whose index expression depends on the node's shapes and attributes (MatMul's
  // batch broadcasting, a Reduce's axes): builds it for a node with static input shapes.
  std::function<std::shared_ptr<const IndexExpr>(const OpContext&)> index_for_node;

  const AttrSpec* find_attr(std::string_view attr) const;
};

// The entry for an op type, or nullptr when the table lacks it (the node stays opaque).
const OpDef* find_op(std::string_view op_type, std::string_view domain = "");
// Every entry, sorted by name.
const std::vector<const OpDef*>& all_ops();

// The meaning of an elementwise node: scalar_for_node(ctx) when set, else `scalar` with every
// attribute reference bound to the node's attribute (or the schema default). nullptr for ops
// that have no scalar meaning.
ScalarExprPtr node_scalar_expr(const OpContext& ctx);

// The index expression of a structured node: index_for_node(ctx) when set, else `index`;
// nullptr when the op has none. Needs static input shapes.
std::shared_ptr<const IndexExpr> node_index_expr(const OpContext& ctx);

// Element and byte counts of a type for work estimates; a dynamic dim counts as 1.
double element_count(const TensorType& type);
double byte_count(const TensorType& type);

// Builds the context of `node` as it sits in `graph` (types of its inputs, values of its
// constant inputs: weights with in-memory data).
OpContext make_context(const Graph& graph, const Node& node);
// Infers the output types of a node whose inputs are typed; checks arity and attribute types.
// Throws Error naming the node. Opaque nodes keep the types already on their outputs.
std::vector<TensorType> infer_output_types(const Graph& graph, const Node& node);

// How many values an application of `def` with `attrs` yields as a term of the tensor language
// (an e-node, a rule's side, an op of a kernel body): Split's count from `num_outputs` or `split`
// (0 when neither says: the graph's node must), an op with a fixed count above one that count,
// else 1 (optional extra outputs, LayerNormalization's mean, are not part of a term).
size_t term_output_count(const OpDef& def, const Attributes& attrs);
// Whether such an application is tuple-valued (read through Proj): Split always, other ops when
// they yield several values.
bool is_tuple_term(const OpDef& def, const Attributes& attrs);

// One application of an op in a term of the tensor language, as the op table sees it: a Node
// with inputs numbered 0..n-1 and term_output_count outputs, with its inputs' types and known
// constant values. Terms are typed in three places (the e-graph's analysis, rule conditions,
// fusion's kernel bodies); all of them go through this and infer_term_types, so a term means
// the same thing, and is well-formed under the same checks, everywhere.
struct TermApplication {
  Node node;
  std::vector<const TensorType*> input_types;  // nullptr: an omitted optional input
  std::vector<const Tensor*> input_values;     // nullptr: not a known constant
  OpContext context() const { return {node, *node.def, input_types, input_values}; }
};
// nullopt when the application is malformed: a wrong arity, a required input or attribute
// missing, an attribute of the wrong kind, an output count the attributes do not fix.
std::optional<TermApplication> make_term_application(const OpDef& def, Attributes attrs,
                                                     std::vector<const TensorType*> input_types,
                                                     std::vector<const Tensor*> input_values);
// Its output types (term_output_count of them), or nullopt when inference fails. Never throws.
std::optional<std::vector<TensorType>> infer_term_types(const TermApplication& app);

// Registration of each op group (ir/ops/*.cpp); called once by the table.
class OpTableBuilder {
 public:
  void add(OpDef def);
  std::vector<OpDef>& defs() { return defs_; }

 private:
  std::vector<OpDef> defs_;
};
void register_elementwise_ops(OpTableBuilder& table);    // ops/elementwise.cpp
void register_contraction_ops(OpTableBuilder& table);    // ops/contraction.cpp: MatMul Gemm
void register_reduction_ops(OpTableBuilder& table);      // ops/reduction.cpp: Reduce* Arg* Softmax
void register_normalization_ops(OpTableBuilder& table);  // ops/normalization.cpp
void register_conv_ops(OpTableBuilder& table);           // ops/conv.cpp: Conv ConvTranspose
void register_pooling_ops(OpTableBuilder& table);        // ops/pooling.cpp
void register_layout_ops(OpTableBuilder& table);         // ops/layout.cpp
void register_indexing_ops(OpTableBuilder& table);       // ops/indexing.cpp
void register_generator_ops(OpTableBuilder& table);      // ops/generator.cpp
void register_resize_ops(OpTableBuilder& table);         // ops/resize.cpp
void register_recurrent_ops(OpTableBuilder& table);      // ops/recurrent.cpp
void register_control_flow_ops(OpTableBuilder& table);   // ops/control_flow.cpp: If Loop Scan
void register_kernel_op(OpTableBuilder& table);          // ops/kernel.cpp: fused kernels

}  // namespace eqfuse::ir
