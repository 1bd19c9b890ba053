#include "cost/stage_costs.h"

#include <functional>
#include <map>
#include <optional>
#include <string>

#include "codegen/lowering.h"

namespace eqfuse::cost {

namespace {

// The nodes a stage computes: its own and those it recomputes from stored values (pointwise
// producers whose values the plan does not store), each with how many times over its own
// elements the stage computes it. An element expression evaluates its operands at every element
// it computes, so a producer read through an Expand, a Tile or a broadcast is recomputed for each
// element it reaches (through a Slice or a Gather, only for those): the count is the product of
// the reader's elements over the read input's along the path (the most of any path). A
// reduction, a contraction or pooling is counted as reading its input's elements once each (a
// lower bound where pooling windows overlap), and a rows stage computes its row reductions once
// a row, as its op's work counts them (1).
std::map<ir::NodeId, double> computed_nodes(
    const codegen::KernelPlan& plan, ir::NodeId root,
    const std::function<std::optional<double>(ir::ValueId)>& numel) {
  const ir::Graph& g = plan.graph;
  std::map<ir::NodeId, double> times;
  std::vector<std::pair<ir::NodeId, double>> todo = {{root, 1.0}};
  while (!todo.empty()) {
    const auto [n, m] = todo.back();
    todo.pop_back();
    if (auto it = times.find(n); it != times.end() && it->second >= m) continue;
    times[n] = m;
    const ir::Node& node = g.node(n);
    const bool per_element = codegen::is_pointwise(node);
    for (size_t k : codegen::data_inputs(node)) {
      if (k >= node.inputs.size() || node.inputs[k] == ir::kNoValue) continue;
      const ir::Value& v = g.value(node.inputs[k]);
      if (v.producer == ir::kNoNode || plan.buffer(node.inputs[k])) continue;
      double t = 1;
      if (per_element && codegen::is_pointwise(g.node(v.producer))) {
        t = m;
        // A Concat evaluates each part at its own elements only, a constant Pad its input inside.
        const bool each_once =
            node.op_type == "Concat" ||
            (node.op_type == "Pad" && node.attrs.get_string("mode", "constant") == "constant");
        const auto out = numel(node.outputs[0]), in = numel(node.inputs[k]);
        if (!each_once && out && in && *in > 0) t *= *out / *in;
      }
      todo.push_back({v.producer, t});
    }
  }
  return times;
}

}  // namespace

std::vector<NodeCost> stage_costs(const codegen::KernelPlan& plan,
                                  const std::vector<codegen::StageForm>& forms,
                                  const CostModel& model) {
  using Runs = codegen::StageForm::Runs;
  const DeviceProfile& device = model.profile();
  const CostOptions& options = model.options();
  std::map<std::string, int64_t> sizes;
  for (const std::string& d : plan.dims) {
    auto it = options.dim_bindings.find(d);
    sizes[d] = it == options.dim_bindings.end() ? options.default_dim : it->second;
  }
  // A plan made at f32 priced under a 16-bit precision: its f32 buffers at the precision.
  const bool stored_at_precision = plan.precision == ir::DType::f32;
  const ir::Graph& g = plan.graph;
  auto bytes_of = [&](ir::ValueId v) {
    const codegen::Buffer* b = plan.buffer(v);
    if (!b) return 0.0;
    double bytes = static_cast<double>(b->bytes.evaluate(sizes).value_or(0));
    if (stored_at_precision && b->dtype == ir::DType::f32)
      bytes *= double(ir::dtype_size(model.stored_dtype(b->dtype))) / ir::dtype_size(b->dtype);
    return bytes;
  };
  // What a stage writes: its value, and each layout copy of it that it stores beside it
  // (Buffer::also_stored_in; a value kept in another's buffer takes the same bytes there).
  auto written_bytes = [&](ir::ValueId v) {
    double bytes = bytes_of(v);
    if (const codegen::Buffer* b = plan.buffer(v))
      for (const codegen::Buffer::Place& p : b->also_stored_in) bytes += bytes_of(p.value);
    return bytes;
  };
  auto node_cost = [&](ir::NodeId n) {
    return n == ir::kNoNode ? NodeCost{} : model.node_cost(g, g.node(n));
  };
  auto numel = [&](ir::ValueId v) -> std::optional<double> {
    const ir::Shape& shape = g.value(v).type.shape;
    if (!shape.has_rank()) return std::nullopt;
    const auto n = shape.sym_numel().evaluate(sizes);
    return n ? std::optional<double>(double(*n)) : std::nullopt;
  };

  std::vector<NodeCost> costs(plan.stages.size());
  for (size_t i = 0; i < plan.stages.size(); ++i) {
    const codegen::Stage& s = plan.stages[i];
    const codegen::StageForm& form = forms.at(i);
    double bytes = 0, flops = 0, compute = 0;
    for (ir::ValueId v : s.reads)
      if (!(form.runs == Runs::Elsewhere && s.last_read_at_own_element == v)) bytes += bytes_of(v);
    if (s.node != ir::kNoNode && !s.written_by_producers)
      for (const auto& [n, times] : computed_nodes(plan, s.node, numel)) {
        const NodeCost c = node_cost(n);
        flops += times * c.flops;
        compute += times * c.compute_seconds;
      }
    if (form.runs == Runs::Elsewhere) {
      // Its other reads and its arithmetic are the storing stage's; a Concat or layout copy its
      // producers stored costs nothing. The storing stage writes this stage's output in place of
      // its own.
      if (form.by) {
        NodeCost& host = costs.at(*form.by);
        bytes += written_bytes(s.output) - bytes_of(plan.stages.at(*form.by).output);
        host.bytes += bytes;
        host.memory_seconds += model.memory_seconds(bytes);
        host.flops += flops;
        host.compute_seconds += compute;
      }
      continue;
    }
    bytes += written_bytes(s.output);
    // A kernel after a library call (a Gemm's C term) reads and writes the output again.
    if (form.runs == Runs::Library) bytes += 2.0 * form.kernels * bytes_of(s.output);
    const NodeCost op = node_cost(s.node);
    bytes += op.reread_bytes;
    if (s.kind == codegen::StageKind::Attention && s.attention) {
      // Its scores, softmax and the pointwise work between them are inside `flops` already.
      compute = (op.flops + node_cost(s.attention->scores).flops) /
                (device.fp32 * device.efficiency.attention);
    }
    NodeCost c;
    c.bytes = bytes;
    c.memory_seconds = model.memory_seconds(bytes);
    c.flops = flops;
    c.compute_seconds = compute;
    c.reread_bytes = op.reread_bytes;
    c.peak = s.kind == codegen::StageKind::Attention ? device.fp32 : op.peak;
    c.launch_seconds = form.kernels * device.launch_overhead +
                       (form.runs == Runs::Library ? device.library_call_overhead : 0);
    costs[i] = c;
  }
  for (NodeCost& c : costs) settle(c);
  return costs;
}

NodeCost total_cost(const std::vector<NodeCost>& stages) {
  NodeCost total;
  for (const NodeCost& c : stages) {
    total.seconds += c.seconds;
    total.flops += c.flops;
    total.bytes += c.bytes;
    total.reread_bytes += c.reread_bytes;
    total.compute_seconds += c.compute_seconds;
    total.memory_seconds += c.memory_seconds;
    total.launch_seconds += c.launch_seconds;
    total.peak = std::max(total.peak, c.peak);
  }
  const double largest =
      std::max({total.launch_seconds, total.compute_seconds, total.memory_seconds});
  total.bound = total.seconds == 0                 ? Bound::Free
                : largest == total.compute_seconds ? Bound::Compute
                : largest == total.memory_seconds  ? Bound::Memory
                                                   : Bound::Launch;
  return total;
}

}  // namespace eqfuse::cost
