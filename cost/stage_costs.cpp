#include "cost/stage_costs.h"

#include <map>
#include <set>
#include <string>

#include "codegen/lowering.h"

namespace eqfuse::cost {

namespace {

// The nodes a stage computes: its own and those it recomputes from stored values (pointwise
// producers whose values the plan does not store), once each.
std::vector<ir::NodeId> computed_nodes(const codegen::KernelPlan& plan, ir::NodeId root) {
  const ir::Graph& g = plan.graph;
  std::vector<ir::NodeId> out;
  std::set<ir::NodeId> seen;
  std::vector<ir::NodeId> todo = {root};
  while (!todo.empty()) {
    const ir::NodeId n = todo.back();
    todo.pop_back();
    if (!seen.insert(n).second) continue;
    out.push_back(n);
    const ir::Node& node = g.node(n);
    for (size_t k : codegen::data_inputs(node)) {
      if (k >= node.inputs.size() || node.inputs[k] == ir::kNoValue) continue;
      const ir::Value& v = g.value(node.inputs[k]);
      if (v.producer != ir::kNoNode && !plan.buffer(node.inputs[k])) todo.push_back(v.producer);
    }
  }
  return out;
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

  std::vector<NodeCost> costs(plan.stages.size());
  for (size_t i = 0; i < plan.stages.size(); ++i) {
    const codegen::Stage& s = plan.stages[i];
    const codegen::StageForm& form = forms.at(i);
    double bytes = 0, flops = 0, compute = 0;
    for (ir::ValueId v : s.reads)
      if (!(form.runs == Runs::Elsewhere && s.last_read_at_own_element == v)) bytes += bytes_of(v);
    if (s.node != ir::kNoNode && !s.written_by_producers)
      for (ir::NodeId n : computed_nodes(plan, s.node)) {
        const NodeCost c = node_cost(n);
        flops += c.flops;
        compute += c.compute_seconds;
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
