#include "cuda_emulation.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "codegen/buffer_plan.h"
#include "codegen/printer.h"
#include "support/error.h"

namespace fs = std::filesystem;

namespace eqfuse::testing {

std::vector<std::vector<ir::Tensor>> run_cuda_emulated_sets(
    const ir::Graph& graph, const std::vector<std::vector<ir::Tensor>>& input_sets,
    const codegen::PlanOptions& options, const std::string& conv_form) {
  codegen::KernelPlan plan = codegen::make_plan(graph, options);
  std::string source =
      "#include <cuda_runtime.h>\n" + codegen::print_kernels(plan, codegen::Target::Cuda);
  // C++ has no launch syntax: each launch becomes a call of the emulator.
  static const std::regex launch(R"((\w+)<<<[^;]*?, (\d+), 0, st>>>\(([^;]*)\);)");
  source = std::regex_replace(source, launch, "eqf_emu::launch($2, [&] { $1($3); });");
  if (source.find("<<<") != std::string::npos)
    throw Error("cuda emulation: a launch the test does not rewrite", Error::Kind::Internal);
  static int builds = 0;
  fs::path dir =
      fs::temp_directory_path() / fmt::format("eqfuse-cuda-emulation-{}-{}", ::getpid(), builds++);
  fs::create_directories(dir);
  std::ofstream(dir / "kernels.cpp") << source;
  const char* cxx = std::getenv("CXX");
  std::string cmd = fmt::format(
      "'{}' -std=c++17 -O1 -fno-strict-aliasing -fPIC -shared -w -DEQFUSE_CUDNN "
      "-fsanitize=alignment -fno-sanitize-recover=alignment -I'{}' -o '{}' '{}' > '{}' 2>&1",
      cxx && *cxx ? cxx : "c++", EQFUSE_CUDA_EMULATOR_DIR, (dir / "kernels.so").string(),
      (dir / "kernels.cpp").string(), (dir / "build.log").string());
  if (std::system(cmd.c_str()) != 0) {
    std::stringstream log;
    log << std::ifstream(dir / "build.log").rdbuf();
    throw Error("cuda emulation: the CUDA source in " + dir.string() + " does not build:\n" +
                    log.str().substr(0, 4000),
                Error::Kind::Internal);
  }
  void* handle = ::dlopen((dir / "kernels.so").c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) throw Error(std::string("cuda emulation: ") + ::dlerror(), Error::Kind::Internal);
  using Run = int (*)(const int64_t*, const void* const*, void* const*, const void*, void*, void*);
  using ArenaBytes = int64_t (*)(const int64_t*);
  auto run = reinterpret_cast<Run>(::dlsym(handle, "eqfuse_run"));
  auto arena_bytes = reinterpret_cast<ArenaBytes>(::dlsym(handle, "eqfuse_arena_bytes"));
  if (!run || !arena_bytes) throw Error("cuda emulation: no eqfuse_run", Error::Kind::Internal);
  ::setenv("EQFUSE_CONV", conv_form.c_str(), 1);
  std::vector<unsigned char> weights = codegen::weights_blob(plan);
  const ir::Graph& g = plan.graph;
  std::vector<std::vector<ir::Tensor>> results;
  int rc = 0;
  std::string race;
  for (const std::vector<ir::Tensor>& inputs : input_sets) {
    std::vector<int64_t> dims = codegen::bind_dims(plan, inputs);
    const int64_t align = codegen::kBufferAlignment;
    const size_t bytes = size_t((arena_bytes(dims.data()) + align - 1) / align * align);
    std::unique_ptr<void, decltype(&std::free)> arena(
        bytes ? std::aligned_alloc(size_t(align), bytes) : nullptr, &std::free);
    std::vector<const void*> in;
    for (const ir::Tensor& t : inputs) in.push_back(t.raw());
    // Twice: threads in order over an arena of 0xff bytes (NaN as floats), then in reverse over
    // zeros. The outputs must agree to the bit: a difference is a race between threads or a read
    // of memory nothing wrote.
    std::vector<ir::Tensor> runs[2];
    for (int pass = 0; pass < 2 && rc == 0; ++pass) {
      if (bytes) std::memset(arena.get(), pass == 0 ? 0xff : 0, bytes);
      std::vector<void*> out;
      for (size_t k = 0; k < g.outputs().size(); ++k)
        runs[pass].emplace_back(g.value(g.outputs()[k]).type.dtype,
                                codegen::output_dims(plan, k, dims));
      for (ir::Tensor& t : runs[pass]) out.push_back(t.raw());
      if (pass == 1) ::setenv("EQF_EMULATOR_ORDER", "reverse", 1);
      rc = run(dims.data(), in.data(), out.data(), weights.data(), arena.get(), nullptr);
      ::unsetenv("EQF_EMULATOR_ORDER");
    }
    if (rc != 0) break;
    for (size_t k = 0; k < runs[0].size() && race.empty(); ++k)
      if (std::memcmp(runs[0][k].raw(), runs[1][k].raw(), runs[0][k].byte_size()) != 0)
        race = fmt::format(
            "cuda emulation: output {} ('{}') differs between threads run in order over an arena "
            "of 0xff bytes and in reverse over zeros: a race between threads, or a read of "
            "memory nothing wrote",
            k, g.value(g.outputs()[k]).name);
    results.push_back(std::move(runs[0]));
  }
  ::dlclose(handle);
  fs::remove_all(dir);
  if (rc != 0) throw Error(fmt::format("cuda emulation: the run returned {}", rc));
  if (!race.empty()) throw Error(race);
  return results;
}

std::vector<ir::Tensor> run_cuda_emulated(const ir::Graph& graph,
                                          const std::vector<ir::Tensor>& inputs,
                                          const codegen::PlanOptions& options,
                                          const std::string& conv_form) {
  return run_cuda_emulated_sets(graph, {inputs}, options, conv_form).front();
}

}  // namespace eqfuse::testing
