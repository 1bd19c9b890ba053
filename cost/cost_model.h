#pragma once
// The analytic GPU cost model: predicted time of one kernel (a graph node, an e-node, or a fused
// kernel) on one device, and of a whole graph as the sum of its kernels on one stream.
//
// Cost of one kernel (a roofline with launch overhead, no compute/memory overlap beyond max):
//
//   time = launch + max(FLOPs / (peak x eff_class x wave), bytes / (bandwidth x eff_bw))
//
// * peak: the dtype and tensor-core eligibility choose it. Contractions (MatMul, Gemm, Conv) in
//   f16/bf16 run at the dense tensor-core peak, i8/u8 at the INT8 tensor peak, f64 at the FP64
//   tensor peak, f32 at the FP32 peak unless `allow_tf32` (then the TF32 tensor peak). Every
//   other op runs at the FP32 peak (FP64 for f64 data): elementwise math is not tensor-core work.
// * eff_class: the profile's efficiency for the op's fusion class (contraction, elementwise and
//   broadcast, reduction; data movement ops have no FLOPs; opaque ops use `opaque`).
// * wave: wave quantization for GEMM and convolution. The output is cut into tiles of the
//   profile's gemm_tile (128x128); tiles run in waves of one tile per SM, so a last partial wave
//   idles SMs: wave = tiles / (ceil(tiles / SMs) x SMs). A convolution is its implicit GEMM
//   (M = N x output pixels, N = output channels per group, one GEMM per group).
// * bytes: what the op table's work count says the op really touches (a Gather reads its rows).
//
// A lone f32 MatMul or Gemm of matrices runs as a cuBLAS call: its fixed term is the profile's
// library call (library_call_us) in place of a launch.
//
// A fused kernel (a Kernel node, ir/kernel_body.h) is priced as generated code runs it: codegen
// plans its body alone and the printer states each stage's form; each stage is a launch or a
// library call over the values it reads and stores (cost/stage_costs.h). A body of pointwise
// work is one stage with its intermediates in registers; a body that codegen cuts (LayerNorm
// rows stored, then a cuBLAS product over them) costs both stages and the traffic between them,
// so extraction prices the fusions codegen will split as what they will be.
//
// Layout-only ops that codegen folds into indexing (Reshape, Flatten, Squeeze, Unsqueeze,
// Identity, Dropout at inference, Constant, Shape, Size) cost nothing (bound "free"). Ops that
// move data (Transpose, Concat, Slice, Gather, ...) cost their bytes. An opaque op (no table
// entry) is estimated as one launch plus reading its inputs and writing its outputs at
// bandwidth x eff_bw, with no FLOPs: a lower-bound guess, stated as such. An entry whose work
// count is missing is estimated the same way, with one FLOP per output element for
// elementwise and reduction classes.
//
// No figure beats the device's physical limits: every efficiency is <= 1 (checked at load), so
// time >= FLOPs / peak and time >= bytes / bandwidth always.
//
// Precision (`CostOptions::precision`, codegen's `--precision`): generated code then stores f32
// tensors at 16 bits and computes in f32. The model prices that: every f32 tensor an op reads or
// writes counts at the precision's size, and contractions over such operands run at its
// tensor-core peak; other arithmetic stays at the FP32 peak. A model's inputs and outputs stay
// f32 in generated code; a node does not know it touches them, so the first and last kernels are
// priced a little low.
//
// Symbolic dims: costs need static shapes. A symbolic dim named in `dim_bindings` takes that
// size; any other symbolic or unknown dim takes `default_dim` (1: a batch of one, the latency
// case). An unranked tensor counts as one element.
#include <map>
#include <string>
#include <vector>

#include "cost/device_profile.h"
#include "ir/graph.h"
#include "ir/op_table.h"

