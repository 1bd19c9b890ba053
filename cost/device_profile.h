#pragma once
// A GPU as the cost model sees it: published peaks (memory bandwidth, FP32/FP64 and dense
// tensor-core throughput), its shape (SMs, L2, shared memory), and the factors that turn peaks
// into what kernels achieve (efficiency per op class, kernel launch overhead).
//
// Profiles are JSON (cost/devices/*.json, each citing its datasheet). The four shipped ones are
// compiled into the library, so `--device h200` works from any directory; any other profile
// (one written by `eqfuse calibrate`, say) loads from a file. A malformed profile is an Error
// naming the file and the field, never a silently wrong model.
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace eqfuse::cost {

// Achievable fraction of a peak, each in (0, 1]: never above 1, so no predicted time can beat
// the device's physical limits.
struct Efficiency {
  double bandwidth = 0.9;     // of memory bandwidth
  double contraction = 0.75;  // of the chosen peak, for MatMul/Gemm (and Conv unless below)
  // Of the chosen peak, for Conv: what the convolutions that run achieve, which can differ from
  // the library GEMMs (eqfuse's CUDA convolutions are loops of its own). A profile without it
  // takes `contraction`.
  double convolution = 0.75;
  // Of the FP32 peak, for generated attention (softmax(S)·V in one stage, codegen's attention
  // form): its two products on CUDA cores, with a softmax between them. A profile without it
  // takes `contraction`.
  double attention = 0.75;
  double elementwise = 0.6;  // of FP32 (or FP64) peak, elementwise and broadcast ops
  double reduction = 0.5;    // of FP32 (or FP64) peak, reductions and normalizations
  double opaque = 0.3;       // ops with no table entry (see cost_model.h)
};

struct DeviceProfile {
  std::string name;                  // "h200"
  std::string description;           // "NVIDIA H200 SXM 141GB ..."
  std::vector<std::string> sources;  // documents the figures come from

  // Peaks, in SI units (bytes/s, FLOP/s). Tensor-core figures are dense (no sparsity).
  double memory_bandwidth = 0;  // bytes per second
  double fp64 = 0, fp64_tensor = 0, fp32 = 0, tf32_tensor = 0;
  double fp16_tensor = 0, bf16_tensor = 0, int8_tensor = 0;  // int8 in ops/s

  int sm_count = 0;
  double l2_bytes = 0;
  double shared_memory_per_sm_bytes = 0;
  double launch_overhead = 0;  // seconds per kernel
  // Seconds per library call (a cuBLAS or cuBLASLt GEMM) beyond its arithmetic and traffic:
  // the library's own launches and setup. A profile without it takes `launch_overhead`.
  double library_call_overhead = 0;
  // Of the input rereads of a convolution whose outputs each read their own window (the direct
  // form: depthwise and other convolutions without tiles, cost/wave_quantization.h), the
  // fraction that reaches memory; the rest hit the caches. In [0, 1]; a profile without it
  // takes 1, every reread from memory.
  double conv_reread_fraction = 1.0;
  int gemm_tile_m = 128;  // output tile used for wave quantization of GEMM and convolution
  int gemm_tile_n = 128;
  Efficiency efficiency;

  // The shipped profiles: "a6000", "a100", "h100", "h200". Error listing them when unknown.
  static DeviceProfile load_builtin(std::string_view name);
  // A profile file; Error naming the file when unreadable or malformed.
  static DeviceProfile load_file(const std::filesystem::path& path);
  // A builtin name, or else a path to a file (what `--device` takes).
  static DeviceProfile load(std::string_view name_or_path);
  static std::vector<std::string> list_builtin();

  // `origin` names the document in error messages.
  static DeviceProfile from_json(const nlohmann::json& j, const std::string& origin);
  // The file format (units as in the files: GB/s, TFLOPS, MB, KB, µs).
  nlohmann::json to_json() const;
};

}  // namespace eqfuse::cost
