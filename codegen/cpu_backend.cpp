#include "codegen/cpu_backend.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "codegen/build_cache.h"
#include "codegen/printer.h"
#include "support/error.h"

namespace eqfuse::codegen {

namespace fs = std::filesystem;

namespace {

// With EQFUSE_BLAS=1 in the environment: whether `cxx` compiles and links a CBLAS call
// (probed once per process).
bool use_cblas(const std::string& cxx) {
  if (const char* on = std::getenv("EQFUSE_BLAS"); !on || std::string(on) != "1") return false;
  static const bool found = [&] {
    fs::path dir = fs::temp_directory_path() /
                   fmt::format("eqfuse-cblas-probe-{}-{}", ::getpid(),
                               std::chrono::steady_clock::now().time_since_epoch().count());
    fs::create_directories(dir);
    std::ofstream(dir / "probe.cpp")
        << "#include <cblas.h>\nint main() {\n  float a = 2, b = 3, c = 0;\n"
           "  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 1, 1, 1, 1.0f, &a, 1, &b, "
           "1, 0.0f, &c, 1);\n  return c == 6 ? 0 : 1;\n}\n";
    std::string cmd = fmt::format("'{}' -o '{}' '{}' -lblas > /dev/null 2>&1 && '{}'", cxx,
                                  (dir / "probe").string(), (dir / "probe.cpp").string(),
                                  (dir / "probe").string());
    bool ok = std::system(cmd.c_str()) == 0;
    fs::remove_all(dir);
    return ok;
  }();
  return found;
}

// The host's CPU as the compiler's -march=native sees it (model and feature flags), so that a
// cache shared between machines never hands one machine another's instructions.
const std::string& host_cpu() {
  static const std::string id = [] {
    std::ifstream in("/proc/cpuinfo");
    std::string line, model, flags;
    while (std::getline(in, line) && (model.empty() || flags.empty())) {
      if (model.empty() && line.rfind("model name", 0) == 0) model = line;
      if (flags.empty() && (line.rfind("flags", 0) == 0 || line.rfind("Features", 0) == 0))
        flags = line;
    }
    return model + "\n" + flags;
  }();
  return id;
}

}  // namespace

std::unique_ptr<CpuModule> CpuModule::build(
    const ir::Graph& graph, CpuBuildInfo* info,
    const std::function<void(const std::string&)>& on_compile, const PlanOptions& options) {
  std::unique_ptr<CpuModule> m(new CpuModule());
  PlanOptions twin = options;
  twin.weight_blocks = true;
  m->plan_ = make_plan(graph, twin);
  std::string source = print_kernels(m->plan_, Target::Cpu);
  // -march=native: the twin runs where it is compiled (fused multiply-adds where the CPU has
  // them; the tiles of the contractions and convolutions are written for them).
  std::string flags = "-std=c++17 -O3 -march=native -fopenmp -fno-math-errno -fPIC -shared -w";
  // EQFUSE_TWIN_FLAGS: more compiler flags (the tests build the 16-byte-vector form with
  // -mno-avx).
  if (const char* extra = std::getenv("EQFUSE_TWIN_FLAGS"); extra && *extra)
    flags += std::string(" ") + extra;
  std::string cxx = system_compiler();
  std::string libs;
  bool blas = use_cblas(cxx);
  if (blas) {
    flags += " -DEQFUSE_CBLAS";
    libs = " -lblas";
  }
  fs::path dir = cache_root() / "cpu" /
                 source_hash(source + "\n" + cxx + " " + flags + libs + "\n" + host_cpu());
  fs::path lib = dir / "model.so";
  CpuBuildInfo local;
  CpuBuildInfo& bi = info ? *info : local;
  bi.library = lib.string();
  bi.blas = blas;
  if (fs::exists(lib)) {
    bi.cached = true;
  } else {
    if (on_compile)
      on_compile(fmt::format("compiling the C++ twin ({} stages) with {} (first use; cached in {})",
                             m->plan_.stages.size(), cxx, dir.parent_path().string()));
    auto t0 = std::chrono::steady_clock::now();
    compile_shared_library(source, fmt::format("'{}' {}", cxx, flags), libs, lib);
    bi.compile_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  m->handle_ = ::dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!m->handle_)
    throw Error(fmt::format("codegen: cannot load {}: {}", lib.string(), ::dlerror()),
                Error::Kind::Internal);
  m->run_ = reinterpret_cast<decltype(m->run_)>(::dlsym(m->handle_, "eqfuse_run"));
  m->arena_bytes_ =
      reinterpret_cast<decltype(m->arena_bytes_)>(::dlsym(m->handle_, "eqfuse_arena_bytes"));
  if (!m->run_ || !m->arena_bytes_)
    throw Error("codegen: " + lib.string() + " lacks the eqfuse_run API", Error::Kind::Internal);
  m->weights_ = weights_blob(m->plan_);
  return m;
}

// The library stays mapped (RTLD_NODELETE): OpenMP's worker threads outlive the module and
// would otherwise run unmapped code at exit.
CpuModule::~CpuModule() {
  if (handle_) ::dlclose(handle_);
}

std::vector<ir::Tensor> CpuModule::run(const std::vector<ir::Tensor>& inputs) const {
  std::vector<int64_t> dims = bind_dims(plan_, inputs);
  int64_t bytes = arena_bytes_(dims.data());
  size_t alloc = size_t((bytes + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment);
  std::unique_ptr<void, decltype(&std::free)> arena(
      alloc ? std::aligned_alloc(size_t(kBufferAlignment), alloc) : nullptr, &std::free);
  if (alloc && !arena) throw Error(fmt::format("cannot allocate an arena of {} bytes", bytes));
  std::vector<const void*> in;
  for (const ir::Tensor& t : inputs) in.push_back(t.raw());
  std::vector<ir::Tensor> outputs;
  std::vector<void*> out;
  const ir::Graph& g = plan_.graph;
  for (size_t k = 0; k < g.outputs().size(); ++k)
    outputs.emplace_back(g.value(g.outputs()[k]).type.dtype, output_dims(plan_, k, dims));
  for (ir::Tensor& t : outputs) out.push_back(t.raw());
  int rc = run_(dims.data(), in.data(), out.data(), weights_.data(), arena.get());
  if (rc != 0) throw Error(fmt::format("codegen: the generated run failed ({})", rc));
  return outputs;
}

}  // namespace eqfuse::codegen
