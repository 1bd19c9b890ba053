#include "cost/calibration.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "cost/cost_model.h"
#include "cost/wave_quantization.h"
#include "support/cuda_driver.h"
#include "support/error.h"

namespace eqfuse::cost {
namespace {

using cuda::check_cuda;
using cuda::cublasHandle_t;
using cuda::cublasStatus_t;
using cuda::CUcontext;
using cuda::CudaApi;
using cuda::CUdevice;
using cuda::CUdeviceptr;
using cuda::CUevent;
using cuda::CUfunction;
using cuda::CUmodule;

constexpr const char* kKernelSource = R"(
extern "C" __global__ void eq_empty() {}

// Pseudo-random GEMM operands in [-1, 1] (tensor cores run measurably faster on zeros or
// constants). kind 0: f32 words; 1: two f16 per word; 2: two bf16 per word. Built from bits so
// the kernel needs no half-precision headers.
__device__ unsigned eq_hash(unsigned long long i) {
  unsigned long long x = i * 0x9E3779B97F4A7C15ull;
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  return (unsigned)x;
}
__device__ unsigned short eq_f16_bits(unsigned h) {
  // sign, exponent 13..14 (0.25 .. 1), random mantissa
  return (unsigned short)(((h >> 31) << 15) | ((13u + ((h >> 12) & 1u)) << 10) | (h & 0x3ffu));
}
extern "C" __global__ void eq_fill(unsigned* __restrict__ out, unsigned long long n, int kind) {
  unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += stride) {
    unsigned h = eq_hash(i), g = eq_hash(i + n);
    float f = (float)(int)h * (1.0f / 2147483648.0f);
    float e = (float)(int)g * (1.0f / 2147483648.0f);
    if (kind == 0) out[i] = __float_as_uint(f);
    else if (kind == 1) out[i] = (unsigned)eq_f16_bits(h) | ((unsigned)eq_f16_bits(g) << 16);
    else out[i] = (__float_as_uint(f) >> 16) | (__float_as_uint(e) & 0xffff0000u);
  }
}

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

// The same with four elements per thread and 16-byte accesses, as generated kernels do it.
extern "C" __global__ void eq_axpb4(const float4* __restrict__ x, float4* __restrict__ y,
                                    unsigned long long n4, float a, float b) {
  unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n4;
       i += stride) {
    float4 v = x[i];
    y[i] = make_float4(a * v.x + b, a * v.y + b, a * v.z + b, a * v.w + b);
  }
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

// GPU 0's primary context, the benchmark kernels compiled for it, and timing with events.
class Session {
 public:
  explicit Session(CudaApi& api) : api_(api) {
    check_cuda(api_, api_.cuDeviceGet(&device_, 0), "cuDeviceGet");
    char name[256] = {};
    check_cuda(api_, api_.cuDeviceGetName(name, sizeof name, device_), "cuDeviceGetName");
    name_ = name;
    check_cuda(api_, api_.cuDeviceGetAttribute(&sm_count_, cuda::kAttrSmCount, device_),
               "SM count");
    int major = 0, minor = 0;
    check_cuda(api_, api_.cuDeviceGetAttribute(&major, cuda::kAttrCcMajor, device_), "capability");
    check_cuda(api_, api_.cuDeviceGetAttribute(&minor, cuda::kAttrCcMinor, device_), "capability");
    check_cuda(api_, api_.cuDevicePrimaryCtxRetain(&context_, device_), "cuDevicePrimaryCtxRetain");
    check_cuda(api_, api_.cuCtxSetCurrent(context_), "cuCtxSetCurrent");
    std::string ptx = cuda::nvrtc_compile(*api_.nvrtc, kKernelSource, "eqfuse_calibrate.cu",
                                          fmt::format("compute_{}{}", major, minor));
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
  // Frees the `count` buffers allocated last.
  void release_last(size_t count) {
    for (; count > 0 && !buffers_.empty(); --count) {
      api_.cuMemFree(buffers_.back());
      buffers_.pop_back();
    }
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

// The roofline's prediction for a sample under profile `p`.
double predict_ms(const DeviceProfile& p, const Sample& smp) {
  CostModel model(p);
  return model
      .kernel_cost(smp.flops, smp.bytes, model.peak_for(smp.fusion, smp.dtype),
                   model.efficiency_for(smp.fusion), smp.wave)
      .ms();
}

// The factor in [0.01, 1] that minimizes the mean |relative error| of the predictions for
// `samples` when `set` stores it in the profile. A grid search: the error is a sum of
// piecewise-smooth terms of one variable, cheap to evaluate, and a grid cannot get stuck in a
// local minimum the way a descent can.
double fit_factor(const DeviceProfile& base, const std::vector<Sample>& samples,
                  const std::function<void(DeviceProfile&, double)>& set) {
  DeviceProfile q = base;
  double best = 1, best_error = std::numeric_limits<double>::infinity();
  for (int step = 10; step <= 1000; ++step) {
    double f = step / 1000.0;
    set(q, f);
    double error = 0;
    for (const Sample& smp : samples)
      error += std::abs(predict_ms(q, smp) - smp.measured_ms) / smp.measured_ms;
    if (error < best_error) best = f, best_error = error;
  }
  return best;
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
  if (cuda::load_cuda(&why)) return std::nullopt;
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
  std::unique_ptr<CudaApi> api = cuda::load_cuda(&why);
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
  samples.push_back(
      {"copy 2x512 MiB", copy_ms, 0, copy_bytes, ir::FusionClass::Layout, ir::DType::f32, 1.0});
  std::vector<Sample> hbm = {samples.back()};  // what the bandwidth factor is fitted to

  // Elementwise y = a*x + b over a grid of sizes (reuses the copy buffers), vectorized as
  // generated kernels are, and once scalar to show what skipping vectorization costs. Working
  // sets that fit in L2 run faster than HBM allows: they are reported but not fitted, since the
  // roofline models HBM traffic only.
  CUfunction axpb4 = s.function("eq_axpb4"), axpb = s.function("eq_axpb");
  float a = 1.5f, b = 0.5f;
  for (unsigned long long n : {1ull << 20, 1ull << 24, 1ull << 27}) {
    unsigned long long quads = n / 4;
    double ms = s.time_ms(
        [&] {
          s.launch(axpb4, s.grid_for(quads, 256), 256, {&in, &out, &quads, &a, &b});
        },
        20);
    bool in_l2 = 8.0 * n <= p.l2_bytes;
    samples.push_back({fmt::format("axpb {}M floats{}", n >> 20, in_l2 ? " (L2)" : ""), ms, 2.0 * n,
                       8.0 * n, ir::FusionClass::Elementwise, ir::DType::f32, 1.0});
    if (!in_l2) hbm.push_back(samples.back());
  }
  unsigned long long n_scalar = 1ull << 27;
  double scalar_ms = s.time_ms(
      [&] {
        s.launch(axpb, s.grid_for(n_scalar, 256), 256, {&in, &out, &n_scalar, &a, &b});
      },
      20);
  samples.push_back({"axpb 128M floats scalar", scalar_ms, 2.0 * n_scalar, 8.0 * n_scalar,
                     ir::FusionClass::Elementwise, ir::DType::f32, 1.0});
  p.efficiency.bandwidth =
      fit_factor(p, hbm, [](DeviceProfile& q, double f) { q.efficiency.bandwidth = f; });
  result.notes.push_back(
      "efficiency.bandwidth fitted to the copy and the vectorized elementwise kernels whose data "
      "exceeds L2; L2-resident and scalar kernels are reported, not fitted");

  // Elementwise arithmetic rate: 256 FMAs per element, compute-bound.
  CUfunction fma = s.function("eq_fma256");
  unsigned long long nf = 1ull << 24;
  double fma_ms = s.time_ms([&] { s.launch(fma, s.grid_for(nf, 256), 256, {&in, &out, &nf}); }, 10);
  double fma_flops = 2.0 * kFmaPerElement * nf;
  p.efficiency.elementwise = fraction(fma_flops / ((fma_ms * 1e-3) - p.launch_overhead), p.fp32);
  samples.push_back({"fma256 16M floats", fma_ms, fma_flops, 8.0 * nf, ir::FusionClass::Elementwise,
                     ir::DType::f32, 1.0});

  // GEMM through cuBLAS over a grid of shapes (square, skinny, partial last waves) in f16, bf16
  // and f32; one contraction factor is fitted to all of them (see fit_factor).
  if (api->has_cublas()) {
    cublasHandle_t handle = nullptr;
    if (api->cublasCreate(&handle) != 0)
      throw Error("calibration: cublasCreate failed", Error::Kind::Unsupported);
    struct GemmShape {
      int m, n, k;
    };
    const GemmShape shapes[] = {{2048, 2048, 2048}, {4096, 4096, 4096}, {8192, 8192, 8192},
                                {1024, 4096, 4096}, {8192, 1024, 8192}, {2304, 2304, 4096}};
    CUfunction fill = s.function("eq_fill");
    size_t first_gemm = samples.size();
    for (const GemmShape& g : shapes) {
      for (ir::DType dtype : {ir::DType::f16, ir::DType::bf16, ir::DType::f32}) {
        size_t elem = dtype == ir::DType::f32 ? 4 : 2;
        size_t a_bytes = size_t{1} * g.m * g.k * elem, b_bytes = size_t{1} * g.k * g.n * elem,
               c_bytes = size_t{1} * g.m * g.n * elem;
        CUdeviceptr A = s.alloc(a_bytes), B = s.alloc(b_bytes), C = s.alloc(c_bytes);
        int kind = dtype == ir::DType::f32 ? 0 : dtype == ir::DType::f16 ? 1 : 2;
        for (auto [buffer, bytes] : {std::pair{A, a_bytes}, std::pair{B, b_bytes}}) {
          unsigned long long words = bytes / 4;
          s.launch(fill, s.grid_for(words, 256), 256, {&buffer, &words, &kind});
        }
        int type = cuda::cuda_data_type(ir::onnx_dtype_code(dtype));
        float alpha = 1, beta = 0;
        cublasStatus_t status = 0;
        // Column-major C(m x n) = A(m x k) B(k x n).
        double ms = s.time_ms(
            [&] {
              status |= api->cublasGemmEx(
                  handle, 0, 0, g.m, g.n, g.k, &alpha, reinterpret_cast<void*>(A), type, g.m,
                  reinterpret_cast<void*>(B), type, g.k, &beta, reinterpret_cast<void*>(C), type,
                  g.m, cuda::kCublasCompute32F, cuda::kCublasGemmDefault);
            },
            5);
        if (status != 0) throw Error("calibration: cublasGemmEx failed", Error::Kind::Unsupported);
        s.release_last(3);
        samples.push_back(
            {fmt::format("gemm {} {}x{}x{}", ir::dtype_name(dtype), g.m, g.n, g.k), ms,
             2.0 * g.m * g.n * g.k, static_cast<double>(a_bytes + b_bytes + c_bytes),
             ir::FusionClass::Contraction, dtype,
             wave_efficiency(gemm_tiles(1, g.m, g.n, p.gemm_tile_m, p.gemm_tile_n), p.sm_count)});
      }
    }
    api->cublasDestroy(handle);
    std::vector<Sample> gemms(samples.begin() + static_cast<std::ptrdiff_t>(first_gemm),
                              samples.end());
    p.efficiency.contraction =
        fit_factor(p, gemms, [](DeviceProfile& q, double f) { q.efficiency.contraction = f; });
  } else {
    result.notes.push_back("cuBLAS not found: efficiency.contraction kept from the base profile");
  }
  result.notes.push_back(
      "efficiency.reduction kept from the base profile (reductions are "
      "memory-bound; the bandwidth fit covers them)");
  result.notes.push_back(
      "efficiency.convolution kept from the base profile (calibration times library GEMMs; "
      "convolutions are fitted from a benchmark's kernels, bench/gpu/refit_profile.py)");
  // A base without a library call's cost or attention's efficiency of its own took exactly the
  // launch overhead's and the contraction's (device_profile.h): they follow the fitted ones (as
  // do ones a base sets to those same values).
  if (base.library_call_overhead == base.launch_overhead)
    p.library_call_overhead = p.launch_overhead;
  if (base.efficiency.attention == base.efficiency.contraction)
    p.efficiency.attention = p.efficiency.contraction;
  result.notes.push_back(
      "library_call_us and efficiency.attention follow the fitted launch overhead and "
      "contraction unless the base gives its own (fitted from a benchmark's stages, "
      "bench/gpu/refit_profile.py)");

  p.name = base.name + "-calibrated";
  p.description = base.description + " (calibrated on " + result.gpu_name + ")";
  p.sources.push_back("eqfuse calibrate on " + result.gpu_name +
                      ": launch overhead, bandwidth, elementwise and GEMM efficiency fitted");
  for (const Sample& smp : samples)
    result.measurements.push_back({smp.name, smp.measured_ms, predict_ms(p, smp)});
  return result;
}

}  // namespace eqfuse::cost