namespace eqfuse::cost {

enum class Bound {
  Compute,  // the FLOP term is the largest
  Memory,   // the byte term is the largest
  Launch,   // the launch overhead exceeds both: a tiny kernel
  Free,     // folded into indexing by codegen: no kernel at all
};
std::string_view bound_name(Bound b);  // "compute", "memory", "launch", "free"

// Whether codegen folds an op of this type into the indexing of its consumers (no kernel).
bool folds_into_indexing(std::string_view op_type);

struct NodeCost {
  double seconds = 0;
  double flops = 0;
  double bytes = 0;  // read + written
  // Of `bytes`, what a convolution run one output per thread reads again (its input once for
  // every output covering it, beyond the first read, times the profile's conv_reread_fraction
  // that reaches memory): memory traffic a fused kernel has too.
  double reread_bytes = 0;
  double compute_seconds = 0;  // FLOP term (after efficiency and wave quantization)
  double memory_seconds = 0;   // byte term
  double launch_seconds = 0;
  double peak = 0;  // FLOP/s peak chosen for this kernel (0 for free nodes)
  Bound bound = Bound::Free;
  double ms() const { return seconds * 1e3; }
};

// Sets `c.seconds` (launch + max(compute, memory)) and `c.bound` from its three terms; all zero
// is Free.
void settle(NodeCost& c);

struct NamedNodeCost {
  std::string name;
  std::string op;
  NodeCost cost;
};

struct GraphCost {
  double seconds = 0;                // kernels run one after another on one stream
  std::vector<NamedNodeCost> nodes;  // in graph order
  double ms() const { return seconds * 1e3; }
};

struct CostOptions {
  bool allow_tf32 = false;                      // f32 contractions may use TF32 tensor cores
  std::map<std::string, int64_t> dim_bindings;  // symbolic dim name -> size
  int64_t default_dim = 1;                      // any other symbolic or unknown dim
  ir::DType precision = ir::DType::f32;         // what f32 tensors are stored at: f32, f16 or bf16
};

// What a fused kernel does, for fused_kernel_cost: its FLOPs, the HBM bytes of its own inputs
// and outputs (intermediates stay on chip), the fusion class that dominates its arithmetic,
// and the dtype of that arithmetic.
struct FusedKernelWork {
  double flops = 0;
  double bytes_in = 0;
  double bytes_out = 0;
  ir::FusionClass fusion = ir::FusionClass::Elementwise;
  ir::DType dtype = ir::DType::f32;
};

class CostModel {
 public:
  explicit CostModel(DeviceProfile profile, CostOptions options = {});

  const DeviceProfile& profile() const { return profile_; }
  const CostOptions& options() const { return options_; }

  // A node as it sits in a graph (its input and output value types, bound as above).
  NodeCost node_cost(const ir::Graph& graph, const ir::Node& node) const;
  // An op from its context (input types, constant inputs, attributes) and output types, with
  // no graph: what the optimizer asks for each e-node.
  NodeCost node_cost(const ir::OpContext& ctx, const std::vector<ir::TensorType>& outputs) const;
  // An op with no table entry, from its type name and tensor types.
  NodeCost opaque_cost(const std::string& op_type, const std::vector<ir::TensorType>& inputs,
                       const std::vector<ir::TensorType>& outputs) const;
  // A fused kernel described by its work alone: one launch plus the traffic of its own inputs
  // and outputs.
  NodeCost fused_kernel_cost(const FusedKernelWork& work) const;
  // Every node of the graph, and the total. A Concat or layout copy that generated code has its
  // producers store in place (codegen::nodes_stored_by_producers) is free, as it runs.
  GraphCost graph_cost(const ir::Graph& graph) const;

  // The roofline itself, for callers that already know FLOPs, bytes and peak. `wave` is the
  // wave-quantization factor in (0, 1].
  NodeCost kernel_cost(double flops, double bytes, double peak, double compute_efficiency,
                       double wave = 1.0) const;
  // The byte term of a kernel moving `bytes` to or from memory.
  double memory_seconds(double bytes) const;
  // The FLOP/s peak for arithmetic of `fusion` class on `dtype` data.
  double peak_for(ir::FusionClass fusion, ir::DType dtype) const;
  // The compute efficiency of an op of `fusion`'s class; `op_type` tells a Conv from the other
  // contractions.
  double efficiency_for(ir::FusionClass fusion, const std::string& op_type = "") const;
  // What memory holds for a tensor of type `t` under the precision, and its bytes (bound type).
  ir::DType stored_dtype(ir::DType t) const;
  double stored_bytes(const ir::TensorType& t) const;

 private:
  // A Kernel node (ir/kernel_body.h): the stages of its body's plan (stage_costs.h). A body
  // codegen cannot plan: one launch, the HBM bytes of its own inputs and outputs, and the
  // compute terms of the ops of its body, intermediates on chip.
  NodeCost fused_body_cost(const ir::OpContext& bound,
                           const std::vector<ir::TensorType>& outputs) const;
  DeviceProfile profile_;
  CostOptions options_;
};

}  // namespace eqfuse::cost
