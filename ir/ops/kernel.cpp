// Op group "kernel": the fused kernel, an op whose meaning is its body (ir/kernel_body.h).
// Inference, the reference kernel and the work count all expand the body; nothing here restates
// what a kernel computes.
#include <mutex>
#include <unordered_map>

#include "ir/interpreter.h"
#include "ir/kernel_body.h"
#include "ir/op_table.h"

namespace eqfuse::ir {

namespace {

std::shared_ptr<const KernelBody> body_of(const OpContext& ctx) {
  std::string text = ctx.attr_string(kKernelBodyAttr);
  try {
    return kernel_body(text);
  } catch (const Error& e) {
    ctx.fail(e.what());
  }
}

// Inference runs for every kernel e-node the optimizer makes, mostly at types seen before.
std::vector<TensorType> cached_infer(const OpContext& ctx) {
  static std::mutex mutex;
  static std::unordered_map<std::string, TensorType> cache;
  auto body = body_of(ctx);
  bool values = false;
  std::string key = body->text;
  for (size_t k = 0; k < ctx.num_inputs(); ++k) {
    values = values || ctx.input_value(k);
    key += '|';
    key += ctx.input_types[k] ? ctx.input_types[k]->str() : "-";
  }
  if (!values) {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = cache.find(key);
    if (it != cache.end()) return {it->second};
  }
  TensorType out;
  try {
    Graph g = kernel_body_graph(*body, ctx.input_types, ctx.input_values);
    out = g.value(g.outputs()[0]).type;
  } catch (const Error& e) {
    ctx.fail(e.what());
  }
  if (!values) {
    std::lock_guard<std::mutex> lock(mutex);
    cache.emplace(std::move(key), out);
  }
  return {out};
}

}  // namespace

void register_kernel_op(OpTableBuilder& table) {
  OpDef d;
  d.name = kKernelOp;
  d.min_inputs = 1;
  d.max_inputs = -1;
  d.attrs = {{kKernelBodyAttr, AttrKind::String, std::nullopt, true}};
  // Its class is its body's; the cost model and the fusion pass read the body.
  d.fusion = FusionClass::Opaque;
  d.infer = cached_infer;
  d.work = [](const OpContext& ctx, const std::vector<TensorType>& outputs) {
    OpWork w;
    Graph g = kernel_body_graph(*body_of(ctx), ctx.input_types);
    for (const Node& n : g.nodes()) {
      if (!n.def->work) continue;
      std::vector<TensorType> outs;
      for (ValueId o : n.outputs) outs.push_back(g.value(o).type);
      w.flops += n.def->work(make_context(g, n), outs).flops;
    }
    for (const TensorType* t : ctx.input_types)
      if (t) w.bytes_read += byte_count(*t);
    for (const TensorType& t : outputs) w.bytes_written += byte_count(t);
    return w;
  };
  d.kernel = [](const OpContext& ctx) {
    std::vector<TensorType> types;
    std::vector<const TensorType*> ptrs;
    types.reserve(ctx.num_inputs());
    std::vector<Tensor> inputs;
    for (size_t k = 0; k < ctx.num_inputs(); ++k) {
      if (!ctx.input_value(k)) ctx.fail("input " + std::to_string(k) + " is missing");
      types.push_back(ctx.input_value(k)->type());
      inputs.push_back(*ctx.input_value(k));
    }
    for (const TensorType& t : types) ptrs.push_back(&t);
    Graph g = kernel_body_graph(*body_of(ctx), ptrs);
    return Interpreter(g).run(inputs);
  };
  table.add(std::move(d));
}

}  // namespace eqfuse::ir
