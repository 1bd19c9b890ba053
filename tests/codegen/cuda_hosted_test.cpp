// The hosted CUDA units (`eqfuse run --backend cuda`) checked without a GPU: NVRTC compiles the
// kernels of every kernel kind for sm_90a and sm_86, the host unit builds with the system
// compiler, and its run function, given a table that records instead of launching, launches
// every stage in plan order with the plan's grid and hands its matrix products to cuBLAS with
// the operands' types. What a GPU adds (the kernels' results) is checked where one is lent
// (bench/gpu/run.sh). Where NVRTC is not installed the NVRTC checks are skipped with a warning.
#include <dlfcn.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>
#include <iterator>
#include <regex>
#include <set>

#include "codegen/build_cache.h"
#include "codegen/cuda_backend.h"
#include "codegen/printer.h"
#include "ir/builder.h"
#include "support/cuda_driver.h"
#include "support/error.h"

using namespace eqfuse;
using ir::Dim;
using ir::DType;
using ir::GraphBuilder;
using ir::ValueId;

namespace {

ValueId kernel(GraphBuilder& b, const std::string& body, std::vector<ValueId> inputs) {
  return b.op("Kernel", std::move(inputs), {{"body", ir::AttrValue(body)}});
}

// One graph with a kernel of each kind: pointwise with a folded transpose, a row reduction,
// a contraction with its epilogue, attention with a mask, and a convolution.
ir::Graph every_kind() {
  GraphBuilder b;
  ValueId x = b.input("x", DType::f32, {Dim::symbol("n"), Dim(11), Dim(8)});
  ValueId w = b.weight("w", ir::Tensor(DType::f32, {8, 8}));
  ValueId bias = b.weight("bias", ir::Tensor(DType::f32, {8}));
  ValueId mask = b.weight("mask", ir::Tensor(DType::f32, {11, 11}));
  ValueId h = kernel(b, "(Relu (Add (MatMul ?0 ?1) ?2))", {x, w, bias});
  ValueId ln = b.op("LayerNormalization", {h, bias, bias}, {{"axis", int64_t{-1}}});
  ValueId proj = b.op("MatMul", {ln, w});  // two stored operands: cuBLAS at every precision
  ValueId att = kernel(b,
                       "(MatMul (Softmax :axis -1 (Add (MatMul ?0 (Transpose :perm (0 2 1) ?0)) "
                       "?1)) ?0)",
                       {proj, mask});
  b.output(kernel(b, "(Mul (Transpose :perm (0 2 1) ?0) (Sigmoid (Transpose :perm (0 2 1) ?0)))",
                  {att}));
  ValueId img = b.input("img", DType::f32, {Dim::symbol("n"), Dim(3), Dim(9), Dim(7)});
  ValueId cw = b.weight("cw", ir::Tensor(DType::f32, {4, 3, 3, 3}));
  b.output(b.op("Relu", {b.op("Conv", {img, cw}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}})}));
  return std::move(b).finish();
}

bool have_nvrtc() {
  std::string why;
  if (cuda::load_nvrtc(&why)) return true;
  WARN("skipped: " << why);
  return false;
}

struct Launch {
  std::string kernel;
  unsigned grid = 0, block = 0;
};
struct Gemm {
  int a_type = 0, b_type = 0, c_type = 0;
  int64_t m = 0, n = 0, k = 0, batch = 0;
};
struct Recorder {
  std::vector<Launch> launches;
  std::vector<Gemm> gemms;
  std::vector<int> records;
  std::vector<std::string> order;  // "launch" / "gemm", in call order
};

}  // namespace

