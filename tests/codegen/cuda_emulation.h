#pragma once
// Runs the CUDA source the printer generates for a graph on this CPU, through the emulator in
// cuda_emulator/ (its header says what it models), so that tests check the CUDA kernels'
// numerics where there is no GPU.
#include <string>
#include <vector>

#include "codegen/plan.h"
#include "ir/graph.h"
#include "ir/tensor.h"

namespace eqfuse::testing {

// Plans `graph`, prints its CUDA kernels and run function, builds them with the system C++
// compiler (with EQFUSE_CUDNN) against the emulator and runs them on `inputs`, convolutions in
// `conv_form` (EQFUSE_CONV: "kernels", "cudnn", or "auto", which times both and, the emulator's
// times being zero, keeps the kernels). Error naming the compiler's first lines where the
// source does not build, or the run's return code where it fails.
std::vector<ir::Tensor> run_cuda_emulated(const ir::Graph& graph,
                                          const std::vector<ir::Tensor>& inputs,
                                          const codegen::PlanOptions& options = {},
                                          const std::string& conv_form = "kernels");
// The same build run on each input set in turn (one process, as a caller binding new dims).
std::vector<std::vector<ir::Tensor>> run_cuda_emulated_sets(
    const ir::Graph& graph, const std::vector<std::vector<ir::Tensor>>& input_sets,
    const codegen::PlanOptions& options = {}, const std::string& conv_form = "kernels");
// The hosted units of `eqfuse run --backend cuda` (print_cuda_hosted with the runtime: cuBLASLt
// and cuDNN called by the host code) run the same way: the device unit built against the
// emulator with a harness that launches its kernels by name, the host unit against the
// emulator's runtime and libraries, joined by an EqfHost table as the CUDA backend joins them.
std::vector<std::vector<ir::Tensor>> run_cuda_hosted_emulated_sets(
    const ir::Graph& graph, const std::vector<std::vector<ir::Tensor>>& input_sets,
    const codegen::PlanOptions& options = {}, const std::string& conv_form = "kernels");

}  // namespace eqfuse::testing
