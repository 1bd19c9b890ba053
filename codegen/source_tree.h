#pragma once
// A standalone source tree for one model, what `eqfuse compile` writes: it builds with only the
// CUDA toolkit (target cuda) or only a C++ compiler (target cpu), and nothing of eqfuse.
//
//   kernels.cu | kernels.cpp  every stage and the run function, one translation unit
//   eqfuse_model.h            the C API of the unit (see codegen/printer.h)
//   bench.cu | bench.cpp      checks ONNX test data and times runs, printing JSON
//   weights.bin               the weights blob (absent for a structure-only model: the bench
//                             then fills it from a seed)
//   CMakeLists.txt            a library `eqfuse_model` and the `bench` executable
//   plan.json                 stages, kernels, buffers and dims, for reading and for tools
// (`eqfuse compile` adds predictions.json: the cost model's time per kernel.)
#include <filesystem>
#include <string>

#include "codegen/plan.h"
#include "codegen/printer.h"

namespace eqfuse::codegen {

struct TreeOptions {
  Target target = Target::Cpu;
  std::string cuda_arch = "sm_90a";  // CMAKE_CUDA_ARCHITECTURES takes it without "sm_"
};

struct TreeReport {
  size_t stages = 0, kernels = 0, arena_slots = 0;
  bool weights_written = false;
  uint64_t weight_bytes = 0, source_bytes = 0;
};

TreeReport write_source_tree(const KernelPlan& plan, const std::filesystem::path& dir,
                             const TreeOptions& options);

// The bench program's source (codegen/bench_source.cpp).
std::string bench_source_text();

}  // namespace eqfuse::codegen
