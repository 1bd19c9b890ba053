#pragma once
// The one kernel printer: a KernelPlan becomes one translation unit of C++ (the CPU twin) or of
// CUDA. Both targets get the same stage bodies, printed by the same code from the ops' meanings
// (an elementwise op's ScalarExpr, a layout op's index map, a reduction's or contraction's loop
// nest); they differ only in the wrapper around a body and in the matrix product:
//
//   what                | C++ twin                             | CUDA
//   --------------------|--------------------------------------|------------------------------
//   function prefix     | static                               | __global__ (+ a host launch)
//   the item loop       | for over items, an OpenMP for in the | grid-stride loop over threads
//                       | run's one parallel region            |
//   pointwise           | a row of the last axis per item (an  | 4 elements per thread; f32
//                       | omp simd loop; rows under 16: an     | read or written at their own
//                       | element per item)                    | element in 128-bit accesses,
//                       |                                      | f16/bf16 in 64-bit ones (a
//                       |                                      | last partial group: one by
//                       |                                      | one)
//   Softmax, LayerNorm  | one item per row, serial row loops   | a warp per row, lanes stride
//                       |                                      | the row, shuffles combine;
//                       |                                      | static rows over 1024: a
//                       |                                      | block per row, shuffles then
//                       |                                      | shared memory combine
//   Reduce* over the    | an item per output, serial loops     | rows of 32 or more: a warp
//   last axes, ArgMax,  | (sums, here and in a rows stage's    | per output (over 1024: a
//   ArgMin              | reductions: omp simd reductions)     | block), combined as above
//                       |                                      | (ArgMax: extreme and index)
//   MatMul / Gemm       | one item per block of 12 output rows | one cuBLAS strided-batched
//                       | (4 where there are under 192; of the | call (batch dims equal or
//                       | whole batch where B is one matrix;   | broadcast whole): SGEMM for
//                       | a ragged block's in tiles of 4 and 2 | f32 buffers, GemmEx (f32
//                       | and single rows) and 256 columns,    | accumulate) for f16/bf16;
//                       | register tiles of 4 rows (AVX-512;   | with a bias, ReLU or added
//                       | 6 else) by 2 to 4 vectors of columns | matrix after it: cuBLASLt
//                       | (transB: 64 columns an item, tiles   | with that epilogue (trees);
//                       | of 4 rows by up to 4 columns of      | else a thread per element
//                       | vectors of dot products, added       |
//                       | across lanes); with EQFUSE_CBLAS,    |
//                       | CBLAS SGEMM per batch entry (f32     |
//                       | buffers only); a weight B in panels  |
//                       | of 64 columns: an item of 64 columns |
//                       | (panel by panel where they take 1    |
//                       | MiB or more), CBLAS a call per panel |
//   attention           | an item per 64 query rows; blocks of | a thread block per 8 query
//   softmax(S)·V        | 64 keys, K and V tiles in arrays, a  | rows, a warp per row; K and V
//                       | row's scores and its sums along V in | tiles of 32 keys in shared
//                       | vector registers, the running        | memory (__syncthreads), a
//                       | max/sum rescale the sums (online     | lane's score is its key's,
//                       | softmax)                             | shuffles combine and share
//                       |                                      | out V's row; 16-bit Q, K, V
//                       |                                      | (--precision): tensor cores,
//                       |                                      | mma.sync m16n8k16, 16 rows
//                       |                                      | a warp, 64-key blocks, S and
//                       |                                      | the output in registers
//   2-D pooling         | an output row per item, the taps     | an output element per thread
//                       | outside, the row in chunks of 64     |
//   2-D Conv            | one item per block of up to 8 output | an implicit GEMM: a thread
//                       | channels of one output row (1x1,     | block per tile of 128, 64 or
//                       | stride 1, unpadded: 512 pixels of    | 32 channels by 64 pixels,
//                       | the image as one row), register      | 16-k slices in shared memory,
//                       | tiles of one vector along the row    | register tiles (16-bit
//                       | (sums of 64 or more products: as     | operands: mma.sync m16n8k16
//                       | many vectors as the tile holds);     | fragments, 8 warps a tile);
//                       | edge tiles load through masks        | the run picks
//                       | (AVX-512, AVX), a stride of 2 as the | the largest size with 132
//                       | even lanes of two loads; patches     | tiles (depthwise: a thread
//                       | (stride = kernel width, a multiple   | per output element); with
//                       | of 16, unpadded): dot tiles along kw;| EQFUSE_CUDNN also cuDNN and
//                       | weights in blocks of 16 channels     | a finish kernel, and cuDNN's
//                       | (the twin's plans): an output row of |
//                       | 1 to 4 blocks per item, vectors of   |
//                       | channels per pixel, padded taps left |
//                       | out; 3x3 at stride 1, rows of 10 or  |
//                       | more: Winograd's F(2x2 or 4x4, 3x3)  |
//                       | over transformed weight blocks, a    |
//                       | row of tiles per item; 1x1 over 256  |
//                       | or more channels (64 at a stride):   |
//                       | pixels by W^T's panels in MatMul's   |
//                       | register tiles                       |
//                       |                                      | fused act(conv + z + bias)
//                       |                                      | where the stage is that; the
//                       |                                      | fastest timed at the first
//                       |                                      | run, checked against the
//                       |                                      | kernels
//   tile vectors        | 64 bytes with AVX-512 (a conv: 32    | -
//                       | where a row fits them better, its    |
//                       | loads are gathered, or it takes      |
//                       | weight blocks), 32 with AVX,         |
//                       | else 16 (#if); the operand a matrix  |
//                       | or convolution tile loads is pinned  |
//                       | in a register                        |
//   math functions      | <math.h>; glibc's vector math where  | CUDA's device math
//                       | a loop vectorizes (x86-64, GCC)      |
//
// f16 and bf16 buffers (a model's own, or --precision's) hold `eqf_f16`/`eqf_bf16`, 16-bit types
// of the prelude that convert to float on load and round to nearest even on store, with the same
// code on both targets; every expression computes in float. The tensor-core forms need sm_80 or
// newer; a plan for an older GPU (PlanOptions::tensor_cores off) gets the FP32 forms.
//
// Everything outside that table is checked on every CI run by running the C++ twin against the
// interpreter; the CUDA-only part by building with nvcc, by running the CUDA source on the
// tests' CPU emulator against the interpreter (tests/codegen/cuda_emulation.h; its cuBLAS and
// cuDNN are loops), and by GPU runs. The hosted units below take cuBLASLt's and cuDNN's forms
// only where their host code is built against the CUDA runtime (`runtime`).
//
// The generated unit exports a C API (see kernel_api_text()): the arena size for a binding of
// the dims, and a run function taking the dims, input and output pointers, the weights blob
// and the arena (and, for CUDA, a stream).
#include <optional>
#include <string>
#include <vector>

