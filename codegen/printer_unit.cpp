// The printer's whole units (codegen/printer.h): the dims struct, the weights a tree must hold,
// the model's interface, the stages' functions and the run function around them, for a tree
// (print_kernels) and for eqfuse run's CUDA backend (print_cuda_hosted).
#include <regex>

#include "codegen/prelude.h"
#include "codegen/printer.h"
#include "codegen/printer_writer.h"

namespace eqfuse::codegen {

using namespace detail;

namespace {

std::string dims_struct(const KernelPlan& plan) {
  return fmt::format("struct EqfDims {{\n  int64_t d[{}];\n}};\n\n",
                     std::max<size_t>(plan.dims.size(), 1));
}

// Weights that are not floating point (indices, masks), with their bytes where the graph has
// them and they are small: what a run with seeded weights must keep, since random bits make no
// valid index.
std::string fixed_weights(const KernelPlan& plan) {
  constexpr size_t kMaxEmbedded = 64 * 1024;
  std::string arrays, cases;
  size_t count = 0;
  for (ValueId v : plan.weights) {
    const Buffer& b = *plan.buffer(v);
    if (b.dtype == DType::f32 || b.dtype == DType::f16 || b.dtype == DType::bf16 ||
        b.dtype == DType::f64)
      continue;
    std::optional<ir::Tensor> data;
    try {
      if (auto t = plan.graph.weight_data(v); t && t->byte_size() <= kMaxEmbedded) data = *t;
    } catch (const Error&) {  // a structure-only model: no bytes to embed
    }
    std::string name = "nullptr";
    if (data) {
      name = fmt::format("eqf_fixed{}", count);
      std::string bytes;
      const auto* raw = reinterpret_cast<const unsigned char*>(data->raw());
      for (size_t i = 0; i < data->byte_size(); ++i)
        bytes += fmt::format("{}{}", i % 24 ? " " : "\n  ", unsigned(raw[i])) + ",";
      arrays += fmt::format("static const unsigned char {}[] = {{{}\n}};  // {}\n", name,
                            bytes.empty() ? "0" : bytes, plan.graph.value(v).name);
    }
    cases += fmt::format("    case {}: *bytes = {}; *data = {}; return {};\n", count, b.bytes.str(),
                         name, b.offset);
    ++count;
  }
  return arrays + fmt::format(
                      "extern \"C\" int eqfuse_num_fixed_weights(void) {{ return {}; }}\n\n"
                      "extern \"C\" int64_t eqfuse_fixed_weight(int k, int64_t* bytes, const "
                      "unsigned char** data) {{\n"
                      "  (void)bytes;\n  (void)data;\n"
                      "  switch (k) {{\n{}    default: return -1;\n  }}\n}}\n\n",
                      count, cases);
}

// The model's interface as functions (host code in both targets): names, dtypes (ONNX codes),
// ranks and dims of inputs and outputs, and which input dim binds each run-time dim.
std::string model_description(const KernelPlan& plan) {
  const ir::Graph& g = plan.graph;
  auto sym = [&](const ir::Dim& d) {
    if (d.is_static()) return std::to_string(d.value());
    return d.sym().c_expr([&](const std::string& s) { return plan.dim_ident(s); });
  };
  std::string dims;
  for (size_t k = 0; k < plan.dims.size(); ++k)
    dims += fmt::format("  const int64_t d{} = dims[{}];\n  (void)d{};\n", k, k, k);
  std::string text;
  for (const char* side : {"input", "output"}) {
    const auto& values = std::string(side) == "input" ? g.inputs() : g.outputs();
    std::string names, types, ranks, shapes;
    for (size_t k = 0; k < values.size(); ++k) {
      const ir::Value& v = g.value(values[k]);
      std::string quoted;
      for (char c : v.name)
        quoted += (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
      names += fmt::format("    case {}: return \"{}\";\n", k, quoted);
      types += fmt::format("    case {}: return {};\n", k, ir::onnx_dtype_code(v.type.dtype));
      ranks += fmt::format("    case {}: return {};\n", k, v.type.shape.rank());
      shapes += fmt::format("    case {}:\n", k);
      for (size_t a = 0; a < v.type.shape.rank(); ++a)
        shapes += fmt::format("      out[{}] = {};\n", a, sym(v.type.shape[a]));
      shapes += "      return;\n";
    }
    text += fmt::format("extern \"C\" int eqfuse_num_{}s(void) {{ return {}; }}\n", side,
                        values.size());
    text += fmt::format(
        "extern \"C\" const char* eqfuse_{}_name(int k) {{\n  switch (k) {{\n{}"
        "    default: return 0;\n  }}\n}}\n",
        side, names);
    text += fmt::format(
        "extern \"C\" int eqfuse_{}_dtype(int k) {{\n  switch (k) {{\n{}"
        "    default: return 0;\n  }}\n}}\n",
        side, types);
    text += fmt::format(
        "extern \"C\" int eqfuse_{}_rank(int k) {{\n  switch (k) {{\n{}"
        "    default: return -1;\n  }}\n}}\n",
        side, ranks);
    text += fmt::format(
        "extern \"C\" void eqfuse_{}_dims(int k, const int64_t* dims, int64_t* "
        "out) {{\n  (void)dims;\n  (void)out;\n{}  switch (k) {{\n{}    default:\n"
        "      return;\n  }}\n}}\n",
        side, dims, shapes);
  }
  std::string sources;
  for (size_t d = 0; d < plan.dims.size(); ++d) {
    for (size_t i = 0; i < g.inputs().size(); ++i) {
      const auto& shape = g.value(g.inputs()[i]).type.shape;
      bool found = false;
      for (size_t a = 0; a < shape.rank() && !found; ++a)
        if (!shape[a].is_static() && shape[a].symbol_name() == plan.dims[d]) {
          sources += fmt::format("    case {}: *input = {}; *axis = {}; return 0;  // {}\n", d, i,
                                 a, plan.dims[d]);
          found = true;
        }
      if (found) break;
    }
  }
  std::string names;
  for (size_t d = 0; d < plan.dims.size(); ++d)
    names += fmt::format("    case {}: return \"{}\";\n", d, plan.dims[d]);
  text += fmt::format(
      "extern \"C\" const char* eqfuse_dim_name(int d) {{\n  switch (d) {{\n{}"
      "    default: return 0;\n  }}\n}}\n",
      names);
  text += fmt::format(
      "extern \"C\" int eqfuse_dim_source(int d, int* input, int* axis) {{\n"
      "  (void)input;\n  (void)axis;\n"
      "  switch (d) {{\n{}    default: return -1;\n  }}\n}}\n",
      sources);
  text += fmt::format("extern \"C\" int64_t eqfuse_weights_bytes(void) {{ return {}; }}\n\n",
                      plan.weight_bytes);
  text += fixed_weights(plan);
  auto [rtol, atol] = precision_tolerance(plan.precision);
  text += fmt::format(
      "extern \"C\" int eqfuse_precision(void) {{ return {}; }}\n\n"
      "extern \"C\" void eqfuse_tolerance(double* rtol, double* atol) {{\n"
      "  *rtol = {};\n  *atol = {};\n}}\n\n",
      ir::onnx_dtype_code(plan.precision), rtol, atol);
  return text;
}

}  // namespace

std::string_view target_name(Target target) {
  return target == Target::Cpu ? "cpu" : "cuda";
}

std::string kernel_api_text(Target target) {
  std::string stream = target == Target::Cuda ? ", void* stream" : "";
  return fmt::format(
      "// Bytes of scratch memory a run needs at these dims (the arena, 64-byte aligned).\n"
      "extern \"C\" int64_t eqfuse_arena_bytes(const int64_t* dims);\n"
      "// Number of run-time dims (the order of `dims`).\n"
      "extern \"C\" int eqfuse_num_dims(void);\n"
      "// Runs the model: inputs and outputs in the model's order, the weights blob and an arena\n"
      "// of eqfuse_arena_bytes(dims) bytes{}. Returns 0, or an error code (CUDA: -2 when a\n"
      "// buffer, input, output, weights or arena, is not 16-byte aligned; cudaMalloc's are).\n"
      "extern \"C\" int eqfuse_run(const int64_t* dims, const void* const* inputs,\n"
      "                            void* const* outputs, const void* weights, void* arena{});\n"
      "// The model's interface: inputs and outputs (name, ONNX dtype code, rank, dims at a\n"
      "// binding of the run-time dims), where each run-time dim is read (input, axis), and the\n"
      "// size of the weights blob.\n"
      "extern \"C\" int eqfuse_num_inputs(void);\n"
      "extern \"C\" const char* eqfuse_input_name(int k);\n"
      "extern \"C\" int eqfuse_input_dtype(int k);\n"
      "extern \"C\" int eqfuse_input_rank(int k);\n"
      "extern \"C\" void eqfuse_input_dims(int k, const int64_t* dims, int64_t* out);\n"
      "extern \"C\" int eqfuse_num_outputs(void);\n"
      "extern \"C\" const char* eqfuse_output_name(int k);\n"
      "extern \"C\" int eqfuse_output_dtype(int k);\n"
      "extern \"C\" int eqfuse_output_rank(int k);\n"
      "extern \"C\" void eqfuse_output_dims(int k, const int64_t* dims, int64_t* out);\n"
      "extern \"C\" const char* eqfuse_dim_name(int d);\n"
      "extern \"C\" int eqfuse_dim_source(int d, int* input, int* axis);\n"
      "extern \"C\" int64_t eqfuse_weights_bytes(void);\n"
      "// Weights that are not floating point (indices, masks): their offset in the weights blob\n"
      "// (returned), size, and bytes (null where the tree does not hold them: write zeros). A "
      "run\n"
      "// with seeded weights keeps them, since random bits make no valid index.\n"
      "extern \"C\" int eqfuse_num_fixed_weights(void);\n"
      "extern \"C\" int64_t eqfuse_fixed_weight(int k, int64_t* bytes, const unsigned char** "
      "data);\n"
      "// What f32 weights and intermediates are stored in (ONNX dtype code: 1 f32, 10 f16, 16\n"
      "// bf16; eqfuse compile --precision), and the tolerance the outputs are checked at.\n"
      "extern \"C\" int eqfuse_precision(void);\n"
      "extern \"C\" void eqfuse_tolerance(double* rtol, double* atol);\n"
      "{}",
      target == Target::Cuda ? " (all device pointers), on `stream`" : "", stream,
      target == Target::Cuda
          ? "// The same run with each stage timed (CUDA events): stage_ms gets one time per "
            "stage.\n"
            "extern \"C\" int eqfuse_num_stages(void);\n"
            "extern \"C\" int eqfuse_profile(const int64_t* dims, const void* const* inputs,\n"
            "                                void* const* outputs, const void* weights, void* "
            "arena,\n                                void* stream, float* stage_ms);\n"
          : "// The same run with each stage timed (the clock): stage_ms gets one time per "
            "stage.\n"
            "extern \"C\" int eqfuse_num_stages(void);\n"
            "extern \"C\" int eqfuse_profile(const int64_t* dims, const void* const* inputs,\n"
            "                                void* const* outputs, const void* weights, void* "
            "arena,\n                                float* stage_ms);\n");
}

namespace {

// The unit of print_kernels (in `host`), or with `hosted` the two of print_cuda_hosted
// (`runtime`: its host code built against the CUDA runtime).
HostedCuda print_units(const KernelPlan& plan, Target target, bool hosted, bool runtime = false) {
  const ir::Graph& g = plan.graph;
  std::string header =
      fmt::format("// Generated by eqfuse for target {}: {} stages in {} kernels. Do not edit.\n",
                  target_name(target), plan.stages.size(), plan.steps.size());
  HostedCuda units;
  std::string& text = units.host;
  text = header + prelude_text();
  if (target == Target::Cuda)
    text +=
        "\nstatic unsigned eqf_grid(int64_t n) {\n  int64_t b = (n + 255) / 256;\n"
        "  return (unsigned)(b < 65536 ? b : 65536);\n}\n";
  text += "\n" + dims_struct(plan);
  Writer w(plan, target, hosted, runtime);
  std::string functions, calls;
  for (size_t i = 0; i < plan.stages.size(); ++i) w.stage(i, functions, calls);
  if (w.uses_mma) functions = kMmaHelpers + functions;
  if (hosted) {
    units.device = header + prelude_text() + "\n" + dims_struct(plan) + functions;
    text += kHostTable;
  }
  if (w.uses_cblas) text += "#if defined(EQFUSE_CBLAS)\n#include <cblas.h>\n#endif\n\n";
  if (w.uses_cublas && !hosted)
    text +=
        "#include <cublas_v2.h>\n\n// One cuBLAS handle per process, on the run's stream.\n"
        "static cublasHandle_t eqf_cublas(cudaStream_t st) {\n  static cublasHandle_t h = 0;\n"
        "  if (!h) cublasCreate(&h);\n  cublasSetStream(h, st);\n  return h;\n}\n\n";
  // Hosted host code reaches these libraries itself, on the default stream (the table's launches
  // use it too).
  const bool hosted_libraries = hosted && (w.uses_cublaslt || w.uses_cudnn);
  if (hosted_libraries) text += "#include <cuda_runtime.h>\n";
  if (w.uses_cublaslt) text += kCublasLtRuntime;
  if (w.uses_cudnn) text += kCudnnRuntime;
  if (!hosted) text += functions;

  std::string dims;
  for (size_t k = 0; k < plan.dims.size(); ++k)
    dims += fmt::format("  const int64_t d{} = dims[{}];  // {}\n  (void)d{};\n", k, k,
                        plan.dims[k], k);
  auto sym = [&](const ir::SymInt& x) {
    return x.c_expr([&](const std::string& s) { return plan.dim_ident(s); });
  };
  text +=
      fmt::format("extern \"C\" int eqfuse_num_dims(void) {{ return {}; }}\n\n", plan.dims.size());
  text += "extern \"C\" int64_t eqfuse_arena_bytes(const int64_t* dims) {\n  (void)dims;\n" + dims +
          "  return " + sym(plan.arena.total) + ";\n}\n\n";
  text += model_description(plan);
  std::string stream = target == Target::Cuda ? ", void* stream" : "";
  if (hosted)
    text +=
        "extern \"C\" int eqfuse_run_hosted(const int64_t* dims, const void* const* inputs,\n"
        "                                   void* const* outputs, const void* weights, void* "
        "arena,\n                                   const EqfHost* H) {\n";
  else if (target == Target::Cuda)
    text +=
        "// With `prof` (stages + 1 events), an event is recorded before each stage and at the "
        "end.\nstatic int eqf_run(const int64_t* dims, const void* const* inputs, void* const* "
        "outputs,\n                   const void* weights, void* arena, void* stream, "
        "cudaEvent_t* prof) {\n";
  else
    text +=
        "#include <chrono>\n\nstatic double eqf_clock_ms(void) {\n"
        "  return std::chrono::duration<double, std::milli>(\n"
        "             std::chrono::steady_clock::now().time_since_epoch())\n      .count();\n}\n\n"
        "// With `prof` (stages + 1 entries), the clock is read before each stage and at the end.\n"
        "static int eqf_run(const int64_t* dims, const void* const* inputs, void* const* outputs,\n"
        "                   const void* weights, void* arena, double* prof) {\n";
  text += "  (void)dims;\n  (void)inputs;\n  (void)outputs;\n  (void)weights;\n  (void)arena;\n";
  if (w.aligned_vectors) {  // every buffer 16-byte aligned, or no run
    std::string bits = "(uintptr_t)weights | (uintptr_t)arena";
    for (size_t k = 0; k < g.inputs().size(); ++k)
      bits += fmt::format(" | (uintptr_t)inputs[{}]", k);
    for (size_t k = 0; k < g.outputs().size(); ++k)
      bits += fmt::format(" | (uintptr_t)outputs[{}]", k);
    text += fmt::format("  if (({}) & 15) return -2;\n", bits);
  }
  text += dims;
  text += "  EqfDims D;\n";
  for (size_t k = 0; k < std::max<size_t>(plan.dims.size(), 1); ++k)
    text += fmt::format("  D.d[{}] = {};\n", k, k < plan.dims.size() ? fmt::format("d{}", k) : "0");
  if (target == Target::Cuda && !hosted) text += "  cudaStream_t st = (cudaStream_t)stream;\n";
  if (hosted_libraries) text += "  cudaStream_t st = 0;  // the default stream\n";
  // The buffers the calls name (a contraction's value kept in registers for its epilogue is
  // none of them).
  std::set<size_t> named;
  static const std::regex buffer_name(R"(\bp(\d+)\b)");
  for (auto it = std::sregex_iterator(calls.begin(), calls.end(), buffer_name);
       it != std::sregex_iterator(); ++it)
    named.insert(std::stoul((*it)[1]));
  bool any_arena = false, any_weight = false;
  for (size_t b : named) {
    any_arena = any_arena || plan.buffers.at(b).storage == Storage::Arena;
    any_weight = any_weight || plan.buffers.at(b).storage == Storage::Weight;
  }
  if (any_arena) text += "  unsigned char* A = (unsigned char*)arena;\n";
  if (any_weight) text += "  const unsigned char* W = (const unsigned char*)weights;\n";
  for (size_t b = 0; b < plan.buffers.size(); ++b) {
    if (!named.count(b)) continue;
    const Buffer& buf = plan.buffers[b];
    std::string t = storage_type(buf.dtype);
    std::string where;
    switch (buf.storage) {
      case Storage::Input:
        where = fmt::format("(const {}*)inputs[{}]", t, buf.index);
        break;
      case Storage::Output:
        where = fmt::format("({}*)outputs[{}]", t, buf.index);
        break;
      case Storage::Weight:
        where = fmt::format("(const {}*)(W + {})", t, buf.offset);
        break;
      case Storage::Arena:
        where = fmt::format("({}*)(A + {})", t, sym(plan.arena.slot_offset[buf.index]));
        break;
    }
    bool ro = buf.storage == Storage::Input || buf.storage == Storage::Weight;
    text += fmt::format("  {}{}* p{} = {};  // {}\n  (void)p{};\n", ro ? "const " : "", t, b, where,
                        g.value(buf.value).name, b);
  }
  if (target == Target::Cpu)
    text += "#pragma omp parallel\n  {\n" + calls + "  }\n";
  else
    text += calls;
  if (target == Target::Cpu) {
    text += fmt::format(
        "  if (prof) prof[{0}] = eqf_clock_ms();\n  return 0;\n}}\n\n"
        "extern \"C\" int eqfuse_run(const int64_t* dims, const void* const* inputs,\n"
        "                            void* const* outputs, const void* weights, void* arena) {{\n"
        "  return eqf_run(dims, inputs, outputs, weights, arena, 0);\n}}\n\n"
        "extern \"C\" int eqfuse_num_stages(void) {{ return {0}; }}\n\n"
        "extern \"C\" int eqfuse_profile(const int64_t* dims, const void* const* inputs,\n"
        "                                void* const* outputs, const void* weights, void* arena,\n"
        "                                float* stage_ms) {{\n"
        "  double t[{1}];\n"
        "  int rc = eqf_run(dims, inputs, outputs, weights, arena, t);\n"
        "  for (int k = 0; k < {0}; ++k) stage_ms[k] = (float)(t[k + 1] - t[k]);\n"
        "  return rc;\n}}\n",
        plan.stages.size(), plan.stages.size() + 1);
    return units;
  }
  if (hosted) {
    text += fmt::format("  if (H->record) H->record(H->ctx, {});\n  return 0;\n}}\n",
                        plan.stages.size());
    text += fmt::format("\nextern \"C\" int eqfuse_num_stages(void) {{ return {}; }}\n",
                        plan.stages.size());
    return units;
  }
  text += fmt::format("  if (prof) cudaEventRecord(prof[{}], st);\n", plan.stages.size());
  text += "  return (int)cudaGetLastError();\n}\n\n";
  text +=
      "extern \"C\" int eqfuse_run(const int64_t* dims, const void* const* inputs,\n"
      "                            void* const* outputs, const void* weights, void* arena,\n"
      "                            void* stream) {\n"
      "  return eqf_run(dims, inputs, outputs, weights, arena, stream, 0);\n}\n\n";
  text += fmt::format(
      "extern \"C\" int eqfuse_num_stages(void) {{ return {}; }}\n\n"
      "extern \"C\" int eqfuse_profile(const int64_t* dims, const void* const* inputs,\n"
      "                                void* const* outputs, const void* weights, void* arena,\n"
      "                                void* stream, float* stage_ms) {{\n"
      "  cudaEvent_t ev[{}];\n"
      "  for (int k = 0; k < {}; ++k) cudaEventCreate(&ev[k]);\n"
      "  int rc = eqf_run(dims, inputs, outputs, weights, arena, stream, ev);\n"
      "  cudaEventSynchronize(ev[{}]);\n"
      "  for (int k = 0; k < {}; ++k) cudaEventElapsedTime(&stage_ms[k], ev[k], ev[k + 1]);\n"
      "  for (int k = 0; k < {}; ++k) cudaEventDestroy(ev[k]);\n"
      "  return rc;\n}}\n",
      plan.stages.size(), plan.stages.size() + 1, plan.stages.size() + 1, plan.stages.size(),
      plan.stages.size(), plan.stages.size() + 1);
  return units;
}

}  // namespace

std::string print_kernels(const KernelPlan& plan, Target target) {
  return print_units(plan, target, false).host;
}

std::vector<StageForm> stage_forms(const KernelPlan& plan, Target target) {
  Writer w(plan, target);
  std::string functions, calls;
  for (size_t i = 0; i < plan.stages.size(); ++i) w.stage(i, functions, calls);
  return w.forms;
}

HostedCuda print_cuda_hosted(const KernelPlan& plan, bool runtime) {
  return print_units(plan, Target::Cuda, true, runtime);
}

}  // namespace eqfuse::codegen
