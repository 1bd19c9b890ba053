#pragma once
// Calibration: fits a device profile's factors from microbenchmarks on the GPU at hand, so the
// cost model predicts what this machine does rather than what a datasheet promises.
//
// Measured (CUDA driver API + NVRTC-compiled kernels, cuBLAS for GEMM when present):
//   launch overhead   back-to-back empty kernels          -> launch_overhead_us
//   copy bandwidth    float4 copy of 2 x 512 MiB           -> efficiency.bandwidth, fitted to
//   elementwise       y = a*x+b over 1M..128M floats          the copy and the vectorized
//                     (float4; once scalar, for reference)    kernels whose data exceeds L2
//   elementwise math  256 FMAs per element (compute-bound) -> efficiency.elementwise
//   GEMM              cuBLAS f16/bf16 (tensor cores) and f32 over six shapes, random operands
//                                                          -> efficiency.contraction (one factor
//                                                             fitted to all of them)
// Reductions are memory-bound in practice; their factor is kept from the base profile.
// Peaks stay the datasheet's; only the achievable fractions and the launch cost change.
#include <optional>
#include <string>
#include <vector>

#include "cost/device_profile.h"

namespace eqfuse::cost {

struct CalibrationMeasurement {
  std::string name;  // "copy 1024 MiB", "gemm f16 4096^3"
  double measured_ms = 0;
  double predicted_ms = 0;  // by the fitted profile
};

struct CalibrationResult {
  DeviceProfile profile;  // the base profile with fitted factors
  std::string gpu_name;   // as the driver reports it
  std::vector<CalibrationMeasurement> measurements;
  std::vector<std::string> notes;  // what was kept from the base and why
  double mean_abs_relative_error() const;
};

// Why calibration cannot run here (no driver, no GPU, no NVRTC), or nullopt when it can.
std::optional<std::string> calibration_unavailable();

// Runs the microbenchmarks on GPU 0 and fits `base`'s factors; with no base, the builtin profile
// whose GPU the driver names (H200, H100, A100, RTX A6000). Throws Error (exit 2) when no GPU is
// usable (see calibration_unavailable) or no base fits, Error(Unsupported) when a CUDA call fails.
CalibrationResult calibrate(const DeviceProfile* base);

// The builtin profile name for a GPU name as the driver reports it ("NVIDIA H200" -> "h200").
std::optional<std::string> builtin_for_gpu(const std::string& gpu_name);

// The fitted profile as a profile file, with a "calibration" object (GPU, measurements, error).
nlohmann::json calibration_to_json(const CalibrationResult& result);

}  // namespace eqfuse::cost