TEST_CASE("NVRTC compiles the hosted kernels of every kind, f32 and bf16") {
  if (!have_nvrtc()) return;
  ir::Graph g = every_kind();
  for (DType precision : {DType::f32, DType::bf16}) {
    codegen::PlanOptions options;
    options.precision = precision;
    codegen::KernelPlan plan = codegen::make_plan(g, options);
    for (const char* arch : {"sm_90a", "sm_86"}) {
      INFO(ir::dtype_name(precision) << " " << arch);
      codegen::CudaArtifacts a = codegen::build_cuda_artifacts(plan, arch);
      CHECK(std::filesystem::file_size(a.cubin) > 0);
      CHECK(std::filesystem::exists(a.host_library));
      // Where the toolkit's runtime and cuBLASLt are installed, the host code is built against
      // them (and cuDNN), calls cuBLASLt and cuDNN itself, and loads (no GPU needed for that).
      CHECK(a.host_libraries == codegen::find_host_libraries().libraries);
      if (!a.host_libraries.empty()) {
        std::ifstream in(std::filesystem::path(a.host_library).replace_extension(".cpp"));
        std::string host((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        CHECK(host.find("eqf_lt_gemm(&lt") != std::string::npos);
        CHECK(host.find("eqf_conv_run(") != std::string::npos);
        // Every kernel the host code may launch is in the cubin, the cuDNN form's finish
        // kernel too (NVRTC gets no defines).
        std::ifstream bin(a.cubin, std::ios::binary);
        std::string cubin((std::istreambuf_iterator<char>(bin)), std::istreambuf_iterator<char>());
        std::regex launched(R"re(H->launch\(H->ctx, "(\w+)")re");
        size_t names = 0;
        for (auto it = std::sregex_iterator(host.begin(), host.end(), launched);
             it != std::sregex_iterator(); ++it, ++names) {
          INFO((*it)[1]);
          CHECK(cubin.find(".text." + (*it)[1].str() + std::string(1, '\0')) != std::string::npos);
        }
        CHECK(names > 0);
        CHECK(host.find("_finish\"") != std::string::npos);
        void* handle = ::dlopen(a.host_library.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
        INFO((handle ? "" : ::dlerror()));
        CHECK(handle);
        if (handle) CHECK(::dlsym(handle, "eqfuse_run_hosted"));
      } else {
        WARN("the CUDA runtime and cuBLASLt are not installed: the host code uses the table only");
      }
      // A second build of the same sources is a cache hit.
      CHECK(codegen::build_cuda_artifacts(plan, arch).cached);
    }
  }
}

TEST_CASE("the hosted host code launches every stage in order through the table") {
  ir::Graph g = every_kind();
  for (DType precision : {DType::f32, DType::bf16}) {
    INFO(ir::dtype_name(precision));
    codegen::PlanOptions options;
    options.precision = precision;
    codegen::KernelPlan plan = codegen::make_plan(g, options);
    codegen::HostedCuda units = codegen::print_cuda_hosted(plan);
    // Every kernel of the device unit is extern "C"; the host unit has no CUDA in it.
    std::set<std::string> kernels;
    std::regex global(R"(extern "C" __global__ void (s\d+(?:_\d+x\d+)?)\()");
    for (auto it = std::sregex_iterator(units.device.begin(), units.device.end(), global);
         it != std::sregex_iterator(); ++it)
      kernels.insert((*it)[1]);
    CHECK(units.host.find("<<<") == std::string::npos);
    CHECK(units.host.find("cublas") == std::string::npos);

    std::filesystem::path lib =
        codegen::cache_root() / "test-hosted" / (codegen::source_hash(units.host) + ".so");
    if (!std::filesystem::exists(lib))
      codegen::compile_shared_library(units.host,
                                      "'" + codegen::system_compiler() +
                                          "' -std=c++17 -O1 -fPIC -shared -Wall "
                                          "-Wextra -Werror",
                                      "", lib);
    void* handle = ::dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
    REQUIRE(handle);
    auto run = reinterpret_cast<codegen::RunHosted>(::dlsym(handle, "eqfuse_run_hosted"));
    REQUIRE(run);

    Recorder rec;
    codegen::EqfHost table{
        &rec,
        [](void* ctx, const char* k, unsigned grid, unsigned block, void** args) {
          auto* r = static_cast<Recorder*>(ctx);
          r->launches.push_back({k, grid, block});
          r->order.push_back("launch");
          return args && args[0] ? 0 : 1;  // the dims struct comes first
        },
        [](void* ctx, int, int, int64_t m, int64_t n, int64_t k, float, const void* a, int at,
           int64_t, int64_t, const void* b, int bt, int64_t, int64_t, void* c, int ct, int64_t,
           int64_t, int64_t batch) {
          auto* r = static_cast<Recorder*>(ctx);
          r->gemms.push_back({at, bt, ct, m, n, k, batch});
          r->order.push_back("gemm");
          return a && b && c ? 0 : 1;
        },
        [](void* ctx, int stage) { static_cast<Recorder*>(ctx)->records.push_back(stage); }};
    // Pointers the host code only offsets, never reads: any distinct non-null addresses.
    std::vector<unsigned char> fake(1 << 20);
    const int64_t dims[] = {2};
    const void* inputs[] = {fake.data(), fake.data() + 4096};
    void* outputs[] = {fake.data() + 8192, fake.data() + 12288};
    REQUIRE(run(dims, inputs, outputs, fake.data(), fake.data(), &table) == 0);
    // Its pointwise stages read and write 16 bytes at a time: a misaligned buffer is refused
    // before anything is launched.
    const void* misaligned[] = {fake.data() + 1, fake.data() + 4096};
    Recorder none;
    codegen::EqfHost refused = table;
    refused.ctx = &none;
    CHECK(run(dims, misaligned, outputs, fake.data(), fake.data(), &refused) == -2);
    CHECK(none.order.empty());

    // One record per stage and one at the end, in order; every stage launched, a GEMM, or an
    // epilogue computed inside the convolution before it (which the header comment says).
    REQUIRE(rec.records.size() == plan.stages.size() + 1);
    for (size_t k = 0; k < rec.records.size(); ++k) CHECK(rec.records[k] == int(k));
    std::regex merged(R"(with stage \d+'s epilogue)");
    auto epilogues =
        size_t(std::distance(std::sregex_iterator(units.device.begin(), units.device.end(), merged),
                             std::sregex_iterator()));
    // The Relu after the Conv; the MatMul's bias and Relu run after cuBLAS (at bf16 the MatMul
    // reads a bf16 copy of the caller's f32 input, so it is a cuBLAS call there too).
    CHECK(epilogues == 1u);
    CHECK(rec.launches.size() + rec.gemms.size() + epilogues >= plan.stages.size());
    for (const Launch& l : rec.launches) {
      CHECK(kernels.count(l.kernel) == 1);
      CHECK(l.block == 256);
      CHECK(l.grid >= 1);
    }
    // The attention kernel is one stage, launched like the others.
    CHECK(std::count_if(plan.stages.begin(), plan.stages.end(), [](const codegen::Stage& s) {
            return s.kind == codegen::StageKind::Attention;
          }) == 1);
    // The first MatMul and the projection go to cuBLAS with the buffers' types (ONNX codes).
    REQUIRE(rec.gemms.size() == 2u);
    int stored = ir::onnx_dtype_code(precision);
    for (const Gemm& m : rec.gemms) {
      CHECK(m.a_type == m.b_type);
      CHECK(m.batch >= 1);
      CHECK((m.a_type == 1 || m.a_type == stored));
    }
    ::dlclose(handle);
  }
}

TEST_CASE("without a GPU the CUDA backend says so") {
  std::string why;
  if (cuda::load_cuda(&why)) {
    WARN("a GPU is present; nothing to check here");
    return;
  }
  try {
    codegen::CudaModule::build(every_kind());
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.kind() == Error::Kind::BadInput);
    CHECK_THAT(e.what(), Catch::Contains("no GPU"));
  }
}
