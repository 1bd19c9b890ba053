#pragma once
// The CUDA driver API, NVRTC and (optionally) cuBLAS, loaded with dlopen only when calibration
// runs. eqfuse never links them: the library and tool build and run on machines with no CUDA
// toolkit, no driver and no GPU, and only `eqfuse calibrate` asks for one.
//
// Only the handful of entry points the microbenchmarks use are declared, with the driver's
// plain C types, so no CUDA header is needed either.
#include <cstddef>
#include <memory>
#include <string>

namespace eqfuse::cost {

using CUresult = int;
using CUdevice = int;
using CUcontext = void*;
using CUmodule = void*;
using CUfunction = void*;
using CUevent = void*;
using CUstream = void*;
using CUdeviceptr = unsigned long long;
using nvrtcResult = int;
using nvrtcProgram = void*;
using cublasHandle_t = void*;
using cublasStatus_t = int;

struct CudaApi {
  // libcuda.so.1
  CUresult (*cuInit)(unsigned) = nullptr;
  CUresult (*cuDeviceGetCount)(int*) = nullptr;
  CUresult (*cuDeviceGet)(CUdevice*, int) = nullptr;
  CUresult (*cuDeviceGetName)(char*, int, CUdevice) = nullptr;
  CUresult (*cuDeviceGetAttribute)(int*, int, CUdevice) = nullptr;
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice) = nullptr;
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice) = nullptr;
  CUresult (*cuCtxSetCurrent)(CUcontext) = nullptr;
  CUresult (*cuCtxSynchronize)() = nullptr;
  CUresult (*cuMemAlloc)(CUdeviceptr*, size_t) = nullptr;
  CUresult (*cuMemFree)(CUdeviceptr) = nullptr;
  CUresult (*cuMemsetD32)(CUdeviceptr, unsigned, size_t) = nullptr;
  CUresult (*cuModuleLoadData)(CUmodule*, const void*) = nullptr;
  CUresult (*cuModuleUnload)(CUmodule) = nullptr;
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*) = nullptr;
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, CUstream, void**, void**) = nullptr;
  CUresult (*cuEventCreate)(CUevent*, unsigned) = nullptr;
  CUresult (*cuEventDestroy)(CUevent) = nullptr;
  CUresult (*cuEventRecord)(CUevent, CUstream) = nullptr;
  CUresult (*cuEventSynchronize)(CUevent) = nullptr;
  CUresult (*cuEventElapsedTime)(float*, CUevent, CUevent) = nullptr;
  CUresult (*cuGetErrorString)(CUresult, const char**) = nullptr;

  // libnvrtc.so
  nvrtcResult (*nvrtcCreateProgram)(nvrtcProgram*, const char*, const char*, int,
                                    const char* const*, const char* const*) = nullptr;
  nvrtcResult (*nvrtcCompileProgram)(nvrtcProgram, int, const char* const*) = nullptr;
  nvrtcResult (*nvrtcGetPTXSize)(nvrtcProgram, size_t*) = nullptr;
  nvrtcResult (*nvrtcGetPTX)(nvrtcProgram, char*) = nullptr;
  nvrtcResult (*nvrtcGetProgramLogSize)(nvrtcProgram, size_t*) = nullptr;
  nvrtcResult (*nvrtcGetProgramLog)(nvrtcProgram, char*) = nullptr;
  nvrtcResult (*nvrtcDestroyProgram)(nvrtcProgram*) = nullptr;

  // libcublas.so (optional: GEMM calibration is skipped without it)
  cublasStatus_t (*cublasCreate)(cublasHandle_t*) = nullptr;
  cublasStatus_t (*cublasDestroy)(cublasHandle_t) = nullptr;
  cublasStatus_t (*cublasGemmEx)(cublasHandle_t, int, int, int, int, int, const void*, const void*,
                                 int, int, const void*, int, int, const void*, void*, int, int, int,
                                 int) = nullptr;
  bool has_cublas() const { return cublasGemmEx != nullptr; }

  ~CudaApi();
  void* libcuda = nullptr;
  void* libnvrtc = nullptr;
  void* libcublas = nullptr;
};

// Loads the driver and NVRTC and checks that a GPU answers cuInit. nullptr when not, with the
// reason in `why` (no libcuda.so.1, no NVRTC, no device).
std::unique_ptr<CudaApi> load_cuda(std::string* why);

// Throws Error(Unsupported) naming `what` when `result` is not CUDA_SUCCESS.
void check_cuda(const CudaApi& api, CUresult result, const char* what);

}  // namespace eqfuse::cost
