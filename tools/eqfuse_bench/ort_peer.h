#pragma once
// ONNX Runtime as a peer column of eqfuse-bench: its CPU provider at graph optimization level
// "extended" (its fusions), through Node.js and the onnxruntime-node package, which an npm
// install puts in DIR/node_modules (npm install --ignore-scripts onnxruntime-node). Optional:
// eqfuse never builds against it, and the bench says so when it is absent.
#include <filesystem>
#include <string>

namespace eqfuse::bench {

// Whether `node` runs and DIR/node_modules/onnxruntime-node exists; else why not.
bool ort_available(const std::string& dir, std::string* why);

struct OrtResult {
  bool ok = false;
  double ms = 0;                    // median of `runs` runs after one warm-up
  std::filesystem::path optimized;  // ONNX Runtime's optimized graph, saved as ONNX
  std::string note;                 // why not, when !ok
};

// Runs `model` in ONNX Runtime on zeros (symbolic dims 1; float, int32 or int64 inputs), with as
// many intra-op threads as the twin's OpenMP takes (OMP_NUM_THREADS, else every CPU): left to
// itself, ONNX Runtime 1.31 counted one core on a 2-vCPU machine and ran 1.4x slower there.
OrtResult run_ort(const std::string& dir, const std::filesystem::path& model, int runs);

}  // namespace eqfuse::bench
