#include "cost/cost_model.h"

#include <algorithm>
#include <array>

#include "codegen/plan.h"
#include "codegen/printer.h"
#include "cost/shape_binding.h"
#include "cost/stage_costs.h"
#include "cost/wave_quantization.h"
#include "ir/kernel_body.h"
#include "support/error.h"

namespace eqfuse::cost {

std::string_view bound_name(Bound b) {
  switch (b) {
    case Bound::Compute:
      return "compute";
    case Bound::Memory:
      return "memory";
    case Bound::Launch:
      return "launch";
    case Bound::Free:
      return "free";
  }
  return "?";
}

bool folds_into_indexing(std::string_view op_type) {
  static constexpr std::array<std::string_view, 9> kFolded = {"Reshape",   "Flatten",  "Squeeze",
                                                              "Unsqueeze", "Identity", "Dropout",
                                                              "Constant",  "Shape",    "Size"};
  return std::find(kFolded.begin(), kFolded.end(), op_type) != kFolded.end();
}

namespace {

// A library GEMM with fewer output tiles than SMs splits its k into slices of this many (cuBLAS's
// split-k), at most as many as give each SM a tile.
constexpr double kSplitKSlice = 256;

double numel(const ir::TensorType& t) {
  return static_cast<double>(t.shape.numel().value_or(1));
}

double bytes_of(const std::vector<ir::TensorType>& types) {
  double total = 0;
  for (const ir::TensorType& t : types) total += numel(t) * ir::dtype_size(t.dtype);
  return total;
}

// Work of an entry with no work count yet: every input read once, every output written once,
// one FLOP per output element for arithmetic classes.
ir::OpWork estimated_work(ir::FusionClass fusion, const std::vector<ir::TensorType>& inputs,
                          const std::vector<ir::TensorType>& outputs) {
  ir::OpWork w;
  w.bytes_read = bytes_of(inputs);
  w.bytes_written = bytes_of(outputs);
  bool arithmetic = fusion == ir::FusionClass::Elementwise ||
                    fusion == ir::FusionClass::Broadcast || fusion == ir::FusionClass::Reduction;
  if (arithmetic) {
    for (const ir::TensorType& t : outputs) w.flops += numel(t);
  }
  return w;
}

}  // namespace

CostModel::CostModel(DeviceProfile profile, CostOptions options)
    : profile_(std::move(profile)), options_(std::move(options)) {
  ir::DType p = options_.precision;
  if (p != ir::DType::f32 && p != ir::DType::f16 && p != ir::DType::bf16)
    throw Error(std::string("cost model: precision ") + std::string(ir::dtype_name(p)) +
                    ": expected f32, f16 or bf16",
                Error::Kind::BadInput);
}

ir::DType CostModel::stored_dtype(ir::DType t) const {
  return t == ir::DType::f32 ? options_.precision : t;
}

double CostModel::stored_bytes(const ir::TensorType& t) const {
  return numel(t) * ir::dtype_size(stored_dtype(t.dtype));
}

double CostModel::peak_for(ir::FusionClass fusion, ir::DType dtype) const {
  const DeviceProfile& p = profile_;
  if (fusion == ir::FusionClass::Contraction) {
    switch (dtype) {
      case ir::DType::f16:
        return p.fp16_tensor;
      case ir::DType::bf16:
        return p.bf16_tensor;
      case ir::DType::f64:
        return p.fp64_tensor;
      case ir::DType::i8:
      case ir::DType::u8:
        return p.int8_tensor;
      case ir::DType::f32:
        return options_.allow_tf32 ? p.tf32_tensor : p.fp32;
      default:
        return p.fp32;
    }
  }
  return dtype == ir::DType::f64 ? p.fp64 : p.fp32;
}

double CostModel::efficiency_for(ir::FusionClass fusion, const std::string& op_type) const {
  const Efficiency& e = profile_.efficiency;
  switch (fusion) {
    case ir::FusionClass::Contraction:
      return op_type == "Conv" || op_type == "ConvTranspose" ? e.convolution : e.contraction;
    case ir::FusionClass::Reduction:
      return e.reduction;
    case ir::FusionClass::Opaque:
      return e.opaque;
    case ir::FusionClass::Elementwise:
    case ir::FusionClass::Broadcast:
    case ir::FusionClass::Layout:
      return e.elementwise;
  }
  return e.elementwise;
}

NodeCost CostModel::kernel_cost(double flops, double bytes, double peak, double compute_efficiency,
                                double wave) const {
  NodeCost c;
  c.flops = flops;
  c.bytes = bytes;
  c.peak = peak;
  c.launch_seconds = profile_.launch_overhead;
  double throughput = peak * std::clamp(compute_efficiency, 0.0, 1.0) * std::clamp(wave, 0.0, 1.0);
  c.compute_seconds = flops > 0 ? flops / throughput : 0;
  c.memory_seconds = memory_seconds(bytes);
  settle(c);
  return c;
}

double CostModel::memory_seconds(double bytes) const {
  return bytes > 0 ? bytes / (profile_.memory_bandwidth * profile_.efficiency.bandwidth) : 0;
}

void settle(NodeCost& c) {
  const double roofline = std::max(c.compute_seconds, c.memory_seconds);
  c.seconds = c.launch_seconds + roofline;
  if (c.seconds == 0)
    c.bound = Bound::Free;
  else if (c.launch_seconds > roofline)
    c.bound = Bound::Launch;
  else
    c.bound = c.compute_seconds > c.memory_seconds ? Bound::Compute : Bound::Memory;
}

NodeCost CostModel::node_cost(const ir::OpContext& ctx,
                              const std::vector<ir::TensorType>& outputs) const {
  if (folds_into_indexing(ctx.node.op_type)) return NodeCost{};
  DimBindings bindings{&options_.dim_bindings, options_.default_dim};

  std::vector<ir::TensorType> inputs;  // present inputs, bound
  std::vector<ir::TensorType> storage(ctx.input_types.size());
  std::vector<const ir::TensorType*> input_ptrs(ctx.input_types.size(), nullptr);
  for (size_t i = 0; i < ctx.input_types.size(); ++i) {
    if (!ctx.input_types[i]) continue;
    storage[i] = bind_type(*ctx.input_types[i], bindings);
    input_ptrs[i] = &storage[i];
    inputs.push_back(storage[i]);
  }
  ir::OpContext bound{ctx.node, ctx.def, input_ptrs, ctx.input_values};

  std::vector<ir::TensorType> outs;
  bool all_static = true;
  for (const ir::TensorType& t : outputs) {
    all_static = all_static && t.shape.is_static();
    outs.push_back(bind_type(t, bindings));
  }
  if (!all_static && ctx.def.infer) {
    // Output dims that were dynamic follow from the bound inputs more faithfully than from the
    // default binding; keep the bound types when inference cannot say.
    try {
      std::vector<ir::TensorType> inferred = ctx.def.infer(bound);
      if (inferred.size() >= outs.size()) {
        inferred.resize(outs.size());
        bool ok = std::all_of(inferred.begin(), inferred.end(),
                              [](const ir::TensorType& t) { return t.shape.is_static(); });
        if (ok) outs = std::move(inferred);
      }
    } catch (const Error&) {
    }
  }

  if (ctx.def.name == ir::kKernelOp) {
    // A body that cannot be instantiated at the bound shapes (the default binding of a dim may
    // be one the model's reshapes do not allow, seq = 1 against a Reshape to (4, seq/4)) is
    // priced as an opaque op of the same traffic: the estimate of what the model cannot count.
    // The body keeps the model's types: each of its ops applies the precision itself.
    try {
      return fused_body_cost(bound, outs);
    } catch (const Error&) {
      return opaque_cost(ir::kKernelOp, inputs, outs);
    }
  }
  // What memory holds under the precision: the work counts bytes from these types.
  for (ir::TensorType& t : storage) t.dtype = stored_dtype(t.dtype);
  for (ir::TensorType& t : inputs) t.dtype = stored_dtype(t.dtype);
  for (ir::TensorType& t : outs) t.dtype = stored_dtype(t.dtype);
  ir::FusionClass fusion = ctx.def.fusion;
  ir::OpWork w = ctx.def.work ? ctx.def.work(bound, outs) : estimated_work(fusion, inputs, outs);
  ir::DType dtype =
      !inputs.empty() ? inputs[0].dtype : (!outs.empty() ? outs[0].dtype : ir::DType::f32);
  double wave = 1.0, reread = 0;
  if (fusion == ir::FusionClass::Contraction) {
    if (auto form = conv_form(bound, outs, profile_.sm_count)) {
      wave = form->compute_factor;
      if (!inputs.empty())
        reread = (form->input_reads - 1) * stored_bytes(inputs[0]) * profile_.conv_reread_fraction;
    } else {
      // A library GEMM takes smaller tiles where its largest would not fill the SMs: the
      // profile's tile, then halved along N, then along both, the first with a tile per SM.
      // Still short of one, it splits k in slices of kSplitKSlice, at most a tile per SM.
      const int tm = profile_.gemm_tile_m, tn = profile_.gemm_tile_n;
      for (auto [m, n] : {std::pair{tm, tn}, std::pair{tm, std::max(1, tn / 2)},
                          std::pair{std::max(1, tm / 2), std::max(1, tn / 2)}}) {
        auto tiles = gemm_output_tiles(bound, outs, m, n);
        if (!tiles) break;
        int64_t split = 1;
        if (*tiles < profile_.sm_count && !outs.empty()) {
          const double k = w.flops / (2 * std::max(1.0, numel(outs[0])));
          split = std::clamp<int64_t>(static_cast<int64_t>(k / kSplitKSlice), 1,
                                      profile_.sm_count / std::max<int64_t>(1, *tiles));
        }
        wave = wave_efficiency(*tiles * split, profile_.sm_count);
        if (*tiles >= profile_.sm_count) break;
      }
    }
  }
  NodeCost c = kernel_cost(w.flops, w.bytes_read + reread + w.bytes_written,
                           peak_for(fusion, dtype), efficiency_for(fusion, ctx.node.op_type), wave);
  c.reread_bytes = reread;
  auto matrix = [&](size_t k) {
    return ctx.has_input(k) && ctx.input_types[k]->dtype == ir::DType::f32 &&
           ctx.input_types[k]->shape.has_rank() && ctx.input_types[k]->shape.rank() >= 2;
  };
  if ((ctx.node.op_type == "MatMul" || ctx.node.op_type == "Gemm") && matrix(0) && matrix(1)) {
    // Generated code runs a lone f32 product of matrices as a cuBLAS call (codegen/printer.h;
    // a batch broadcast only in part, or a Gemm's C term it cannot pass, takes kernels too).
    c.launch_seconds = profile_.library_call_overhead;
    settle(c);
  }
  return c;
}

NodeCost CostModel::opaque_cost(const std::string& op_type,
                                const std::vector<ir::TensorType>& inputs,
                                const std::vector<ir::TensorType>& outputs) const {
  if (folds_into_indexing(op_type)) return NodeCost{};
  DimBindings bindings{&options_.dim_bindings, options_.default_dim};
  double bytes = 0;
  for (const auto* types : {&inputs, &outputs})
    for (const ir::TensorType& t : *types) bytes += stored_bytes(bind_type(t, bindings));
  return kernel_cost(0, bytes, profile_.fp32, profile_.efficiency.opaque);
}

NodeCost CostModel::fused_kernel_cost(const FusedKernelWork& work) const {
  return kernel_cost(work.flops, work.bytes_in + work.bytes_out, peak_for(work.fusion, work.dtype),
                     efficiency_for(work.fusion));
}

namespace {

// A graph of one kernel node and its inputs. The inputs' known values go in as weights: a
// Reshape's shape, a Slice's bounds or a Gather's indices passed as a kernel input decide the
// shapes inside the body, which would otherwise be unknown.
ir::Graph graph_of_kernel(const ir::OpContext& bound, const std::vector<ir::TensorType>& outputs) {
  ir::Graph alone;
  ir::Node kernel = bound.node;
  kernel.inputs.clear();
  for (size_t k = 0; k < bound.input_types.size(); ++k) {
    const ir::Tensor* value = bound.input_value(k);
    const std::string name = "?" + std::to_string(k);
    kernel.inputs.push_back(!bound.input_types[k] ? ir::kNoValue
                            : value               ? alone.add_weight(name, *value)
                                                  : alone.add_input(name, *bound.input_types[k]));
  }
  kernel.outputs.clear();
  for (size_t k = 0; k < outputs.size(); ++k)
    kernel.outputs.push_back(alone.add_value("out" + std::to_string(k), outputs[k]));
  alone.add_node(std::move(kernel));
  for (size_t k = 0; k < outputs.size(); ++k) alone.add_output(alone.nodes().back().outputs[k]);
  return alone;
}

// A Concat of a kernel's own inputs: in the model's plan the kernels that make them write its
// slices where they are loops of ours (pointwise or convolution stages) read by nothing else
// (codegen/plan.cpp, "Concat in place"), which a plan of this kernel alone cannot see. Priced as
// written so, the common case of the models (a CNN's branches); a Concat of parts that a library
// call or a row stage makes, or that others read too, is a copy priced low.
void mark_input_concats_written_by_producers(const codegen::KernelPlan& plan,
                                             std::vector<codegen::StageForm>& forms) {
  for (size_t i = 0; i < plan.stages.size(); ++i) {
    const codegen::Stage& st = plan.stages[i];
    if (st.node == ir::kNoNode || plan.graph.node(st.node).op_type != "Concat") continue;
    const auto& parts = plan.graph.node(st.node).inputs;
    if (std::all_of(parts.begin(), parts.end(), [&](ir::ValueId in) {
          const codegen::Buffer* b = plan.buffer(in);
          return b && b->storage == codegen::Storage::Input;
        }))
      forms[i] = {codegen::StageForm::Runs::Elsewhere, "producers", 0, {}};
  }
}

}  // namespace

NodeCost CostModel::fused_body_cost(const ir::OpContext& bound,
                                    const std::vector<ir::TensorType>& outputs) const {
  try {
    // As generated code runs it: the stages of a plan of this kernel alone. The plan is made at
    // f32 and priced at this model's precision (stage_costs.h), so that the kernel's inputs and
    // output, intermediates of the model, are stored at the precision too.
    // Its layout copies are priced as copies, inside the kernel or before it: the model's plan
    // has a copy's producer store it where that is loops of ours (plan.h), which a kernel alone
    // cannot see for its inputs. Priced free on one side only, copies drew the extraction to
    // kernels that keep them (bench/compare_extraction.py: bert_tiny, gpt_tiny and vit_tiny one
    // launch more each); priced free for inputs too, to copies of library products and model
    // inputs, which stay copies.
    codegen::PlanOptions alone;
    alone.layout_copies_by_producers = false;
    const codegen::KernelPlan plan = codegen::make_plan(graph_of_kernel(bound, outputs), alone);
    std::vector<codegen::StageForm> forms = codegen::stage_forms(plan, codegen::Target::Cuda);
    mark_input_concats_written_by_producers(plan, forms);
    return total_cost(stage_costs(plan, forms, *this));
  } catch (const std::exception&) {
    // Priced below, as before there were stages.
  }
  // A body generated code cannot plan (an op it has no lowering for, which `eqfuse compile`
  // then names): one launch, its own inputs and outputs, the compute terms of its ops,
  // intermediates on chip.
  auto body = ir::kernel_body(bound.attr_string(ir::kKernelBodyAttr));
  ir::Graph g = ir::kernel_body_graph(*body, bound.input_types, bound.input_values);
  double flops = 0, compute = 0, bytes = 0;
  for (const ir::Node& n : g.nodes()) {
    NodeCost c = node_cost(g, n);  // each op's compute term keeps its own wave quantization
    flops += c.flops;
    compute += c.compute_seconds;
    bytes += c.reread_bytes;
  }
  for (const ir::TensorType* t : bound.input_types)
    if (t) bytes += stored_bytes(*t);
  for (const ir::TensorType& t : outputs) bytes += stored_bytes(t);
  NodeCost c = kernel_cost(0, bytes, profile_.fp32, 1.0);
  c.flops = flops;
  c.compute_seconds = compute;
  settle(c);
  return c;
}

NodeCost CostModel::node_cost(const ir::Graph& graph, const ir::Node& node) const {
  std::vector<ir::TensorType> outputs;
  for (ir::ValueId v : node.outputs) outputs.push_back(graph.value(v).type);
  if (node.is_opaque()) {
    std::vector<ir::TensorType> inputs;
    for (ir::ValueId v : node.inputs)
      if (v != ir::kNoValue) inputs.push_back(graph.value(v).type);
    return opaque_cost(node.op_type, inputs, outputs);
  }
  return node_cost(ir::make_context(graph, node), outputs);
}

GraphCost CostModel::graph_cost(const ir::Graph& graph) const {
  GraphCost total;
  codegen::PlanOptions as_generated;
  as_generated.precision = options_.precision;
  const std::vector<bool> idle = codegen::nodes_stored_by_producers(graph, as_generated);
  for (size_t i = 0; i < graph.nodes().size(); ++i) {
    const ir::Node& node = graph.nodes()[i];
    NodeCost c;
    if (idle[i])
      c.bound = Bound::Free;  // its producers store it in place: no kernel
    else
      c = node_cost(graph, node);
    total.seconds += c.seconds;
    total.nodes.push_back({node.name, node.op_type, c});
  }
  return total;
}

}  // namespace eqfuse::cost
