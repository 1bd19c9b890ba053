#include "tools/stage_costs.h"

#include <map>
#include <string>

namespace eqfuse::tools {

std::vector<cost::NodeCost> stage_costs(const codegen::KernelPlan& plan,
                                        const std::vector<codegen::StageForm>& forms,
                                        const cost::DeviceProfile& device, int64_t dim_size) {
  using Runs = codegen::StageForm::Runs;
  std::map<std::string, int64_t> sizes;
  cost::CostOptions options;
  options.precision = plan.precision;
  for (const std::string& d : plan.dims) sizes[d] = options.dim_bindings[d] = dim_size;
  const cost::CostModel model(device, options);
  const ir::Graph& g = plan.graph;
  auto bytes_of = [&](ir::ValueId v) {
    const codegen::Buffer* b = plan.buffer(v);
    return b ? static_cast<double>(b->bytes.evaluate(sizes).value_or(0)) : 0.0;
  };
  auto node_cost = [&](ir::NodeId n) {
    return n == ir::kNoNode ? cost::NodeCost{} : model.node_cost(g, g.node(n));
  };

  std::vector<cost::NodeCost> costs(plan.stages.size());
  for (size_t i = 0; i < plan.stages.size(); ++i) {
    const codegen::Stage& s = plan.stages[i];
    const codegen::StageForm& form = forms.at(i);
    double bytes = 0;
    for (ir::ValueId v : s.reads)
      if (!(form.runs == Runs::Elsewhere && s.last_read_at_own_element == v)) bytes += bytes_of(v);
    if (form.runs == Runs::Elsewhere) {
      // Its other reads are the storing stage's; a Concat its producers wrote costs nothing.
      // The storing stage writes this stage's output in place of its own.
      if (form.by) {
        cost::NodeCost& host = costs.at(*form.by);
        bytes += bytes_of(s.output) - bytes_of(plan.stages.at(*form.by).output);
        host.bytes += bytes;
        host.memory_seconds += model.memory_seconds(bytes);
      }
      continue;
    }
    bytes += bytes_of(s.output);
    // A kernel after a library call (a Gemm's C term) reads and writes the output again.
    if (form.runs == Runs::Library) bytes += 2.0 * form.kernels * bytes_of(s.output);
    const cost::NodeCost op = node_cost(s.node);
    double flops = op.flops, compute = op.compute_seconds;
    bytes += op.reread_bytes;
    if (s.kind == codegen::StageKind::Attention && s.attention) {
      flops += node_cost(s.attention->scores).flops;
      compute = flops / (device.fp32 * device.efficiency.attention);
    }
    cost::NodeCost c;
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
  for (cost::NodeCost& c : costs) cost::settle(c);
  return costs;
}

}  // namespace eqfuse::tools
