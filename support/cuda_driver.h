#pragma once
// The CUDA driver API, NVRTC and (optionally) cuBLAS, loaded with dlopen only when asked for:
// by `eqfuse calibrate` (cost/calibration.h) and by the CUDA backend (codegen/cuda_backend.h).
// eqfuse never links them: the library and tool build and run on machines with no CUDA
// toolkit, no driver and no GPU. NVRTC loads on its own (load_nvrtc), since compiling needs no
// GPU.
//
// Only the entry points eqfuse uses are declared, with the driver's plain C types, so no CUDA
// header is needed either.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace eqfuse::cuda {

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

// libnvrtc.so: the runtime compiler.
struct NvrtcApi {
  nvrtcResult (*nvrtcCreateProgram)(nvrtcProgram*, const char*, const char*, int,
                                    const char* const*, const char* const*) = nullptr;
  nvrtcResult (*nvrtcCompileProgram)(nvrtcProgram, int, const char* const*) = nullptr;
  nvrtcResult (*nvrtcGetPTXSize)(nvrtcProgram, size_t*) = nullptr;
  nvrtcResult (*nvrtcGetPTX)(nvrtcProgram, char*) = nullptr;
  nvrtcResult (*nvrtcGetCUBINSize)(nvrtcProgram, size_t*) = nullptr;
  nvrtcResult (*nvrtcGetCUBIN)(nvrtcProgram, char*) = nullptr;
  nvrtcResult (*nvrtcGetProgramLogSize)(nvrtcProgram, size_t*) = nullptr;
  nvrtcResult (*nvrtcGetProgramLog)(nvrtcProgram, char*) = nullptr;
  nvrtcResult (*nvrtcDestroyProgram)(nvrtcProgram*) = nullptr;
  nvrtcResult (*nvrtcVersion)(int*, int*) = nullptr;
  ~NvrtcApi();
  void* lib = nullptr;
};

// Loads NVRTC (no GPU needed): nullptr with the reason in `why` when it is not installed. Looks
// in the loader's path, then in $CUDA_HOME/lib64 and /usr/local/cuda/lib64.
std::unique_ptr<NvrtcApi> load_nvrtc(std::string* why);

// Compiles CUDA C++ `source` (named `name` in messages) with NVRTC: a cubin for an `arch` of
// the form "sm_90a", PTX for "compute_90a". Throws Error (Unsupported) quoting NVRTC's log.
std::string nvrtc_compile(const NvrtcApi& nvrtc, const std::string& source, const std::string& name,
                          const std::string& arch, const std::vector<std::string>& options = {});

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
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void*, size_t) = nullptr;
  CUresult (*cuMemcpyDtoH)(void*, CUdeviceptr, size_t) = nullptr;
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

  // libcublas.so (optional: GEMM calibration is skipped without it)
  cublasStatus_t (*cublasCreate)(cublasHandle_t*) = nullptr;
  cublasStatus_t (*cublasDestroy)(cublasHandle_t) = nullptr;
  cublasStatus_t (*cublasGemmEx)(cublasHandle_t, int, int, int, int, int, const void*, const void*,
                                 int, int, const void*, int, int, const void*, void*, int, int, int,
                                 int) = nullptr;
  cublasStatus_t (*cublasSetStream)(cublasHandle_t, CUstream) = nullptr;
  cublasStatus_t (*cublasGemmStridedBatchedEx)(cublasHandle_t, int, int, int, int, int, const void*,
                                               const void*, int, int, long long, const void*, int,
                                               int, long long, const void*, void*, int, int,
                                               long long, int, int, int) = nullptr;
  bool has_cublas() const { return cublasGemmEx != nullptr; }

  std::unique_ptr<NvrtcApi> nvrtc;

  ~CudaApi();
  void* libcuda = nullptr;
  void* libcublas = nullptr;
};

// Loads the driver and NVRTC and checks that a GPU answers cuInit. nullptr when not, with the
// reason in `why` (no libcuda.so.1, no NVRTC, no device).
std::unique_ptr<CudaApi> load_cuda(std::string* why);

// Throws Error(Unsupported) naming `what` when `result` is not CUDA_SUCCESS.
void check_cuda(const CudaApi& api, CUresult result, const char* what);

// CUdevice_attribute values eqfuse reads.
inline constexpr int kAttrSmCount = 16;  // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
inline constexpr int kAttrCcMajor = 75;  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
inline constexpr int kAttrCcMinor = 76;  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR

// cudaDataType of an ONNX element type code (1 f32, 10 f16, 16 bf16); -1 for others.
int cuda_data_type(int onnx_code);
inline constexpr int kCublasCompute32F = 68;   // CUBLAS_COMPUTE_32F
inline constexpr int kCublasGemmDefault = -1;  // CUBLAS_GEMM_DEFAULT

}  // namespace eqfuse::cuda
