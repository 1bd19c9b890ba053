#include "cost/calibration.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "cost/cost_model.h"
#include "cost/cuda_driver.h"
#include "cost/wave_quantization.h"
#include "support/error.h"

namespace eqfuse::cost {
namespace {

constexpr const char* kKernelSource = R"(
extern "C" __global__ void eq_empty() {}

extern "C" __global__ void eq_copy(const float4* __restrict__ in, float4* __restrict__ out,
                                   unsigned long long n) {
  unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += stride)
    out[i] = in[i];
}

extern "C" __global__ void eq_axpb(const float* __restrict__ x, float* __restrict__ y,
                                   unsigned long long n, float a, float b) {
  unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += stride)
    y[i] = a * x[i] + b;
}

extern "C" __global__ void eq_fma256(const float* __restrict__ x, float* __restrict__ y,
                                     unsigned long long n) {
  unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += stride) {
    float v = x[i], acc = v;
#pragma unroll
    for (int k = 0; k < 256; ++k) acc = fmaf(acc, 0.999f, v);
    y[i] = acc;
  }
}
)";
constexpr int kFmaPerElement = 256;

constexpr int kAttrSmCount = 16;  // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
constexpr int kAttrCcMajor = 75;  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
constexpr int kAttrCcMinor = 76;
constexpr int kCudaR16F = 2;      // cudaDataType CUDA_R_16F
constexpr int kCudaR32F = 0;      // CUDA_R_32F
constexpr int kComputeF32 = 68;   // CUBLAS_COMPUTE_32F
constexpr int kGemmDefault = -1;  // CUBLAS_GEMM_DEFAULT

// GPU 0's primary context, the benchmark kernels compiled for it, and timing with events.
class Session {
 public:
  explicit Session(CudaApi& api) : api_(api) {
    check_cuda(api_, api_.cuDeviceGet(&device_, 0), "cuDeviceGet");
    char name[256] = {};
    check_cuda(api_, api_.cuDeviceGetName(name, sizeof name, device_), "cuDeviceGetName");
    name_ = name;
    check_cuda(api_, api_.cuDeviceGetAttribute(&sm_count_, kAttrSmCount, device_), "SM count");
    int major = 0, minor = 0;
    check_cuda(api_, api_.cuDeviceGetAttribute(&major, kAttrCcMajor, device_), "capability");
    check_cuda(api_, api_.cuDeviceGetAttribute(&minor, kAttrCcMinor, device_), "capability");
    check_cuda(api_, api_.cuDevicePrimaryCtxRetain(&context_, device_), "cuDevicePrimaryCtxRetain");
    check_cuda(api_, api_.cuCtxSetCurrent(context_), "cuCtxSetCurrent");
    std::string ptx = compile(fmt::format("--gpu-architecture=compute_{}{}", major, minor));
    check_cuda(api_, api_.cuModuleLoadData(&module_, ptx.c_str()), "cuModuleLoadData");
    check_cuda(api_, api_.cuEventCreate(&start_, 0), "cuEventCreate");
    check_cuda(api_, api_.cuEventCreate(&stop_, 0), "cuEventCreate");
  }
  ~Session() {
    for (CUdeviceptr p : buffers_) api_.cuMemFree(p);
    if (start_) api_.cuEventDestroy(start_);
    if (stop_) api_.cuEventDestroy(stop_);
    if (module_) api_.cuModuleUnload(module_);
    if (context_) api_.cuDevicePrimaryCtxRelease(device_);
  }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  const std::string& gpu_name() const { return name_; }
  int sm_count() const { return sm_count_; }

  CUfunction function(const char* name) {
    CUfunction f = nullptr;
    check_cuda(api_, api_.cuModuleGetFunction(&f, module_, name), name);
    return f;
  }
  CUdeviceptr alloc(size_t bytes) {
    CUdeviceptr p = 0;
    check_cuda(api_, api_.cuMemAlloc(&p, bytes), "cuMemAlloc");
    buffers_.push_back(p);
    check_cuda(api_, api_.cuMemsetD32(p, 0x3f800000u, bytes / 4), "cuMemsetD32");  // 1.0f
    return p;
  }
  void launch(CUfunction f, unsigned grid, unsigned block, std::vector<void*> args) {
    check_cuda(api_,
               api_.cuLaunchKernel(f, grid, 1, 1, block, 1, 1, 0, nullptr, args.data(), nullptr),
               "cuLaunchKernel");
  }
  // Mean milliseconds of one run of `work`, after two warm-up runs.
  double time_ms(const std::function<void()>& work, int reps) {
    work();
    work();
    check_cuda(api_, api_.cuCtxSynchronize(), "cuCtxSynchronize");
    check_cuda(api_, api_.cuEventRecord(start_, nullptr), "cuEventRecord");
    for (int i = 0; i < reps; ++i) work();
    check_cuda(api_, api_.cuEventRecord(stop_, nullptr), "cuEventRecord");
    check_cuda(api_, api_.cuEventSynchronize(stop_), "cuEventSynchronize");
    float ms = 0;
    check_cuda(api_, api_.cuEventElapsedTime(&ms, start_, stop_), "cuEventElapsedTime");
    return static_cast<double>(ms) / reps;
  }
  unsigned grid_for(unsigned long long n, unsigned block) const {
    unsigned long long blocks = (n + block - 1) / block;
    return static_cast<unsigned>(std::min<unsigned long long>(blocks, 32ull * sm_count_));
  }

