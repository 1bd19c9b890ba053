#pragma once
// The CPU backend: the C++ twin of a plan, built with the system C++ compiler into a shared
// library on first use and loaded with dlopen. Builds are cached under
// $XDG_CACHE_HOME/eqfuse/cpu (codegen/build_cache.h), keyed by a hash of the source and the
// compile command, so a model compiles once per machine whatever its batch size.
//
// The compiler is $CXX (else c++); flags are -O3 -fopenmp -fPIC -shared. With EQFUSE_BLAS=1 in
// the environment, and where the compiler finds CBLAS (<cblas.h> and -lblas: Debian's
// libopenblas-dev or libblas-dev), the twin is built with EQFUSE_CBLAS and hands f32 matrix
// products to it; by default it keeps its own loops, which measured faster on the 2-core CI
// machine (README). A failed build is an Error quoting the compiler's first lines.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "codegen/plan.h"
#include "ir/tensor.h"

namespace eqfuse::codegen {

struct CpuBuildInfo {
  std::string library;  // path of the shared library
  bool cached = false;  // found in the cache, not compiled now
  bool blas = false;    // matrix products through CBLAS
  double compile_seconds = 0;
};

class CpuModule {
 public:
  // Plans, prints and builds (or finds in the cache) the C++ twin of `graph`. `on_compile`, when
  // given, hears one line just before the compiler starts (not on a cache hit), for a progress
  // line: a first build takes seconds. `options` set the plan's precision.
  static std::unique_ptr<CpuModule> build(
      const ir::Graph& graph, CpuBuildInfo* info = nullptr,
      const std::function<void(const std::string&)>& on_compile = {},
      const PlanOptions& options = {});
  ~CpuModule();
  CpuModule(const CpuModule&) = delete;
  CpuModule& operator=(const CpuModule&) = delete;

  // Inputs in the graph's order; symbolic dims are bound from their shapes.
  std::vector<ir::Tensor> run(const std::vector<ir::Tensor>& inputs) const;
  const KernelPlan& plan() const { return plan_; }

 private:
  CpuModule() = default;
  KernelPlan plan_;
  std::vector<unsigned char> weights_;
  void* handle_ = nullptr;
  int (*run_)(const int64_t*, const void* const*, void* const*, const void*, void*) = nullptr;
  int64_t (*arena_bytes_)(const int64_t*) = nullptr;
};

}  // namespace eqfuse::codegen
