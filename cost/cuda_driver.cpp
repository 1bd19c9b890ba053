#include "cost/cuda_driver.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <initializer_list>

#include "support/error.h"

namespace eqfuse::cost {
namespace {

void* open_first(std::initializer_list<const char*> names) {
  for (const char* name : names) {
    if (void* h = dlopen(name, RTLD_NOW | RTLD_LOCAL)) return h;
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

CudaApi::~CudaApi() {
  if (libcublas) dlclose(libcublas);
  if (libnvrtc) dlclose(libnvrtc);
  if (libcuda) dlclose(libcuda);
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
  a.libnvrtc = open_first({"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2"});
  if (!a.libnvrtc) {
    *why = "libnvrtc.so (NVRTC, from the CUDA toolkit) is not installed";
    return nullptr;
  }
  ok = bind(a.libnvrtc, a.nvrtcCreateProgram, "nvrtcCreateProgram") &&
       bind(a.libnvrtc, a.nvrtcCompileProgram, "nvrtcCompileProgram") &&
       bind(a.libnvrtc, a.nvrtcGetPTXSize, "nvrtcGetPTXSize") &&
       bind(a.libnvrtc, a.nvrtcGetPTX, "nvrtcGetPTX") &&
       bind(a.libnvrtc, a.nvrtcGetProgramLogSize, "nvrtcGetProgramLogSize") &&
       bind(a.libnvrtc, a.nvrtcGetProgramLog, "nvrtcGetProgramLog") &&
       bind(a.libnvrtc, a.nvrtcDestroyProgram, "nvrtcDestroyProgram");
  if (!ok) {
    *why = "libnvrtc.so lacks an NVRTC entry point";
    return nullptr;
  }
  a.libcublas =
      open_first({"libcublas.so", "libcublas.so.13", "libcublas.so.12", "libcublas.so.11"});
  if (a.libcublas) {
    bool blas = bind(a.libcublas, a.cublasCreate, "cublasCreate_v2") &&
                bind(a.libcublas, a.cublasDestroy, "cublasDestroy_v2") &&
                bind(a.libcublas, a.cublasGemmEx, "cublasGemmEx");
    if (!blas) a.cublasGemmEx = nullptr;
  }
  return api;
}

void check_cuda(const CudaApi& api, CUresult result, const char* what) {
  if (result == 0) return;
  const char* text = "unknown error";
  if (api.cuGetErrorString) api.cuGetErrorString(result, &text);
  throw Error(fmt::format("calibration: {} failed: {} ({})", what, text, result),
              Error::Kind::Unsupported);
}

}  // namespace eqfuse::cost
