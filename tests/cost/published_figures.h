#pragma once
// The datasheet figures of each shipped profile, typed in again from the documents the
// profiles cite, so the tests compute expected costs by independent arithmetic instead of
// reading the model's own parsed profile. Units: GB/s, TFLOPS, µs.
#include <string>
#include <vector>

namespace eqfuse::test {

struct PublishedFigures {
  std::string name;
  double bandwidth_gbps;
  double fp32_tflops;
  double fp64_tflops;
  double tf32_tflops;  // dense tensor core
  double fp16_tflops;  // dense tensor core
  double bf16_tflops;
  int sms;
  double launch_us;
  double eff_bandwidth, eff_contraction, eff_elementwise, eff_reduction;
};

inline const std::vector<PublishedFigures>& published_figures() {
  static const std::vector<PublishedFigures> all = {
      // RTX A6000 datasheet + GA102 whitepaper: 768 GB/s, 38.7 FP32, 77.4 TF32, 154.8 FP16.
      {"a6000", 768, 38.7, 0.605, 77.4, 154.8, 154.8, 84, 2.0, 0.9, 0.75, 0.6, 0.5},
      // A100 80GB SXM datasheet: 2039 GB/s, 19.5 FP32, 156 TF32, 312 FP16/BF16.
      {"a100", 2039, 19.5, 9.7, 156, 312, 312, 108, 2.0, 0.9, 0.75, 0.6, 0.5},
      // H100 SXM datasheet: 3.35 TB/s, 67 FP32, 989 TF32 and 1979 FP16 with sparsity (halved).
      {"h100", 3350, 67, 34, 494.5, 989.5, 989.5, 132, 1.5, 0.9, 0.7, 0.6, 0.5},
      // H200 SXM datasheet: 4.8 TB/s, otherwise the H100 SXM's compute.
      {"h200", 4800, 67, 34, 494.5, 989.5, 989.5, 132, 1.5, 0.9, 0.7, 0.6, 0.5},
  };
  return all;
}

}  // namespace eqfuse::test
