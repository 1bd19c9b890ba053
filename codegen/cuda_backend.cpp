#include "codegen/cuda_backend.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <future>
#include <iterator>
#include <map>
#include <mutex>
#include <optional>
#include <utility>

#include "codegen/build_cache.h"
#include "codegen/printer.h"
#include "support/cuda_driver.h"
#include "support/error.h"

namespace eqfuse::codegen {

namespace fs = std::filesystem;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// `dir`/include/`header` and the first of `dir`/{lib64,lib,lib/<multiarch>}/`names` that
// exist, as the include directory and the library's file (symbolic links resolved, so that the
// cache key changes with an upgrade in place); nullopt where either is missing, or where a path
// would not survive the compiler's command line (a quote in it).
std::optional<std::pair<fs::path, fs::path>> find_library(const fs::path& dir,
                                                          const std::string& header,
                                                          const std::vector<std::string>& names) {
  std::error_code ec;
  if (dir.empty() || !fs::exists(dir / "include" / header, ec)) return std::nullopt;
  for (const char* sub : {"lib64", "lib", "lib/x86_64-linux-gnu", "lib/aarch64-linux-gnu"})
    for (const std::string& name : names)
      if (fs::exists(dir / sub / name, ec)) {
        const fs::path file = fs::canonical(dir / sub / name, ec);
        const std::string paths = (dir / "include").string() + file.string();
        if (ec || paths.find('\'') != std::string::npos) return std::nullopt;
        return std::pair{dir / "include", file};
      }
  return std::nullopt;
}

std::string env_or(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

}  // namespace

HostLibraries find_host_libraries() {
  HostLibraries found;
  for (const std::string& root :
       {env_or("CUDA_HOME"), env_or("CUDA_PATH"), std::string("/usr/local/cuda")}) {
    auto cudart = find_library(root, "cuda_runtime.h",
                               {"libcudart.so", "libcudart.so.13", "libcudart.so.12"});
    auto lt = find_library(root, "cublasLt.h",
                           {"libcublasLt.so", "libcublasLt.so.13", "libcublasLt.so.12"});
    if (!cudart || !lt) continue;
    found.libraries = {"cuBLASLt"};
    found.flags = fmt::format(" -I'{}'", cudart->first.string());
    found.libs = fmt::format(" '{}' '{}' -Wl,-rpath,'{}' -Wl,-rpath,'{}'", cudart->second.string(),
                             lt->second.string(), cudart->second.parent_path().string(),
                             lt->second.parent_path().string());
    for (const std::string& cudnn_root : {env_or("CUDNN_ROOT"), root, std::string("/usr")})
      if (auto cudnn = find_library(cudnn_root, "cudnn.h", {"libcudnn.so", "libcudnn.so.9"})) {
        found.libraries.push_back("cuDNN");
        found.flags += fmt::format(" -DEQFUSE_CUDNN -I'{}'", cudnn->first.string());
        found.libs += fmt::format(" '{}' -Wl,-rpath,'{}'", cudnn->second.string(),
                                  cudnn->second.parent_path().string());
        break;
      }
    break;
  }
  return found;
}

namespace {

// The artifacts with the host code built against `libraries` (none: the table only).
CudaArtifacts build_with(const KernelPlan& plan, const std::string& arch,
                         const std::function<void(const std::string&)>& on_compile,
                         const cuda::NvrtcApi* nvrtc, const HostLibraries& libraries) {
  int major = 0, minor = 0;
  nvrtc->nvrtcVersion(&major, &minor);
  HostedCuda units = print_cuda_hosted(plan, !libraries.libraries.empty());
  const std::string cxx = system_compiler();
  const std::string flags = "-std=c++17 -O2 -fPIC -shared -w" + libraries.flags;
  fs::path dir =
      cache_root() / "cuda" /
      source_hash(fmt::format("{}\n{}\n{} nvrtc {}.{}\n{} {}{}", units.device, units.host, arch,
                              major, minor, cxx, flags, libraries.libs));
  CudaArtifacts a;
  a.host_libraries = libraries.libraries;
  a.cubin = dir / ("kernels." + arch + ".cubin");
  a.host_library = dir / "host.so";
  a.cached = fs::exists(a.cubin) && fs::exists(a.host_library);
  const bool need_cubin = !fs::exists(a.cubin), need_host = !fs::exists(a.host_library);
  const std::string against =
      libraries.libraries.empty()
          ? ""
          : fmt::format(" against {}", fmt::join(libraries.libraries, " and "));
  if (on_compile && (need_cubin || need_host))
    on_compile(
        fmt::format("compiling {}{}{} (first use; cached in {})",
                    need_cubin ? fmt::format("{} CUDA stages with NVRTC {}.{} for {}",
                                             plan.stages.size(), major, minor, arch)
                               : "",
                    need_cubin && need_host ? " and " : "",
                    need_host ? fmt::format("the CUDA host code with {}{}", cxx, against) : "",
                    dir.parent_path().string()));
  // The two compiles share nothing, so the host code builds while NVRTC runs. (Declared before
  // anything the NVRTC branch may throw past: the future's destructor waits for the build.)
  std::future<double> host;
  if (need_host)
    host = std::async(std::launch::async, [&units, &cxx, &flags, &libraries, &a] {
      auto t0 = std::chrono::steady_clock::now();
      compile_shared_library(units.host, fmt::format("'{}' {}", cxx, flags), libraries.libs,
                             a.host_library);
      return seconds_since(t0);
    });
  if (need_cubin) {
    auto t0 = std::chrono::steady_clock::now();
    std::string cubin = cuda::nvrtc_compile(*nvrtc, units.device, "kernels.cu", arch);
    a.nvrtc_seconds = seconds_since(t0);
    write_atomically(dir / "kernels.cu", units.device);  // for reading what runs
    write_atomically(a.cubin, cubin);
  }
  if (host.valid()) a.host_seconds = host.get();
  return a;
}

}  // namespace

CudaArtifacts build_cuda_artifacts(const KernelPlan& plan, const std::string& arch,
                                   const std::function<void(const std::string&)>& on_compile) {
  std::string why;
  auto nvrtc = cuda::load_nvrtc(&why);
  if (!nvrtc) throw Error("CUDA backend: " + why, Error::Kind::Unsupported);
  const HostLibraries libraries = find_host_libraries();
  if (libraries.libraries.empty()) return build_with(plan, arch, on_compile, nvrtc.get(), {});
  try {
    return build_with(plan, arch, on_compile, nvrtc.get(), libraries);
  } catch (const Error& e) {
    // Headers that do not build with this compiler, say: the table's forms still run.
    if (e.kind() != Error::Kind::Internal) throw;
    CudaArtifacts a = build_with(plan, arch, on_compile, nvrtc.get(), {});
    a.host_libraries_refused = fmt::format(
        "the host code did not build against {} ({}); it runs "
        "without them",
        fmt::join(libraries.libraries, " and "), std::string(e.what()).substr(0, 400));
    return a;
  }
}

// ---- the GPU session ----------------------------------------------------------------------

struct CudaModule::Session {
  std::unique_ptr<cuda::CudaApi> api;
  cuda::CUdevice device = 0;
  cuda::CUcontext context = nullptr;
  cuda::CUmodule module = nullptr;
  cuda::cublasHandle_t blas = nullptr;
  void* host = nullptr;
  RunHosted run = nullptr;
  cuda::CUdeviceptr weights = 0;
  std::map<std::string, cuda::CUfunction> functions;
  std::string failure;  // the first failure inside a run, for its error

