// nvcc builds the generated CUDA tree of every shared model (optimized, dims left symbolic) for
// sm_90a and sm_86 with every warning an error, and the bench program once; and, for models
// with a MatMul, a convolution and a row reduction, the --precision bf16 tree too (16-bit
// buffers, cuBLAS GemmEx; attention and convolution tiles on tensor cores) and an f16 tree for
// sm_75, a GPU before tensor cores' mma.sync m16n8k16 (those tiles on the FP32 units). The
// convolutions' cuDNN form is compiled too where the toolkit has cudnn.h (-DEQFUSE_CUDNN). Each
// tree's hosted units (`eqfuse run --backend cuda`) are also built: the kernels with NVRTC for
// sm_90a, the host code with the system compiler. Skips (exit 77) where nvcc or ../shared is
// absent: CI machines have the CUDA toolkit but no GPU, so this is the check CI gives the CUDA-only
// half of the printer. pointwise_chain's PTX must show 128-bit loads and stores (its pointwise
// kernel in groups of 4 elements per thread).
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "codegen/cuda_backend.h"
#include "codegen/source_tree.h"
#include "frontend/onnx_import.h"
#include "optimizer/optimize.h"
#include "support/error.h"

namespace fs = std::filesystem;
using namespace eqfuse;

namespace {

std::string find_nvcc() {
  if (const char* e = std::getenv("NVCC"); e && *e) return e;
  for (const char* p : {"/usr/local/cuda/bin/nvcc", "/usr/bin/nvcc"})
    if (fs::exists(p)) return p;
  return "";
}

// The convolutions' cuDNN form is compiled where the toolkit beside nvcc has cudnn.h.
std::string cudnn_flag(const std::string& nvcc) {
  fs::path include = fs::path(nvcc).parent_path().parent_path() / "include" / "cudnn.h";
  return fs::exists(include) ? "-DEQFUSE_CUDNN " : "";
}

const char* const kTargetArchs =
    "-gencode arch=compute_90a,code=sm_90a -gencode arch=compute_86,code=sm_86 ";

bool nvcc_compile(const std::string& nvcc, const fs::path& dir, const std::string& file,
                  const std::string& archs = kTargetArchs) {
  fs::path log = dir / (file + ".log");
  std::string cmd = "'" + nvcc + "' -std=c++17 " + cudnn_flag(nvcc) + archs +
                    "-Werror all-warnings " + "-Xcompiler -Wall,-Wextra -c -o '" +
                    (dir / (file + ".o")).string() + "' '" + (dir / file).string() + "' > '" +
                    log.string() + "' 2>&1";
  if (std::system(cmd.c_str()) == 0) return true;
  std::ifstream in(log);
  std::cout << "FAILED: nvcc " << (dir / file).string() << "\n" << in.rdbuf() << "\n";
  return false;
}

// Whether the PTX of dir's kernels.cu has 128-bit global loads and stores of f32.
bool vector_accesses(const std::string& nvcc, const fs::path& dir) {
  fs::path ptx = dir / "kernels.ptx";
  std::string cmd = "'" + nvcc + "' -std=c++17 -arch=sm_90a -ptx -o '" + ptx.string() + "' '" +
                    (dir / "kernels.cu").string() + "' > /dev/null 2>&1";
  if (std::system(cmd.c_str()) != 0) return false;
  std::stringstream text;
  text << std::ifstream(ptx).rdbuf();
  return text.str().find("ld.global.v4.f32") != std::string::npos &&
         text.str().find("st.global.v4.f32") != std::string::npos;
}

}  // namespace

