#pragma once
// The one kernel printer: a KernelPlan becomes one translation unit of C++ (the CPU twin) or of
// CUDA. Both targets get the same stage bodies, printed by the same code from the ops' meanings
// (an elementwise op's ScalarExpr, a layout op's index map, a reduction's or contraction's loop
// nest); they differ only in the wrapper around a body and in the matrix product:
//
//   what                | C++ twin                             | CUDA
//   --------------------|--------------------------------------|------------------------------
//   function prefix     | static                               | __global__ (+ a host launch)
//   the item loop       | for over items, OpenMP parallel      | grid-stride loop over threads
//   Softmax, LayerNorm  | one item per row, serial row loops   | a warp per row, lanes stride
//                       |                                      | the row, shuffles combine
//   MatMul / Gemm       | one item per output row, an inner    | one cuBLAS strided-batched
//                       | loop over columns that vectorizes;   | SGEMM (f32, batch dims equal
//                       | with EQFUSE_CBLAS defined, CBLAS     | or broadcast whole), else one
//                       | SGEMM per batch entry (same cases)   | thread per output element
//   2-D Conv            | one item per output row, taps along  | one thread per output element
//                       | the row                              |
//   math functions      | <math.h>                             | CUDA's device math
//
// Everything outside that table is checked on every CI run by running the C++ twin against the
// interpreter; the CUDA-only part is checked by building with nvcc and by GPU runs.
//
// The generated unit exports a C API (see kernel_api_text()): the arena size for a binding of
// the dims, and a run function taking the dims, input and output pointers, the weights blob
// and the arena (and, for CUDA, a stream).
#include <string>

#include "codegen/plan.h"

namespace eqfuse::codegen {

enum class Target { Cpu, Cuda };
std::string_view target_name(Target target);

// The whole translation unit. Deterministic: the same plan prints the same text.
std::string print_kernels(const KernelPlan& plan, Target target);

// The declarations of the generated C API, for the header of a generated tree.
std::string kernel_api_text(Target target);

}  // namespace eqfuse::codegen
