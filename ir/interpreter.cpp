#include "ir/interpreter.h"

#include <fmt/format.h>

#include <map>
#include <memory>

#include "ir/op_table.h"
#include "support/error.h"

namespace eqfuse::ir {

namespace {
std::string node_label(const Node& node) {
  return node.name.empty() ? node.op_type : fmt::format("{} '{}'", node.op_type, node.name);
}
}  // namespace

std::vector<Tensor> evaluate_node(const Graph& graph, const Node& node,
                                  const std::vector<const Tensor*>& inputs,
                                  const ScopeLookup* scope) {
  (void)graph;
  if (node.is_opaque()) {
    throw Error(
        fmt::format("{}: op '{}{}' is not supported by the interpreter (opaque op)",
                    node_label(node), node.domain.empty() ? "" : node.domain + ".", node.op_type),
        Error::Kind::Unsupported);
  }
  const OpDef& def = *node.def;
  if (!def.kernel) {
    throw Error(fmt::format("{}: the op has no reference kernel", node_label(node)),
                Error::Kind::Unsupported);
  }
  if (inputs.size() != node.inputs.size()) {
    throw Error(fmt::format("{}: {} input values given for {} inputs", node_label(node),
                            inputs.size(), node.inputs.size()),
                Error::Kind::Internal);
  }
  // The kernel sees the concrete types of this run (symbolic dims resolved).
  std::vector<TensorType> types(inputs.size());
  OpContext ctx{node, def, {}, {}};
  ctx.scope = scope;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i]) types[i] = inputs[i]->type();
    ctx.input_types.push_back(inputs[i] ? &types[i] : nullptr);
    ctx.input_values.push_back(inputs[i]);
  }
  for (int i = 0; i < def.min_inputs && static_cast<size_t>(i) < inputs.size(); ++i) {
    if (!inputs[static_cast<size_t>(i)]) ctx.fail(fmt::format("input {} is required", i));
  }
  std::vector<Tensor> outputs;
  try {
    outputs = def.kernel(ctx);
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw Error(fmt::format("{}: {}", node_label(node), e.what()), Error::Kind::Internal);
  }
  if (outputs.size() < node.outputs.size()) {
    throw Error(fmt::format("{}: the kernel computed {} outputs, the node has {}", node_label(node),
                            outputs.size(), node.outputs.size()),
                Error::Kind::Internal);
  }
  outputs.resize(node.outputs.size());
  return outputs;
}

namespace {
void check_input(const Value& v, const Tensor& t, std::map<std::string, int64_t>& symbols) {
  const TensorType& want = v.type;
  if (t.dtype() != want.dtype) {
    throw Error(fmt::format("input '{}' should be {}, got {}", v.name, want.str(), t.type().str()));
  }
  if (!want.shape.has_rank()) return;
  if (t.rank() != want.shape.rank()) {
    throw Error(fmt::format("input '{}' should be {} (rank {}), got {} (rank {})", v.name,
                            want.str(), want.shape.rank(), t.type().str(), t.rank()));
  }
  for (size_t d = 0; d < t.rank(); ++d) {
    const Dim& dim = want.shape[d];
    int64_t got = t.dims()[d];
    if (dim.is_static()) {
      if (dim.value() != got) {
        throw Error(fmt::format("input '{}' should be {}, got {}: dim {} is {}, not {}", v.name,
                                want.str(), t.type().str(), d, got, dim.value()));
      }
    } else if (!dim.symbol_name().empty()) {
      auto [it, inserted] = symbols.emplace(dim.symbol_name(), got);
      if (!inserted && it->second != got) {
        throw Error(
            fmt::format("input '{}' gives dim '{}' the size {}, an earlier input gave it {}",
                        v.name, dim.symbol_name(), got, it->second));
      }
    }
  }
}
}  // namespace

