#include "ir/kernel_body.h"

#include <fmt/format.h>

#include <map>
#include <mutex>
#include <set>
#include <unordered_map>

#include "ir/attr_text.h"
#include "ir/op_table.h"
#include "ir/rebuild.h"
#include "support/error.h"

namespace eqfuse::ir {

namespace {

[[noreturn]] void bad_body(std::string_view text, const std::string& why) {
  throw Error("kernel body " + std::string(text) + ": " + why, Error::Kind::BadInput);
}

// Checks one application, collecting its distinct subterms and the inputs it reads.
void check_term(std::string_view text, const Sexpr& t, std::set<std::string>& ops, size_t& arity) {
  if (t.kind == Sexpr::Kind::Var) {
    size_t k = 0;
    try {
      size_t used = 0;
      k = std::stoul(t.text, &used);
      if (used != t.text.size()) throw std::invalid_argument(t.text);
    } catch (const std::exception&) {
      bad_body(text, "an input must be ?0, ?1, ..., not ?" + t.text);
    }
    arity = std::max(arity, k + 1);
    return;
  }
  if (!t.is_list() || t.items.empty() || t.items[0].kind != Sexpr::Kind::Symbol)
    bad_body(text, "expected (Op :attr value ... input...) or ?k, got " + t.str());
  const OpDef* def = find_op(t.items[0].text);
  if (!def || def->name == kKernelOp)
    bad_body(text, "'" + t.items[0].text + "' is not an op a kernel can contain");
  if (def->max_outputs != 1 && def->min_outputs != 1)
    bad_body(text, "'" + def->name + "' has several outputs");
  if (!ops.insert(t.str()).second) return;  // checked where it first appeared
  size_t i = 1;
  for (; i + 1 < t.items.size() && t.items[i].kind == Sexpr::Kind::Keyword; i += 2) {
    const AttrSpec* spec = def->find_attr(t.items[i].text);
    if (!spec) bad_body(text, def->name + " has no attribute '" + t.items[i].text + "'");
    if (!read_attr_literal(t.items[i + 1], spec->kind))
      bad_body(text, "bad value for " + def->name + " :" + spec->name);
  }
  size_t children = t.items.size() - i;
  if (static_cast<int>(children) < def->min_inputs ||
      (def->max_inputs >= 0 && static_cast<int>(children) > def->max_inputs))
    bad_body(text, def->name + " takes a different number of inputs");
  for (; i < t.items.size(); ++i) check_term(text, t.items[i], ops, arity);
}

void renumber(Sexpr& t, std::map<std::string, size_t>& seen, std::vector<size_t>* order) {
  if (t.kind == Sexpr::Kind::Var) {
    auto [it, fresh] = seen.emplace(t.text, seen.size());
    if (fresh && order) order->push_back(std::stoul(t.text));
    t.text = std::to_string(it->second);
    return;
  }
  if (!t.is_list()) return;
  size_t i = 1;
  while (i + 1 < t.items.size() && t.items[i].kind == Sexpr::Kind::Keyword) i += 2;
  for (; i < t.items.size(); ++i) renumber(t.items[i], seen, order);
}

class Expander {
 public:
  Expander(Graph& graph, std::string_view text, const std::vector<ValueId>& inputs,
           const std::string& prefix)
      : graph_(graph), text_(text), inputs_(inputs), prefix_(prefix) {}

  ValueId build(const Sexpr& t, const std::string* output_name) {
    if (t.kind == Sexpr::Kind::Var) {
      size_t k = std::stoul(t.text);
      if (k >= inputs_.size())
        bad_body(text_, "reads ?" + t.text + " but the kernel has " +
                            std::to_string(inputs_.size()) + " inputs");
      return inputs_[k];
    }
    std::string key = t.str();
    if (!output_name) {
      auto done = built_.find(key);
      if (done != built_.end()) return done->second;
    }
    const OpDef* def = find_op(t.items[0].text);
    Node node;
    node.op_type = def->name;
    node.def = def;
    size_t i = 1;
    for (; i + 1 < t.items.size() && t.items[i].kind == Sexpr::Kind::Keyword; i += 2)
      node.attrs.set(t.items[i].text,
                     *read_attr_literal(t.items[i + 1], def->find_attr(t.items[i].text)->kind));
    for (; i < t.items.size(); ++i) node.inputs.push_back(build(t.items[i], nullptr));
    std::string base = prefix_ + std::to_string(counter_++);
    node.name = base;
    std::vector<TensorType> types;
    try {
      node.outputs = {graph_.add_value(output_name ? *output_name : base + "_out", TensorType{})};
      types = infer_output_types(graph_, node);
    } catch (const Error& e) {
      throw Error("kernel body " + std::string(text_) + ": " + e.what(), e.kind());
    }
    graph_.value(node.outputs[0]).type = types.at(0);
    ValueId out = node.outputs[0];
    graph_.add_node(std::move(node));
    built_.emplace(std::move(key), out);
    return out;
  }