 private:
  std::string compile(const std::string& arch) {
    nvrtcProgram prog = nullptr;
    if (api_.nvrtcCreateProgram(&prog, kKernelSource, "eqfuse_calibrate.cu", 0, nullptr, nullptr) !=
        0)
      throw Error("calibration: nvrtcCreateProgram failed", Error::Kind::Unsupported);
    const char* options[] = {arch.c_str(), "-O3"};
    nvrtcResult compiled = api_.nvrtcCompileProgram(prog, 2, options);
    if (compiled != 0) {
      size_t size = 0;
      api_.nvrtcGetProgramLogSize(prog, &size);
      std::string log(size, '\0');
      api_.nvrtcGetProgramLog(prog, log.data());
      api_.nvrtcDestroyProgram(&prog);
      throw Error("calibration: NVRTC could not compile the benchmark kernels:\n" + log,
                  Error::Kind::Unsupported);
    }
    size_t size = 0;
    api_.nvrtcGetPTXSize(prog, &size);
    std::string ptx(size, '\0');
    api_.nvrtcGetPTX(prog, ptx.data());
    api_.nvrtcDestroyProgram(&prog);
    return ptx;
  }

  CudaApi& api_;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  CUmodule module_ = nullptr;
  CUevent start_ = nullptr;
  CUevent stop_ = nullptr;
  std::string name_;
  int sm_count_ = 0;
  std::vector<CUdeviceptr> buffers_;
};

// A measurement and what the model needs to predict it.
struct Sample {
  std::string name;
  double measured_ms;
  double flops;
  double bytes;
  ir::FusionClass fusion;
  ir::DType dtype;
  double wave;
};

double fraction(double achieved, double peak) {
  return std::clamp(achieved / peak, 0.01, 1.0);
}

}  // namespace

double CalibrationResult::mean_abs_relative_error() const {
  if (measurements.empty()) return 0;
  double sum = 0;
  for (const auto& m : measurements)
    sum += std::abs(m.predicted_ms - m.measured_ms) / m.measured_ms;
  return sum / static_cast<double>(measurements.size());
}

std::optional<std::string> calibration_unavailable() {
  std::string why;
  if (load_cuda(&why)) return std::nullopt;
  return why;
}

std::optional<std::string> builtin_for_gpu(const std::string& gpu_name) {
  if (gpu_name.find("H200") != std::string::npos) return "h200";
  if (gpu_name.find("H100") != std::string::npos) return "h100";
  if (gpu_name.find("A100") != std::string::npos) return "a100";
  if (gpu_name.find("A6000") != std::string::npos) return "a6000";
  return std::nullopt;
}

nlohmann::json calibration_to_json(const CalibrationResult& result) {
  nlohmann::json j = result.profile.to_json();
  nlohmann::json measurements = nlohmann::json::array();
  for (const auto& m : result.measurements)
    measurements.push_back(
        {{"name", m.name}, {"measured_ms", m.measured_ms}, {"predicted_ms", m.predicted_ms}});
  j["calibration"] = {{"gpu", result.gpu_name},
                      {"measurements", measurements},
                      {"mean_abs_relative_error", result.mean_abs_relative_error()},
                      {"notes", result.notes}};
  return j;
}

