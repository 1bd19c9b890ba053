#include "support/cuda_driver.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdlib>
#include <initializer_list>

#include "support/error.h"

namespace eqfuse::cuda {
namespace {

// The libraries stay mapped once loaded (RTLD_NODELETE): they keep state of their own (NVRTC
// its C++ runtime's pools, the driver its threads) that would otherwise be unmapped while still
// referenced, which the leak checker of the sanitizer build reports.
void* open_first(std::initializer_list<const char*> names) {
  for (const char* name : names) {
    if (void* h = dlopen(name, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE)) return h;
  }
  return nullptr;
}

// Binds `fn` to `symbol` of `lib`; false when the library lacks it.
template <typename Fn>
bool bind(void* lib, Fn& fn, const char* symbol) {
  fn = reinterpret_cast<Fn>(dlsym(lib, symbol));
  return fn != nullptr;
}

}  // namespace

NvrtcApi::~NvrtcApi() {
  if (lib) dlclose(lib);
}

CudaApi::~CudaApi() {
  nvrtc.reset();
  if (libcublas) dlclose(libcublas);
  if (libcuda) dlclose(libcuda);
}

std::unique_ptr<NvrtcApi> load_nvrtc(std::string* why) {
  auto api = std::make_unique<NvrtcApi>();
  std::string home = std::getenv("CUDA_HOME") ? std::getenv("CUDA_HOME") : "";
  std::string in_home = home.empty() ? "" : home + "/lib64/libnvrtc.so";
  api->lib = open_first({"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2",
                         in_home.empty() ? "libnvrtc.so" : in_home.c_str(),
                         "/usr/local/cuda/lib64/libnvrtc.so"});
  if (!api->lib) {
    *why = "libnvrtc.so (NVRTC, from the CUDA toolkit) is not installed";
    return nullptr;
  }
  NvrtcApi& a = *api;
  bool ok = bind(a.lib, a.nvrtcCreateProgram, "nvrtcCreateProgram") &&
            bind(a.lib, a.nvrtcCompileProgram, "nvrtcCompileProgram") &&
            bind(a.lib, a.nvrtcGetPTXSize, "nvrtcGetPTXSize") &&
            bind(a.lib, a.nvrtcGetPTX, "nvrtcGetPTX") &&
            bind(a.lib, a.nvrtcGetCUBINSize, "nvrtcGetCUBINSize") &&
            bind(a.lib, a.nvrtcGetCUBIN, "nvrtcGetCUBIN") &&
            bind(a.lib, a.nvrtcGetProgramLogSize, "nvrtcGetProgramLogSize") &&
            bind(a.lib, a.nvrtcGetProgramLog, "nvrtcGetProgramLog") &&
            bind(a.lib, a.nvrtcDestroyProgram, "nvrtcDestroyProgram") &&
            bind(a.lib, a.nvrtcVersion, "nvrtcVersion");
  if (!ok) {
    *why = "libnvrtc.so lacks an NVRTC entry point (older than CUDA 11.1?)";
    return nullptr;
  }
  return api;
}

std::string nvrtc_compile(const NvrtcApi& nvrtc, const std::string& source, const std::string& name,
                          const std::string& arch, const std::vector<std::string>& options) {
  nvrtcProgram prog = nullptr;
  if (nvrtc.nvrtcCreateProgram(&prog, source.c_str(), name.c_str(), 0, nullptr, nullptr) != 0)
    throw Error("NVRTC: nvrtcCreateProgram failed for " + name, Error::Kind::Unsupported);
  // NVRTC optimizes by default (CUDA 13's refuses -O3).
  std::vector<std::string> all = {"--gpu-architecture=" + arch};
  all.insert(all.end(), options.begin(), options.end());
  std::vector<const char*> argv;
  for (const std::string& o : all) argv.push_back(o.c_str());
  bool compiled = nvrtc.nvrtcCompileProgram(prog, int(argv.size()), argv.data()) == 0;
  if (!compiled) {
    size_t size = 0;
    nvrtc.nvrtcGetProgramLogSize(prog, &size);
    std::string log(size, '\0');
    nvrtc.nvrtcGetProgramLog(prog, log.data());
    nvrtc.nvrtcDestroyProgram(&prog);
    if (log.size() > 4000) log = log.substr(0, 4000) + "\n...";
    throw Error(fmt::format("NVRTC could not compile {} for {}:\n{}", name, arch, log),
                Error::Kind::Unsupported);
  }
  bool cubin = arch.rfind("sm_", 0) == 0;
  size_t size = 0;
  (cubin ? nvrtc.nvrtcGetCUBINSize : nvrtc.nvrtcGetPTXSize)(prog, &size);
  std::string out(size, '\0');
  (cubin ? nvrtc.nvrtcGetCUBIN : nvrtc.nvrtcGetPTX)(prog, out.data());
  nvrtc.nvrtcDestroyProgram(&prog);
  return out;
}

int cuda_data_type(int onnx_code) {
  switch (onnx_code) {
    case 1:
      return 0;  // CUDA_R_32F
    case 10:
      return 2;  // CUDA_R_16F
    case 16:
      return 14;  // CUDA_R_16BF
    default:
      return -1;
  }
}

std::unique_ptr<CudaApi> load_cuda(std::string* why) {
  auto api = std::make_unique<CudaApi>();
  api->libcuda = open_first({"libcuda.so.1", "libcuda.so"});
  if (!api->libcuda) {
    *why = "libcuda.so.1 (the CUDA driver) is not installed";
    return nullptr;
  }
  CudaApi& a = *api;
  bool ok = bind(a.libcuda, a.cuInit, "cuInit") &&
            bind(a.libcuda, a.cuDeviceGetCount, "cuDeviceGetCount") &&
            bind(a.libcuda, a.cuDeviceGet, "cuDeviceGet") &&
            bind(a.libcuda, a.cuDeviceGetName, "cuDeviceGetName") &&
            bind(a.libcuda, a.cuDeviceGetAttribute, "cuDeviceGetAttribute") &&
            bind(a.libcuda, a.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain") &&
            bind(a.libcuda, a.cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2") &&
            bind(a.libcuda, a.cuCtxSetCurrent, "cuCtxSetCurrent") &&
            bind(a.libcuda, a.cuCtxSynchronize, "cuCtxSynchronize") &&
            bind(a.libcuda, a.cuMemAlloc, "cuMemAlloc_v2") &&
            bind(a.libcuda, a.cuMemFree, "cuMemFree_v2") &&
            bind(a.libcuda, a.cuMemsetD32, "cuMemsetD32_v2") &&
            bind(a.libcuda, a.cuMemcpyHtoD, "cuMemcpyHtoD_v2") &&
            bind(a.libcuda, a.cuMemcpyDtoH, "cuMemcpyDtoH_v2") &&
            bind(a.libcuda, a.cuModuleLoadData, "cuModuleLoadData") &&
            bind(a.libcuda, a.cuModuleUnload, "cuModuleUnload") &&
            bind(a.libcuda, a.cuModuleGetFunction, "cuModuleGetFunction") &&
            bind(a.libcuda, a.cuLaunchKernel, "cuLaunchKernel") &&
            bind(a.libcuda, a.cuEventCreate, "cuEventCreate") &&
            bind(a.libcuda, a.cuEventDestroy, "cuEventDestroy_v2") &&
            bind(a.libcuda, a.cuEventRecord, "cuEventRecord") &&
            bind(a.libcuda, a.cuEventSynchronize, "cuEventSynchronize") &&
            bind(a.libcuda, a.cuEventElapsedTime, "cuEventElapsedTime") &&
            bind(a.libcuda, a.cuGetErrorString, "cuGetErrorString");
  if (!ok) {
    *why = "libcuda.so.1 lacks a driver API entry point (driver too old?)";
    return nullptr;
  }
  int count = 0;
  if (a.cuInit(0) != 0 || a.cuDeviceGetCount(&count) != 0 || count == 0) {
    *why = "the CUDA driver found no GPU";
    return nullptr;
  }
  a.nvrtc = load_nvrtc(why);
  if (!a.nvrtc) return nullptr;
  a.libcublas = open_first({"libcublas.so", "libcublas.so.13", "libcublas.so.12", "libcublas.so.11",
                            "/usr/local/cuda/lib64/libcublas.so"});
  if (a.libcublas) {
    bool blas = bind(a.libcublas, a.cublasCreate, "cublasCreate_v2") &&
                bind(a.libcublas, a.cublasDestroy, "cublasDestroy_v2") &&
                bind(a.libcublas, a.cublasGemmEx, "cublasGemmEx") &&
                bind(a.libcublas, a.cublasSetStream, "cublasSetStream_v2") &&
                bind(a.libcublas, a.cublasGemmStridedBatchedEx, "cublasGemmStridedBatchedEx");
    if (!blas) a.cublasGemmEx = nullptr;
  }
  return api;
}

void check_cuda(const CudaApi& api, CUresult result, const char* what) {
  if (result == 0) return;
  const char* text = "unknown error";
  if (api.cuGetErrorString) api.cuGetErrorString(result, &text);
  throw Error(fmt::format("CUDA: {} failed: {} ({})", what, text, result),
              Error::Kind::Unsupported);
}

}  // namespace eqfuse::cuda