 private:
  Graph& graph_;
  std::string_view text_;
  const std::vector<ValueId>& inputs_;
  const std::string& prefix_;
  size_t counter_ = 0;
  std::unordered_map<std::string, ValueId> built_;
};

}  // namespace

std::string canonical_body_text(const Sexpr& term, std::vector<size_t>* order) {
  Sexpr copy = term;
  std::map<std::string, size_t> seen;
  renumber(copy, seen, order);
  return copy.str();
}

std::shared_ptr<const KernelBody> kernel_body(std::string_view text) {
  static std::mutex mutex;
  static std::unordered_map<std::string, std::shared_ptr<const KernelBody>> cache;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = cache.find(std::string(text));
    if (it != cache.end()) return it->second;
  }
  auto body = std::make_shared<KernelBody>();
  try {
    body->term = parse_sexpr(text, "<kernel body>");
  } catch (const Error& e) {
    bad_body(text, e.what());
  }
  std::set<std::string> ops;
  check_term(text, body->term, ops, body->arity);
  body->ops = ops.size();
  if (body->term.kind == Sexpr::Kind::Var) bad_body(text, "a body must apply at least one op");
  body->text = body->term.str();
  if (canonical_body_text(body->term) != body->text)
    bad_body(text, "inputs must be numbered in order of first appearance");
  std::lock_guard<std::mutex> lock(mutex);
  return cache.emplace(std::string(text), std::move(body)).first->second;
}

ValueId expand_kernel_body(Graph& graph, const KernelBody& body, const std::vector<ValueId>& inputs,
                           const std::string& prefix, const std::string& output_name) {
  if (inputs.size() != body.arity)
    bad_body(body.text, "expects " + std::to_string(body.arity) + " inputs, got " +
                            std::to_string(inputs.size()));
  Expander expander(graph, body.text, inputs, prefix);
  return expander.build(body.term, &output_name);
}

Graph kernel_body_graph(const KernelBody& body, const std::vector<const TensorType*>& input_types,
                        const std::vector<const Tensor*>& input_values) {
  Graph g;
  g.name = "kernel";
  std::vector<ValueId> inputs;
  for (size_t k = 0; k < input_types.size(); ++k) {
    std::string name = "?" + std::to_string(k);
    const Tensor* value = k < input_values.size() ? input_values[k] : nullptr;
    if (!input_types[k]) bad_body(body.text, "input ?" + std::to_string(k) + " is omitted");
    inputs.push_back(value ? g.add_weight(name, *value) : g.add_input(name, *input_types[k]));
  }
  g.add_output(expand_kernel_body(g, body, inputs, "k", "out"));
  return g;
}

bool has_kernels(const Graph& graph) {
  for (const Node& n : graph.nodes())
    if (n.def && n.def->name == kKernelOp) return true;
  return false;
}

Graph inline_kernels(const Graph& graph, std::vector<NodeId>* origin) {
  auto expand = [&](const Node& n, NodeId i, GraphRebuild& rebuild) {
    if (!n.def || n.def->name != kKernelOp) return false;
    auto body = kernel_body(n.attrs.get_string(kKernelBodyAttr, ""));
    rebuild.alias(n.outputs[0], expand_kernel_body(rebuild.graph(), *body, rebuild.inputs(n),
                                                   fmt::format("{}#{}/", n.name, i),
                                                   graph.value(n.outputs[0]).name));
    return true;
  };
  return rebuild_graph(graph, expand, origin);
}

}  // namespace eqfuse::ir