#include "codegen/plan.h"

namespace eqfuse::codegen {

enum class Target { Cpu, Cuda };
std::string_view target_name(Target target);

// The whole translation unit. Deterministic: the same plan prints the same text.
std::string print_kernels(const KernelPlan& plan, Target target);

// How generated code runs one stage, as the printer chose it: a tree's plan.json names each
// stage's form, and `eqfuse compile` prices each stage in its form (predictions.json), so that a
// prediction and a GPU run's per-stage time are of the same code.
struct StageForm {
  enum class Runs {
    Kernels,    // generated kernels of its own (`kernels` launches)
    Library,    // a cuBLAS or cuBLASLt call, then `kernels` generated ones (a Gemm's C term)
    Elsewhere,  // computed by stage `by` where it stores (an epilogue), or by its producers
  };
  Runs runs = Runs::Kernels;
  // "pointwise", "thread rows", "warp rows", "block rows", "pool", "copy", "gemm elements",
  // "cublas", "cublaslt", "conv tiles", "conv direct" (either with " or cudnn": chosen at run
  // time where the tree is built with cuDNN), "attention", "attention mma", "epilogue",
  // "producers"; the C++ twin's stages: "loops", "cblas or loops" (CBLAS where built with it),
  // "epilogue", "epilogue or loops" (its own loops after CBLAS).
  std::string name;
  int kernels = 1;
  std::optional<size_t> by;  // Elsewhere: the stage that computes it (none: its producers)
};
// The form of every stage of `plan` printed for `target` (what print_kernels writes).
std::vector<StageForm> stage_forms(const KernelPlan& plan, Target target);

// The declarations of the generated C API, for the header of a generated tree.
std::string kernel_api_text(Target target);

// CUDA for eqfuse to run in-process (`eqfuse run --backend cuda`, codegen/cuda_backend.h): the
// same stages split in two. `device` holds only the kernels (extern "C", for NVRTC); `host` is
// plain C++ for the system compiler, the same run function as the CUDA unit's except that it
// launches kernels, calls cuBLAS and records events through a table the caller passes:
//   extern "C" int eqfuse_run_hosted(dims, inputs, outputs, weights, arena, const EqfHost* H)
// (struct EqfHost is declared at the top of `host`), with the arena, interface and
// eqfuse_num_stages functions of the other units. With `runtime` the host code is to be built
// against the CUDA runtime and cuBLASLt (their headers and libraries; cuDNN's too where the
// build defines EQFUSE_CUDNN, as in a tree), and then calls cuBLASLt with its epilogues and
// cuDNN exactly as a generated tree does (the same runtimes, on the default stream, in the
// context the table's launches use); without it, products go to the table's cuBLAS and
// convolutions run in their kernels.
struct HostedCuda {
  std::string device, host;
};
HostedCuda print_cuda_hosted(const KernelPlan& plan, bool runtime = false);

}  // namespace eqfuse::codegen