  ~Session() {
    if (!api) return;
    if (weights) api->cuMemFree(weights);
    if (blas) api->cublasDestroy(blas);
    if (module) api->cuModuleUnload(module);
    if (context) api->cuDevicePrimaryCtxRelease(device);
    if (host) ::dlclose(host);
  }
  void check(cuda::CUresult r, const char* what) const { cuda::check_cuda(*api, r, what); }

  static int launch(void* ctx, const char* kernel, unsigned grid, unsigned block, void** args) {
    auto* s = static_cast<Session*>(ctx);
    auto [it, fresh] = s->functions.try_emplace(kernel, nullptr);
    if (fresh && s->api->cuModuleGetFunction(&it->second, s->module, kernel) != 0) {
      s->failure = fmt::format("kernel {} is not in the module", kernel);
      return 1;
    }
    cuda::CUresult r =
        s->api->cuLaunchKernel(it->second, grid, 1, 1, block, 1, 1, 0, nullptr, args, nullptr);
    if (r != 0) s->failure = fmt::format("launching {} failed ({})", kernel, r);
    return r;
  }
  static int gemm(void* ctx, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                  const void* a, int a_type, int64_t lda, int64_t stride_a, const void* b,
                  int b_type, int64_t ldb, int64_t stride_b, void* c, int c_type, int64_t ldc,
                  int64_t stride_c, int64_t batch) {
    auto* s = static_cast<Session*>(ctx);
    const float beta = 0;
    int r = s->api->cublasGemmStridedBatchedEx(
        s->blas, trans_a, trans_b, int(m), int(n), int(k), &alpha, a, cuda::cuda_data_type(a_type),
        int(lda), stride_a, b, cuda::cuda_data_type(b_type), int(ldb), stride_b, &beta, c,
        cuda::cuda_data_type(c_type), int(ldc), stride_c, int(batch), cuda::kCublasCompute32F,
        cuda::kCublasGemmDefault);
    if (r != 0) s->failure = fmt::format("cuBLAS GemmStridedBatchedEx failed ({})", r);
    return r;
  }
};

std::unique_ptr<CudaModule> CudaModule::build(
    const ir::Graph& graph, CudaBuildInfo* info,
    const std::function<void(const std::string&)>& on_compile, const PlanOptions& options) {
  std::string why;
  auto api = cuda::load_cuda(&why);
  if (!api) throw Error("CUDA backend: no GPU here (" + why + ")", Error::Kind::BadInput);
  if (!api->cublasGemmStridedBatchedEx)
    throw Error("CUDA backend: cuBLAS (libcublas.so) is not installed", Error::Kind::Unsupported);
  std::unique_ptr<CudaModule> m(new CudaModule());
  m->session_ = std::make_unique<Session>();
  Session& s = *m->session_;
  s.api = std::move(api);
  const cuda::CudaApi& a = *s.api;
  s.check(a.cuDeviceGet(&s.device, 0), "cuDeviceGet");
  char name[256] = {};
  s.check(a.cuDeviceGetName(name, sizeof name, s.device), "cuDeviceGetName");
  int major = 0, minor = 0;
  s.check(a.cuDeviceGetAttribute(&major, cuda::kAttrCcMajor, s.device), "compute capability");
  s.check(a.cuDeviceGetAttribute(&minor, cuda::kAttrCcMinor, s.device), "compute capability");
  std::string arch = fmt::format("sm_{}{}", major, minor);
  PlanOptions for_device = options;
  for_device.tensor_cores = options.tensor_cores && arch_has_tensor_cores(arch);
  m->plan_ = make_plan(graph, for_device);
  CudaArtifacts artifacts = build_cuda_artifacts(m->plan_, arch, on_compile);
  if (info) *info = {name, arch, artifacts};

  s.check(a.cuDevicePrimaryCtxRetain(&s.context, s.device), "cuDevicePrimaryCtxRetain");
  s.check(a.cuCtxSetCurrent(s.context), "cuCtxSetCurrent");
  std::string cubin;
  {
    std::ifstream in(artifacts.cubin, std::ios::binary);
    cubin.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  s.check(a.cuModuleLoadData(&s.module, cubin.data()), "cuModuleLoadData");
  if (a.cublasCreate(&s.blas) != 0)
    throw Error("CUDA backend: cublasCreate failed", Error::Kind::Unsupported);
  // Host code that links the CUDA runtime stays loaded: its libraries keep handles (cuDNN's,
  // cuBLASLt's) and device memory for the life of the process.
  s.host = ::dlopen(artifacts.host_library.c_str(),
                    RTLD_NOW | RTLD_LOCAL | (artifacts.host_libraries.empty() ? 0 : RTLD_NODELETE));
  if (!s.host)
    throw Error(fmt::format("CUDA backend: cannot load {}: {}", artifacts.host_library.string(),
                            ::dlerror()),
                Error::Kind::Internal);
  s.run = reinterpret_cast<RunHosted>(::dlsym(s.host, "eqfuse_run_hosted"));
  if (!s.run)
    throw Error("CUDA backend: the host library lacks eqfuse_run_hosted", Error::Kind::Internal);

  std::vector<unsigned char> blob = weights_blob(m->plan_);
  s.check(a.cuMemAlloc(&s.weights, blob.size() + 1), "cuMemAlloc (weights)");
  if (!blob.empty()) s.check(a.cuMemcpyHtoD(s.weights, blob.data(), blob.size()), "weights");
  return m;
}

CudaModule::~CudaModule() = default;

std::vector<ir::Tensor> CudaModule::run(const std::vector<ir::Tensor>& inputs) const {
  Session& s = *session_;
  const cuda::CudaApi& a = *s.api;
  s.check(a.cuCtxSetCurrent(s.context), "cuCtxSetCurrent");
  std::vector<int64_t> dims = bind_dims(plan_, inputs);
  std::map<std::string, int64_t> binding;
  for (size_t k = 0; k < plan_.dims.size(); ++k) binding[plan_.dims[k]] = dims[k];
  int64_t arena_bytes = plan_.arena.total.evaluate(binding).value_or(0);

  // Device memory for this run, freed on every path out.
  std::vector<cuda::CUdeviceptr> owned;
  struct Release {
    const cuda::CudaApi& a;
    std::vector<cuda::CUdeviceptr>& list;
    ~Release() {
      for (cuda::CUdeviceptr p : list) a.cuMemFree(p);
    }
  } release{a, owned};
  auto alloc = [&](size_t bytes) {
    cuda::CUdeviceptr p = 0;
    s.check(a.cuMemAlloc(&p, bytes + 1), "cuMemAlloc");
    owned.push_back(p);
    return p;
  };
  std::vector<const void*> in;
  for (const ir::Tensor& t : inputs) {
    cuda::CUdeviceptr p = alloc(t.byte_size());
    if (t.byte_size()) s.check(a.cuMemcpyHtoD(p, t.raw(), t.byte_size()), "copying an input");
    in.push_back(reinterpret_cast<const void*>(p));
  }
  std::vector<ir::Tensor> outputs;
  std::vector<void*> out;
  const ir::Graph& g = plan_.graph;
  for (size_t k = 0; k < g.outputs().size(); ++k) {
    outputs.emplace_back(g.value(g.outputs()[k]).type.dtype, output_dims(plan_, k, dims));
    out.push_back(reinterpret_cast<void*>(alloc(outputs.back().byte_size())));
  }
  void* arena = reinterpret_cast<void*>(alloc(size_t(arena_bytes)));

  EqfHost table{&s, &Session::launch, &Session::gemm, nullptr};
  int rc = 0;
  {
    // One run at a time in this process: host code built against the libraries keeps
    // process-wide state (handles, scratch memory, the convolutions' choices), shared by every
    // module of the same model. The GPU work itself is ordered on the default stream.
    static std::mutex one_run;
    std::lock_guard<std::mutex> lock(one_run);
    s.failure.clear();
    rc = s.run(dims.data(), in.data(), out.data(), reinterpret_cast<const void*>(s.weights), arena,
               &table);
  }
  if (rc != 0)
    throw Error("CUDA backend: the run failed: " +
                    (rc == -2 ? std::string("a buffer is not 16-byte aligned")
                     : !s.failure.empty()
                         ? s.failure
                         : std::string("a library call (cuBLASLt, cuDNN) failed or a check "
                                       "refused its result; see the messages above")),
                Error::Kind::Internal);
  s.check(a.cuCtxSynchronize(), "running the kernels");
  for (size_t k = 0; k < outputs.size(); ++k)
    if (outputs[k].byte_size())
      s.check(a.cuMemcpyDtoH(outputs[k].raw(), reinterpret_cast<cuda::CUdeviceptr>(out[k]),
                             outputs[k].byte_size()),
              "copying an output");
  return outputs;
}

}  // namespace eqfuse::codegen
