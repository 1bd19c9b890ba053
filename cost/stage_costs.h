#pragma once
// The time of each stage of a kernel plan in the form generated CUDA runs it
// (codegen::stage_forms). Generated code runs a fused kernel as its stages, each a launch of its
// own or a library call, with the values the plan stores between them written and read again;
// this is how the cost model prices a Kernel node (CostModel::node_cost, through a plan of its
// body alone) and how `eqfuse compile` prices each stage of a whole model (predictions.json),
// which a GPU run's per-stage times (bench/gpu/run.py) check:
//
//   stage = overhead + max(compute, bytes / (bandwidth x eff_bw))
//
//   overhead  launches x launch_overhead; a cuBLAS or cuBLASLt call: library_call_us, plus a
//             launch for a kernel after it (a Gemm's C term)
//   compute   the compute terms under the model of the stage's op and of the ops it recomputes
//             from stored values, each as many times as the stage evaluates it (a producer read
//             through an Expand, a Tile or a broadcast, once for every element it reaches) (wave
//             quantization, the convolution's tile); attention: the
//             FLOPs of its two products at the FP32 peak x `efficiency.attention` (its
//             tensor-core form, never measured yet, priced the same)
//   bytes     the stored values it reads and the one it writes (with the layout copies it
//             stores beside it), at the bytes memory holds (the plan's buffers), plus a direct
//             convolution's rereads, plus the output read and written again by a kernel after
//             a library call (a Gemm's C term)
//
// A stage computed where another stores (a contraction's epilogue) adds to that stage its other
// reads, its compute, and its output's bytes in place of that stage's own; a Concat or layout
// copy its producers store costs nothing, and a producer storing a copy beside its own value
// (codegen::Buffer::also_stored_in) writes both.
#include <vector>

#include "codegen/plan.h"
#include "codegen/printer.h"
#include "cost/cost_model.h"

namespace eqfuse::cost {

// Each stage's cost under `model`: its dim bindings size the plan's run-time dims, its precision
// the stored tensors. A plan made at f32 and priced under a 16-bit precision stores its f32
// values at that precision, inputs and outputs included (a kernel's body, whose inputs and
// outputs are the model's intermediates); a plan made at the precision keeps its own buffers'
// types (a whole model's inputs and outputs stay f32). `forms` is stage_forms(plan, Cuda).
std::vector<NodeCost> stage_costs(const codegen::KernelPlan& plan,
                                  const std::vector<codegen::StageForm>& forms,
                                  const CostModel& model);

// The stages' costs as one: times, FLOPs and bytes summed; bound by the largest summed term.
NodeCost total_cost(const std::vector<NodeCost>& stages);

}  // namespace eqfuse::cost
