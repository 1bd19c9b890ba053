#pragma once
// The CUDA backend: a plan run on the GPU from inside eqfuse (`eqfuse run --backend cuda`,
// Python's `eqfuse.run(..., backend="cuda")`). The printer's hosted units (print_cuda_hosted)
// are built in two parts: the kernels with NVRTC into a cubin for the GPU's architecture, the
// host code with the system C++ compiler into a shared library, both cached under
// $XDG_CACHE_HOME/eqfuse/cuda (codegen/build_cache.h) by a hash of the sources, the
// architecture and NVRTC's version. The host code reaches the GPU through a table of the
// driver API (launches) and cuBLAS (matrix products), loaded with dlopen (support/cuda_driver.h),
// so eqfuse links no CUDA library and needs no nvcc. Where the CUDA toolkit's runtime and
// cuBLASLt are installed with their headers (find_host_libraries), the host code is built against
// them and calls cuBLASLt with its epilogues and cuDNN (where that is installed too) itself, as a
// generated tree does, so that the library runs the same code as `eqfuse compile`'s trees.
//
// Building the artifacts needs no GPU (build_cuda_artifacts: NVRTC and a C++ compiler), which is
// how machines without one check them; CudaModule::build needs a GPU and says so (BadInput,
// exit 2) where there is none.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "codegen/plan.h"
#include "ir/tensor.h"

namespace eqfuse::codegen {

// The table through which the hosted host code reaches the GPU, as the printer declares it at
// the top of the host unit (printer_runtimes.cpp, kHostTable; tests/codegen/cuda_hosted_test.cpp
// runs the host code with this type). `launch`: a kernel's name, grid and block sizes, and the
// addresses of its arguments (as cuLaunchKernel). `gemm`: a column-major strided batched C = alpha
// op(A) op(B) with element types as ONNX codes (1 f32, 10 f16, 16 bf16), accumulating in f32.
// `record`: the start of stage k, for profiling (may be null). Nonzero is failure.
struct EqfHost {
  void* ctx;
  int (*launch)(void* ctx, const char* kernel, unsigned grid, unsigned block, void** args);
  int (*gemm)(void* ctx, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, float alpha,
              const void* a, int a_type, int64_t lda, int64_t stride_a, const void* b, int b_type,
              int64_t ldb, int64_t stride_b, void* c, int c_type, int64_t ldc, int64_t stride_c,
              int64_t batch);
  void (*record)(void* ctx, int stage);
};

// The host unit's entry point.
using RunHosted = int (*)(const int64_t* dims, const void* const* inputs, void* const* outputs,
                          const void* weights, void* arena, const EqfHost* host);

// What the hosted host code may be built against: the CUDA runtime and cuBLASLt of the toolkit
// in $CUDA_HOME, $CUDA_PATH or /usr/local/cuda (the first with both, headers and libraries), and
// cuDNN from $CUDNN_ROOT, that toolkit or /usr (a distribution's package). None found:
// `libraries` is empty and the host code reaches the GPU only through the EqfHost table. Host
// code built so keeps process-wide state (the libraries' handles, cuDNN's workspace and the
// convolutions' choices, as a tree's run function does), stays loaded until the process ends,
// and runs one call at a time (CudaModule::run serializes them).
struct HostLibraries {
  std::vector<std::string> libraries;  // "cuBLASLt", then "cuDNN" where found
  std::string flags;                   // for the compiler: include directories, EQFUSE_CUDNN
  std::string libs;                    // to link: the libraries' files and their rpaths
};
HostLibraries find_host_libraries();

struct CudaArtifacts {
  std::filesystem::path cubin;              // NVRTC's output for `arch`
  std::filesystem::path host_library;       // the host unit, built with the system compiler
  std::vector<std::string> host_libraries;  // what the host code calls itself (HostLibraries)
  std::string host_libraries_refused;       // why not, where they were found but did not build
  bool cached = false;                      // both found in the cache
  double nvrtc_seconds = 0, host_seconds = 0;
};

// Compiles the plan's hosted units for `arch` ("sm_90", "sm_90a", "sm_86"), or finds them in the
// cache; NVRTC and the host compiler run at once. `on_compile` hears one line before they start.
// Host code that does not build against the libraries found is built without them (the reason
// in host_libraries_refused).
// Error (Unsupported) where NVRTC is not installed or refuses the kernels (its log quoted), Error
// (Internal) where the C++ compiler fails.
CudaArtifacts build_cuda_artifacts(const KernelPlan& plan, const std::string& arch,
                                   const std::function<void(const std::string&)>& on_compile = {});

struct CudaBuildInfo {
  std::string gpu;   // the device's name
  std::string arch;  // what the kernels were compiled for
  CudaArtifacts artifacts;
};

class CudaModule {
 public:
  // Plans `graph`, builds (or finds) its artifacts for GPU 0 and loads them. Error (BadInput)
  // when no GPU answers, naming why (no driver, no device, no NVRTC).
  static std::unique_ptr<CudaModule> build(
      const ir::Graph& graph, CudaBuildInfo* info = nullptr,
      const std::function<void(const std::string&)>& on_compile = {},
      const PlanOptions& options = {});
  ~CudaModule();
  CudaModule(const CudaModule&) = delete;
  CudaModule& operator=(const CudaModule&) = delete;

  // Copies the inputs (graph order) to the GPU, runs every stage on the default stream and
  // copies the outputs back. Symbolic dims are bound from the inputs' shapes.
  std::vector<ir::Tensor> run(const std::vector<ir::Tensor>& inputs) const;
  const KernelPlan& plan() const { return plan_; }

  struct Session;  // the driver, context, module and cuBLAS handle (cuda_backend.cpp)

 private:
  CudaModule() = default;
  KernelPlan plan_;
  std::unique_ptr<Session> session_;
};

}  // namespace eqfuse::codegen