namespace {

// Runs the nodes of `g` with its inputs already in `values`; `outer` resolves names that
// control-flow bodies read from beyond `g`.
std::vector<Tensor> execute(const Graph& g, std::vector<std::shared_ptr<const Tensor>> values,
                            const ScopeLookup* outer) {
  // The last node reading each value, so that intermediates are freed as soon as possible; a
  // value a node's body reads by name counts as read by that node.
  const auto& nodes = g.nodes();
  std::vector<size_t> last_use(g.values().size(), 0);
  std::vector<bool> keep(g.values().size(), false);
  for (size_t n = 0; n < nodes.size(); ++n) {
    for (ValueId in : nodes[n].inputs) {
      if (in != kNoValue) last_use[in] = n;
    }
    for (const Subgraph& sg : nodes[n].subgraphs) {
      const auto& body_inputs = sg.graph->inputs();
      for (size_t i = sg.formal_inputs; i < body_inputs.size(); ++i) {
        if (auto id = g.find_value(sg.graph->value(body_inputs[i]).name)) last_use[*id] = n;
      }
    }
  }
  for (ValueId out : g.outputs()) keep[out] = true;

  auto value_of = [&](ValueId id) -> std::shared_ptr<const Tensor> {
    if (values[id]) return values[id];
    const Value& v = g.value(id);
    if (v.is_weight()) return values[id] = g.weight_data(id);
    throw Error(fmt::format("value '{}' is read before it is computed", v.name),
                Error::Kind::Internal);
  };
  ScopeLookup scope = [&](const std::string& name) -> const Tensor* {
    if (auto id = g.find_value(name)) {
      if (values[*id] || g.value(*id).is_weight()) return value_of(*id).get();
    }
    return outer && *outer ? (*outer)(name) : nullptr;
  };

  std::vector<const Tensor*> args;
  for (size_t n = 0; n < nodes.size(); ++n) {
    const Node& node = nodes[n];
    args.clear();
    std::vector<std::shared_ptr<const Tensor>> holders;
    for (ValueId in : node.inputs) {
      if (in == kNoValue) {
        args.push_back(nullptr);
        continue;
      }
      holders.push_back(value_of(in));
      args.push_back(holders.back().get());
    }
    std::vector<Tensor> outs =
        evaluate_node(g, node, args, node.subgraphs.empty() ? nullptr : &scope);
    for (size_t k = 0; k < node.outputs.size(); ++k) {
      values[node.outputs[k]] = std::make_shared<const Tensor>(std::move(outs[k]));
    }
    for (ValueId in : node.inputs) {
      if (in != kNoValue && last_use[in] == n && !keep[in] && !g.value(in).is_weight()) {
        values[in].reset();
      }
    }
    for (const Subgraph& sg : node.subgraphs) {
      const auto& body_inputs = sg.graph->inputs();
      for (size_t i = sg.formal_inputs; i < body_inputs.size(); ++i) {
        auto id = g.find_value(sg.graph->value(body_inputs[i]).name);
        if (id && last_use[*id] == n && !keep[*id] && !g.value(*id).is_weight() &&
            g.value(*id).producer != kNoNode)
          values[*id].reset();
      }
    }
  }

  std::vector<Tensor> result;
  for (ValueId out : g.outputs()) result.push_back(*value_of(out));
  return result;
}

// Aliases a tensor the caller keeps alive for the whole run.
std::shared_ptr<const Tensor> alias(const Tensor* t) {
  return std::shared_ptr<const Tensor>(t, [](const Tensor*) {});
}

}  // namespace

std::vector<Tensor> Interpreter::run(const std::vector<Tensor>& inputs) const {
  const Graph& g = graph_;
  if (inputs.size() != g.inputs().size()) {
    throw Error(fmt::format("graph '{}' takes {} inputs, got {}", g.name, g.inputs().size(),
                            inputs.size()));
  }
  std::vector<std::shared_ptr<const Tensor>> values(g.values().size());
  std::map<std::string, int64_t> symbols;
  for (size_t i = 0; i < inputs.size(); ++i) {
    ValueId id = g.inputs()[i];
    check_input(g.value(id), inputs[i], symbols);
    values[id] = alias(&inputs[i]);
  }
  return execute(g, std::move(values), nullptr);
}

std::vector<Tensor> run_subgraph(const Graph& body, const std::vector<const Tensor*>& formal,
                                 const ScopeLookup& outer) {
  std::vector<std::shared_ptr<const Tensor>> values(body.values().size());
  const auto& inputs = body.inputs();
  if (formal.size() > inputs.size()) {
    throw Error(fmt::format("subgraph '{}' takes {} inputs, got {}", body.name, inputs.size(),
                            formal.size()));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Value& v = body.value(inputs[i]);
    const Tensor* t = i < formal.size() ? formal[i] : (outer ? outer(v.name) : nullptr);
    if (!t) {
      throw Error(fmt::format("subgraph '{}' reads '{}', which is not defined where it runs",
                              body.name, v.name));
    }
    if (t->dtype() != v.type.dtype) {
      throw Error(fmt::format("subgraph '{}': input '{}' should be {}, got {}", body.name, v.name,
                              dtype_name(v.type.dtype), t->type().str()));
    }
    values[inputs[i]] = alias(t);
  }
  return execute(body, std::move(values), &outer);
}

}  // namespace eqfuse::ir