CalibrationResult calibrate(const DeviceProfile* base_or_null) {
  std::string why;
  std::unique_ptr<CudaApi> api = load_cuda(&why);
  if (!api) throw Error("no CUDA driver/GPU found: calibration needs a GPU (" + why + ")");
  Session s(*api);
  DeviceProfile base;
  if (base_or_null) {
    base = *base_or_null;
  } else if (auto name = builtin_for_gpu(s.gpu_name())) {
    base = DeviceProfile::load_builtin(*name);
  } else {
    throw Error("calibration: no builtin profile for '" + s.gpu_name() +
                "'; give one to start from with --device");
  }
  CalibrationResult result;
  result.profile = base;
  result.gpu_name = s.gpu_name();
  DeviceProfile& p = result.profile;
  if (s.sm_count() != p.sm_count) {
    result.notes.push_back(fmt::format("SM count {} from the driver replaces the base's {}",
                                       s.sm_count(), p.sm_count));
    p.sm_count = s.sm_count();
  }
  std::vector<Sample> samples;

  // Launch overhead: back-to-back empty kernels.
  CUfunction empty = s.function("eq_empty");
  double launch_ms = s.time_ms([&] { s.launch(empty, 1, 32, {}); }, 2000);
  p.launch_overhead = launch_ms * 1e-3;
  samples.push_back(
      {"empty kernel", launch_ms, 0, 0, ir::FusionClass::Elementwise, ir::DType::f32, 1.0});

  // Copy bandwidth: 512 MiB in, 512 MiB out.
  unsigned long long n4 = (512ull << 20) / 16;
  CUdeviceptr in = s.alloc(n4 * 16), out = s.alloc(n4 * 16);
  CUfunction copy = s.function("eq_copy");
  double copy_ms = s.time_ms(
      [&] {
        s.launch(copy, s.grid_for(n4, 256), 256, {&in, &out, &n4});
      },
      20);
  double copy_bytes = 2.0 * n4 * 16;
  p.efficiency.bandwidth =
      fraction(copy_bytes / ((copy_ms * 1e-3) - p.launch_overhead), p.memory_bandwidth);
  samples.push_back(
      {"copy 2x512 MiB", copy_ms, 0, copy_bytes, ir::FusionClass::Layout, ir::DType::f32, 1.0});

  // Elementwise y = a*x + b over a grid of sizes (reuses the copy buffers).
  CUfunction axpb = s.function("eq_axpb");
  float a = 1.5f, b = 0.5f;
  for (unsigned long long n : {1ull << 20, 1ull << 24, 1ull << 27}) {
    double ms = s.time_ms(
        [&] {
          s.launch(axpb, s.grid_for(n, 256), 256, {&in, &out, &n, &a, &b});
        },
        20);
    samples.push_back({fmt::format("axpb {}M floats", n >> 20), ms, 2.0 * n, 8.0 * n,
                       ir::FusionClass::Elementwise, ir::DType::f32, 1.0});
  }

  // Elementwise arithmetic rate: 256 FMAs per element, compute-bound.
  CUfunction fma = s.function("eq_fma256");
  unsigned long long nf = 1ull << 24;
  double fma_ms = s.time_ms([&] { s.launch(fma, s.grid_for(nf, 256), 256, {&in, &out, &nf}); }, 10);
  double fma_flops = 2.0 * kFmaPerElement * nf;
  p.efficiency.elementwise = fraction(fma_flops / ((fma_ms * 1e-3) - p.launch_overhead), p.fp32);
  samples.push_back({"fma256 16M floats", fma_ms, fma_flops, 8.0 * nf, ir::FusionClass::Elementwise,
                     ir::DType::f32, 1.0});

  // GEMM through cuBLAS: f16 on tensor cores fits the contraction factor; f32 is reported.
  if (api->has_cublas()) {
    cublasHandle_t handle = nullptr;
    if (api->cublasCreate(&handle) != 0)
      throw Error("calibration: cublasCreate failed", Error::Kind::Unsupported);
    for (int n : {2048, 4096, 8192}) {
      for (ir::DType dtype : {ir::DType::f16, ir::DType::f32}) {
        size_t elem = dtype == ir::DType::f16 ? 2 : 4;
        size_t bytes = static_cast<size_t>(n) * n * elem;
        CUdeviceptr A = s.alloc(bytes), B = s.alloc(bytes), C = s.alloc(bytes);
        int type = dtype == ir::DType::f16 ? kCudaR16F : kCudaR32F;
        float alpha = 1, beta = 0;
        cublasStatus_t status = 0;
        double ms = s.time_ms(
            [&] {
              status |=
                  api->cublasGemmEx(handle, 0, 0, n, n, n, &alpha, reinterpret_cast<void*>(A), type,
                                    n, reinterpret_cast<void*>(B), type, n, &beta,
                                    reinterpret_cast<void*>(C), type, n, kComputeF32, kGemmDefault);
            },
            5);
        if (status != 0) throw Error("calibration: cublasGemmEx failed", Error::Kind::Unsupported);
        int64_t tiles = int64_t{(n + p.gemm_tile_m - 1) / p.gemm_tile_m} *
                        ((n + p.gemm_tile_n - 1) / p.gemm_tile_n);
        samples.push_back({fmt::format("gemm {} {}^3", ir::dtype_name(dtype), n), ms,
                           2.0 * n * n * n, 3.0 * bytes, ir::FusionClass::Contraction, dtype,
                           wave_efficiency(tiles, p.sm_count)});
      }
    }
    api->cublasDestroy(handle);
    const Sample& big = samples[samples.size() - 2];  // f16 8192^3
    p.efficiency.contraction = fraction(big.flops / ((big.measured_ms * 1e-3) - p.launch_overhead),
                                        p.fp16_tensor * big.wave);
  } else {
    result.notes.push_back("cuBLAS not found: efficiency.contraction kept from the base profile");
  }
  result.notes.push_back(
      "efficiency.reduction kept from the base profile (reductions are "
      "memory-bound; the bandwidth fit covers them)");

  p.description = base.description + " (calibrated on " + result.gpu_name + ")";
  p.sources.push_back("eqfuse calibrate on " + result.gpu_name +
                      ": launch overhead, bandwidth, elementwise and GEMM efficiency fitted");
  CostModel model(p);
  for (const Sample& smp : samples) {
    NodeCost c = model.kernel_cost(smp.flops, smp.bytes, model.peak_for(smp.fusion, smp.dtype),
                                   model.efficiency_for(smp.fusion), smp.wave);
    result.measurements.push_back({smp.name, smp.measured_ms, c.ms()});
  }
  return result;
}

}  // namespace eqfuse::cost
