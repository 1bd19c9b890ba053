#pragma once
// The cost model's time of each stage of a kernel plan in the form generated CUDA runs it
// (codegen::stage_forms), for `eqfuse compile`'s predictions.json. The optimizer prices a fused
// kernel as one launch over its body (cost/cost_model.h), before there is a plan; generated code
// runs it as its stages, each a launch of its own or a library call, so a prediction that a GPU
// run's per-stage times (bench/gpu/run.py) can check prices those:
//
//   stage = overhead + max(compute, bytes / (bandwidth x eff_bw))
//
//   overhead  launches x launch_overhead; a cuBLAS or cuBLASLt call: library_call_us, plus a
//             launch for a kernel after it (a Gemm's C term)
//   compute   the compute term of the stage's op under the model (wave quantization, the
//             convolution's tile); attention: the FLOPs of its two products at the FP32 peak x
//             `efficiency.attention` (its tensor-core form, never measured yet, priced the same)
//   bytes     the stored values it reads and the one it writes, at the bytes memory holds
//             (the plan's buffers), plus a direct convolution's rereads, plus the output read
//             and written again by a kernel after a library call (a Gemm's C term)
//
// A stage computed where another stores (a contraction's epilogue) adds to that stage its other
// reads, and its output's bytes in place of that stage's own, and nothing else; a Concat its
// producers write costs nothing.
#include <cstdint>
#include <vector>

#include "codegen/plan.h"
#include "codegen/printer.h"
#include "cost/cost_model.h"

namespace eqfuse::tools {

// Each stage's cost on `device` with every dim of the plan bound to `dim_size`, at the plan's
// precision. `forms` is stage_forms(plan, Target::Cuda).
std::vector<cost::NodeCost> stage_costs(const codegen::KernelPlan& plan,
                                        const std::vector<codegen::StageForm>& forms,
                                        const cost::DeviceProfile& device, int64_t dim_size);

}  // namespace eqfuse::tools
