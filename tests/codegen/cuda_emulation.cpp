#include "cuda_emulation.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <sstream>

#include "codegen/buffer_plan.h"
#include "codegen/cuda_backend.h"
#include "codegen/printer.h"
#include "support/error.h"

namespace fs = std::filesystem;

namespace eqfuse::testing {

namespace {

// Builds `source` against the emulator into `dir`/`name`.so and opens it; `defines` as the
// compiler's -D flags (" -DEQFUSE_CUDNN": built with cuDNN, as a tree where cuDNN is found).
void* build_emulated(const fs::path& dir, const std::string& name, const std::string& source,
                     const std::string& defines) {
  const fs::path cpp = dir / (name + ".cpp"), so = dir / (name + ".so"),
                 log = dir / (name + ".log");
  std::ofstream(cpp) << source;
  const char* cxx = std::getenv("CXX");
  std::string cmd = fmt::format(
      "'{}' -std=c++17 -O1 -fno-strict-aliasing -fPIC -shared -w{} "
      "-fsanitize=alignment -fno-sanitize-recover=alignment -I'{}' -o '{}' '{}' > '{}' 2>&1",
      cxx && *cxx ? cxx : "c++", defines, EQFUSE_CUDA_EMULATOR_DIR, so.string(), cpp.string(),
      log.string());
  if (std::system(cmd.c_str()) != 0) {
    std::stringstream text;
    text << std::ifstream(log).rdbuf();
    throw Error("cuda emulation: the CUDA source in " + cpp.string() + " does not build:\n" +
                    text.str().substr(0, 4000),
                Error::Kind::Internal);
  }
  void* handle = ::dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) throw Error(std::string("cuda emulation: ") + ::dlerror(), Error::Kind::Internal);
  return handle;
}

// A scratch folder and the libraries built in it, closed and removed on every way out.
struct Scratch {
  fs::path dir;
  std::vector<void*> handles;
  Scratch() {
    static int builds = 0;
    dir = fs::temp_directory_path() /
          fmt::format("eqfuse-cuda-emulation-{}-{}", ::getpid(), builds++);
    fs::create_directories(dir);
  }
  ~Scratch() {
    for (void* h : handles) ::dlclose(h);
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  void* build(const std::string& name, const std::string& source, const std::string& defines) {
    handles.push_back(build_emulated(dir, name, source, defines));
    return handles.back();
  }
};

// A hosted unit's kernels (extern "C" __global__ void NAME(PARAMS)) called by name with their
// arguments' addresses, as the driver's cuLaunchKernel takes them, and the table's GEMM through
// the emulator's cuBLAS: C++ appended to the device unit.
std::string hosted_harness(const std::string& device) {
  static const std::regex kernel(R"re(extern "C" __global__ void (\w+)\(([^)]*)\))re");
  std::string cases;
  for (auto it = std::sregex_iterator(device.begin(), device.end(), kernel);
       it != std::sregex_iterator(); ++it) {
    std::string params = (*it)[2], args;
    size_t k = 0;
    for (size_t at = 0; at < params.size(); ++k) {
      size_t end = params.find(", ", at);
      std::string param = params.substr(at, end == std::string::npos ? end : end - at);
      at = end == std::string::npos ? params.size() : end + 2;
      std::string type = param.substr(0, param.find_last_of(' '));  // less the name
      for (size_t r = type.find(" __restrict__"); r != std::string::npos;
           r = type.find(" __restrict__"))
        type.erase(r, 13);
      args += fmt::format("{}*({}*)args[{}]", k ? ", " : "", type, k);
    }
    cases += fmt::format(
        "  if (!strcmp(name, \"{}\")) {{\n    eqf_emu::launch(block, [&] {{ {}({}); }});\n"
        "    return 0;\n  }}\n",
        (*it)[1].str(), (*it)[1].str(), args);
  }
  return "\nextern \"C\" int eqf_emulated_launch(const char* name, unsigned block, void** args) "
         "{\n" +
         cases +
         "  return 1;\n}\n\n"
         "static cudaDataType eqf_cuda_type(int onnx) {\n"
         "  return onnx == 10 ? CUDA_R_16F : onnx == 16 ? CUDA_R_16BF : CUDA_R_32F;\n}\n"
         "extern \"C\" int eqf_emulated_gemm(void*, int ta, int tb, int64_t m, int64_t n, "
         "int64_t k, float alpha, const void* a, int at, int64_t lda, int64_t sa, const void* b, "
         "int bt, int64_t ldb, int64_t sb, void* c, int ct, int64_t ldc, int64_t sc, "
         "int64_t batch) {\n"
         "  const float beta = 0;\n  cublasHandle_t h;\n  cublasCreate(&h);\n"
         "  return cublasGemmStridedBatchedEx(h, (cublasOperation_t)ta, (cublasOperation_t)tb, "
         "(int)m, (int)n, (int)k, &alpha, a, eqf_cuda_type(at), (int)lda, sa, b, "
         "eqf_cuda_type(bt), (int)ldb, sb, &beta, c, eqf_cuda_type(ct), (int)ldc, sc, (int)batch, "
         "CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) != CUBLAS_STATUS_SUCCESS;\n}\n";
}

using Run =
    std::function<int(const int64_t*, const void* const*, void* const*, const void*, void*)>;
using ArenaBytes = int64_t (*)(const int64_t*);

// `run` on each input set, twice (see run_cuda_emulated_sets).
std::vector<std::vector<ir::Tensor>> run_sets(
    const codegen::KernelPlan& plan, const Run& run, ArenaBytes arena_bytes,
    const std::vector<std::vector<ir::Tensor>>& input_sets, const std::string& conv_form) {
  ::setenv("EQFUSE_CONV", conv_form.c_str(), 1);
  std::vector<unsigned char> weights = codegen::weights_blob(plan);
  const ir::Graph& g = plan.graph;
  std::vector<std::vector<ir::Tensor>> results;
  int rc = 0;
  std::string race;
  for (const std::vector<ir::Tensor>& inputs : input_sets) {
    std::vector<int64_t> dims = codegen::bind_dims(plan, inputs);
    const int64_t align = codegen::kBufferAlignment;
    const size_t bytes = size_t((arena_bytes(dims.data()) + align - 1) / align * align);
    std::unique_ptr<void, decltype(&std::free)> arena(
        bytes ? std::aligned_alloc(size_t(align), bytes) : nullptr, &std::free);
    std::vector<const void*> in;
    for (const ir::Tensor& t : inputs) in.push_back(t.raw());
    // Twice: threads in order over an arena of 0xff bytes (NaN as floats), then in reverse over
    // zeros. The outputs must agree to the bit: a difference is a race between threads or a read
    // of memory nothing wrote.
    std::vector<ir::Tensor> runs[2];
    for (int pass = 0; pass < 2 && rc == 0; ++pass) {
      if (bytes) std::memset(arena.get(), pass == 0 ? 0xff : 0, bytes);
      std::vector<void*> out;
      for (size_t k = 0; k < g.outputs().size(); ++k)
        runs[pass].emplace_back(g.value(g.outputs()[k]).type.dtype,
                                codegen::output_dims(plan, k, dims));
      for (ir::Tensor& t : runs[pass]) out.push_back(t.raw());
      if (pass == 1) ::setenv("EQF_EMULATOR_ORDER", "reverse", 1);
      rc = run(dims.data(), in.data(), out.data(), weights.data(), arena.get());
      ::unsetenv("EQF_EMULATOR_ORDER");
    }
    if (rc != 0) break;
    for (size_t k = 0; k < runs[0].size() && race.empty(); ++k)
      if (std::memcmp(runs[0][k].raw(), runs[1][k].raw(), runs[0][k].byte_size()) != 0)
        race = fmt::format(
            "cuda emulation: output {} ('{}') differs between threads run in order over an arena "
            "of 0xff bytes and in reverse over zeros: a race between threads, or a read of "
            "memory nothing wrote",
            k, g.value(g.outputs()[k]).name);
    results.push_back(std::move(runs[0]));
  }
  if (rc != 0) throw Error(fmt::format("cuda emulation: the run returned {}", rc));
  if (!race.empty()) throw Error(race);
  return results;
}

}  // namespace

std::vector<std::vector<ir::Tensor>> run_cuda_emulated_sets(
    const ir::Graph& graph, const std::vector<std::vector<ir::Tensor>>& input_sets,
    const codegen::PlanOptions& options, const std::string& conv_form) {
  codegen::KernelPlan plan = codegen::make_plan(graph, options);
  std::string source =
      "#include <cuda_runtime.h>\n" + codegen::print_kernels(plan, codegen::Target::Cuda);
  // C++ has no launch syntax: each launch becomes a call of the emulator.
  static const std::regex launch(R"((\w+)<<<[^;]*?, (\d+), 0, st>>>\(([^;]*)\);)");
  source = std::regex_replace(source, launch, "eqf_emu::launch($2, [&] { $1($3); });");
  if (source.find("<<<") != std::string::npos)
    throw Error("cuda emulation: a launch the test does not rewrite", Error::Kind::Internal);
  Scratch scratch;
  void* handle = scratch.build("kernels", source, " -DEQFUSE_CUDNN");
  using TreeRun =
      int (*)(const int64_t*, const void* const*, void* const*, const void*, void*, void*);
  auto run = reinterpret_cast<TreeRun>(::dlsym(handle, "eqfuse_run"));
  auto arena_bytes = reinterpret_cast<ArenaBytes>(::dlsym(handle, "eqfuse_arena_bytes"));
  if (!run || !arena_bytes) throw Error("cuda emulation: no eqfuse_run", Error::Kind::Internal);
  return run_sets(
      plan,
      [&](const int64_t* dims, const void* const* in, void* const* out, const void* weights,
          void* arena) { return run(dims, in, out, weights, arena, nullptr); },
      arena_bytes, input_sets, conv_form);
}

std::vector<std::vector<ir::Tensor>> run_cuda_hosted_emulated_sets(
    const ir::Graph& graph, const std::vector<std::vector<ir::Tensor>>& input_sets,
    const codegen::PlanOptions& options, const std::string& conv_form) {
  codegen::KernelPlan plan = codegen::make_plan(graph, options);
  codegen::HostedCuda units = codegen::print_cuda_hosted(plan, /*runtime=*/true);
  // The device unit as NVRTC builds it (no defines), the host unit with cuDNN.
  Scratch scratch;
  void* device = scratch.build("device",
                               "#include <cuda_runtime.h>\n#include <string.h>\n" + units.device +
                                   "#include <cublas_v2.h>\n" + hosted_harness(units.device),
                               "");
  void* host = scratch.build("host", "#include <cuda_runtime.h>\n" + units.host, " -DEQFUSE_CUDNN");
  using Launch = int (*)(const char*, unsigned, void**);
  using Gemm = decltype(codegen::EqfHost::gemm);
  static Launch launch = nullptr;  // the table's functions take no closure
  launch = reinterpret_cast<Launch>(::dlsym(device, "eqf_emulated_launch"));
  auto gemm = reinterpret_cast<Gemm>(::dlsym(device, "eqf_emulated_gemm"));
  auto run = reinterpret_cast<codegen::RunHosted>(::dlsym(host, "eqfuse_run_hosted"));
  auto arena_bytes = reinterpret_cast<ArenaBytes>(::dlsym(host, "eqfuse_arena_bytes"));
  if (!launch || !gemm || !run || !arena_bytes)
    throw Error("cuda emulation: a hosted entry point is missing", Error::Kind::Internal);
  struct Launches {
    std::string failed;  // the first kernel the harness does not know
  } launches;
  const codegen::EqfHost table{
      &launches,
      [](void* ctx, const char* kernel, unsigned, unsigned block, void** args) {
        const int rc = launch(kernel, block, args);
        auto* l = static_cast<Launches*>(ctx);
        if (rc && l->failed.empty()) l->failed = kernel;
        return rc;
      },
      gemm, nullptr};
  try {
    return run_sets(
        plan,
        [&](const int64_t* dims, const void* const* in, void* const* out, const void* weights,
            void* arena) { return run(dims, in, out, weights, arena, &table); },
        arena_bytes, input_sets, conv_form);
  } catch (const Error&) {
    if (!launches.failed.empty())
      throw Error("cuda emulation: the hosted code launched '" + launches.failed +
                  "', which the device unit lacks");
    throw;
  }
}

std::vector<ir::Tensor> run_cuda_emulated(const ir::Graph& graph,
                                          const std::vector<ir::Tensor>& inputs,
                                          const codegen::PlanOptions& options,
                                          const std::string& conv_form) {
  return run_cuda_emulated_sets(graph, {inputs}, options, conv_form).front();
}

}  // namespace eqfuse::testing