int main() {
  std::string nvcc = find_nvcc();
  fs::path shared = std::getenv("EQFUSE_SHARED") ? fs::path(std::getenv("EQFUSE_SHARED"))
                                                 : fs::path(EQFUSE_SHARED_DIR);
  if (nvcc.empty()) {
    std::cout << "skipped: nvcc not found (set NVCC)\n";
    return 77;
  }
  if (!fs::is_directory(shared / "models")) {
    std::cout << "skipped: shared models not found at " << shared << "\n";
    return 77;
  }
  std::cout << (cudnn_flag(nvcc).empty() ? "cudnn.h not beside nvcc: convolutions without cuDNN\n"
                                         : "with cuDNN (-DEQFUSE_CUDNN)\n");
  fs::path work = fs::temp_directory_path() / ("eqfuse-nvcc-test-" + std::to_string(::getpid()));
  int failures = 0, built = 0;
  bool bench_done = false;
  for (const char* set : {"models", "models_dynamic"}) {
    for (const auto& entry : fs::directory_iterator(shared / set)) {
      fs::path model = entry.path() / "model.onnx";
      if (!fs::exists(model)) continue;
      std::string name = std::string(set) + "_" + entry.path().filename().string();
      try {
        ir::Graph g = frontend::import_onnx(model);
        optimizer::OptimizeOptions opt;
        opt.verify = false;  // numerics are the C++ twin's tests; this checks the CUDA build
        ir::Graph fused = optimizer::optimize(g, opt).graph;
        std::string model_name = entry.path().filename().string();
        bool lowered_too =
            std::string(set) == "models" && (model_name == "bert_tiny" || model_name == "resnet18");
        struct Variant {
          ir::DType precision;
          const char* arch;  // what the tree is written for
          const char* suffix;
        };
        for (Variant v :
             {Variant{ir::DType::f32, "sm_90a", ""}, Variant{ir::DType::bf16, "sm_90a", "_bf16"},
              Variant{ir::DType::f16, "sm_75", "_f16_sm75"}}) {
          if (v.precision != ir::DType::f32 && !lowered_too) continue;
          codegen::PlanOptions po;
          po.precision = v.precision;
          po.tensor_cores = codegen::arch_has_tensor_cores(v.arch);
          codegen::KernelPlan plan = codegen::make_plan(fused, po);
          std::string tree = name + v.suffix;
          fs::path dir = work / tree;
          codegen::write_source_tree(plan, dir, {codegen::Target::Cuda, v.arch});
          const bool pre_ampere = !po.tensor_cores;
          bool ok = pre_ampere ? nvcc_compile(nvcc, dir, "kernels.cu", "-arch=sm_75 ")
                               : nvcc_compile(nvcc, dir, "kernels.cu");
          if (ok && pre_ampere) {
            std::stringstream text;
            text << std::ifstream(dir / "kernels.cu").rdbuf();
            ok = text.str().find("eqf_mma_") == std::string::npos;
            if (!ok) std::cout << "FAILED: " << tree << " uses mma.sync, which sm_75 lacks\n";
          }
          if (ok && !bench_done) ok = nvcc_compile(nvcc, dir, "bench.cu"), bench_done = true;
          // A pointwise kernel over whole groups of 4 loads and stores 128 bits at a time.
          if (ok && name == "models_pointwise_chain") {
            ok = vector_accesses(nvcc, dir);
            if (!ok) std::cout << "FAILED: no 128-bit loads and stores in " << tree << "\n";
          }
          // The hosted units of `eqfuse run --backend cuda`: NVRTC and the system compiler.
          std::string nvrtc;
          if (ok) {
            try {
              codegen::CudaArtifacts a = codegen::build_cuda_artifacts(plan, v.arch);
              if (!a.cached) nvrtc = ", NVRTC " + std::to_string(a.nvrtc_seconds) + " s";
            } catch (const Error& e) {
              std::cout << "FAILED: NVRTC or the host code of " << tree << ": " << e.what() << "\n";
              ok = false;
            }
          }
          std::cout << (ok ? "ok      " : "FAILED  ") << tree << ": " << plan.steps.size()
                    << " kernels, " << plan.stages.size() << " stages" << nvrtc << "\n";
          failures += ok ? 0 : 1;
          ++built;
        }
      } catch (const Error& e) {
        std::cout << "FAILED  " << name << ": " << e.what() << "\n";
        ++failures;
      }
    }
  }
  fs::remove_all(work);
  std::cout << built << " trees built, " << failures << " failures\n";
  return failures == 0 && built > 0 ? 0 : 1;
}
