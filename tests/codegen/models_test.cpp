// The C++ twin of every shared model against its test data (rtol 1e-3, atol 1e-4): the
// original graph (one kernel per op) and the optimized one (fused kernels), the optimized one
// also at --precision bf16 (at bf16's tolerance, codegen::precision_tolerance), and both test
// sets of every dynamic-batch model from one build. The arena plan of each is checked at several
// bindings of its dims: no two live values share memory except a stage written in place over an
// operand it reads for the last time. The CUDA source of six optimized models runs on the CPU
// emulator against the test data too.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>

#include "codegen/cpu_backend.h"
#include "codegen/printer.h"
#include "cuda_emulation.h"
#include "frontend/onnx_import.h"
#include "frontend/test_data.h"
#include "ir/interpreter.h"
#include "optimizer/optimize.h"
#include "tests/test_data.h"

namespace fs = std::filesystem;
using namespace eqfuse;

namespace {

void check_against(const codegen::CpuModule& twin, const ir::Graph& g, const fs::path& set,
                   ir::DType precision = ir::DType::f32) {
  auto [rtol, atol] =
      precision == ir::DType::f32 ? std::pair{1e-3, 1e-4} : codegen::precision_tolerance(precision);
  frontend::TestDataSet data = frontend::read_test_data_set(set);
  std::vector<ir::Tensor> inputs = frontend::bind_inputs(g, data.inputs);
  std::vector<ir::Tensor> outputs = twin.run(inputs);
  REQUIRE(outputs.size() == data.outputs.size());
  for (size_t k = 0; k < outputs.size(); ++k) {
    frontend::Comparison c =
        frontend::compare_tensors(outputs[k], data.outputs[k].tensor, rtol, atol);
    INFO(set.string() << " output " << k << " at " << ir::dtype_name(precision) << ": " << c.str());
    CHECK(c.match);
  }
}

// Every intermediate value of the graph as an output: localizes a wrong stage.
void check_every_value(const ir::Graph& original, const fs::path& set) {
  ir::Graph g = original;
  std::vector<ir::ValueId> outs;
  for (const ir::Node& n : g.nodes())
    for (ir::ValueId v : n.outputs)
      if (g.value(v).type.dtype == ir::DType::f32 && !g.value(v).sym_value) outs.push_back(v);
  g.outputs() = outs;
  frontend::TestDataSet data = frontend::read_test_data_set(set);
  std::vector<ir::Tensor> inputs = frontend::bind_inputs(g, data.inputs);
  auto twin = codegen::CpuModule::build(g);
  std::vector<ir::Tensor> got = twin->run(inputs);
  std::vector<ir::Tensor> want = ir::Interpreter(g).run(inputs);
  for (size_t k = 0; k < got.size(); ++k) {
    frontend::Comparison c = frontend::compare_tensors(got[k], want[k], 1e-3, 1e-4);
    if (!c.match) {
      const ir::Value& v = g.value(outs[k]);
      FAIL("first wrong value: " << v.name << " " << v.type.str() << " from "
                                 << g.node(v.producer).op_type << ": " << c.str());
    }
  }
}

// The plan's arena at several bindings of its dims.
void check_memory(const codegen::KernelPlan& plan) {
  for (int64_t size : {1, 3, 64}) {
    std::map<std::string, int64_t> dims;
    for (const std::string& d : plan.dims) dims[d] = size;
    auto why = codegen::check_buffer_plan(plan.arena, plan.lifetimes, dims);
    INFO(why.value_or(""));
    CHECK_FALSE(why.has_value());
  }
}

bool has_weights(const ir::Graph& g) {
  for (ir::ValueId w : g.weights())
    if (g.value(w).external && !fs::exists(g.value(w).external->file)) return false;
  return true;
}

}  // namespace

TEST_CASE("the C++ twin of every shared model matches its test data, before and after optimize") {
  fs::path root = test::shared_dir() / "models";
  size_t checked = 0;
  for (const auto& entry : fs::directory_iterator(root)) {
    fs::path set = entry.path() / "test_data_set_0";
    if (!fs::exists(entry.path() / "model.onnx") || !fs::exists(set)) continue;
    ir::Graph g = frontend::import_onnx(entry.path() / "model.onnx");
    if (!has_weights(g)) continue;
    SECTION(entry.path().filename().string()) {
      check_against(*codegen::CpuModule::build(g), g, set);
      optimizer::OptimizeOptions opt;
      opt.verify = false;  // the test data check is the verification here
      ir::Graph fused = optimizer::optimize(g, opt).graph;
      check_memory(codegen::make_plan(g));
      check_memory(codegen::make_plan(fused));
      check_against(*codegen::CpuModule::build(fused), fused, set);
      codegen::PlanOptions bf16;
      bf16.precision = ir::DType::bf16;
      check_against(*codegen::CpuModule::build(fused, nullptr, {}, bf16), fused, set,
                    ir::DType::bf16);
    }
    ++checked;
  }
  CHECK(checked >= 10);
}

TEST_CASE("the CUDA source of shared models, on the CPU emulator, matches their test data") {
  // The optimized graph's CUDA kernels and run function (cuBLAS a loop, each launch one block
  // of fibers; cuda_emulation.h), at the twin's tolerance: the convolution tiles, attention and
  // warp-row stages at the shapes real models give them; and the convolution models with every
  // convolution through cuDNN (the emulator's loops) and its finish kernel; and two transformers
  // at 16 bits, whose attention runs on tensor cores (the emulator's mma.sync), at the
  // precision's tolerance. (resnet18 in its own kernels passes too, but takes over two minutes
  // here.)
  struct Run {
    const char* name;
    const char* form;
    ir::DType precision = ir::DType::f32;
  };
  const Run runs[] = {{"mlp_block", "kernels"},
                      {"attention_block", "kernels"},
                      {"bert_tiny", "kernels"},
                      {"gpt_tiny", "kernels"},
                      {"squeezenet1_1", "kernels"},
                      {"mobilenet_v2", "kernels"},
                      {"squeezenet1_1", "cudnn"},
                      {"mobilenet_v2", "cudnn"},
                      {"resnet18", "cudnn"},
                      {"bert_tiny", "kernels", ir::DType::bf16},
                      {"gpt_tiny", "kernels", ir::DType::f16}};
  for (const auto& [name, form, precision] : runs) {
    fs::path dir = test::shared_dir() / "models" / name;
    if (!fs::exists(dir / "test_data_set_0")) continue;
    SECTION(std::string(name) + ", convolutions in " + form + ", " +
            std::string(ir::dtype_name(precision))) {
      ir::Graph g = frontend::import_onnx(dir / "model.onnx");
      optimizer::OptimizeOptions opt;
      opt.verify = false;  // the test data check is the verification here
      ir::Graph fused = optimizer::optimize(g, opt).graph;
      frontend::TestDataSet data = frontend::read_test_data_set(dir / "test_data_set_0");
      codegen::PlanOptions options;
      options.precision = precision;
      std::vector<ir::Tensor> outputs = testing::run_cuda_emulated(
          fused, frontend::bind_inputs(fused, data.inputs), options, form);
      REQUIRE(outputs.size() == data.outputs.size());
      auto [rtol, atol] = codegen::precision_tolerance(precision);
      for (size_t k = 0; k < outputs.size(); ++k) {
        frontend::Comparison c =
            frontend::compare_tensors(outputs[k], data.outputs[k].tensor, rtol, atol);
        INFO(name << " output " << k << ": " << c.str());
        CHECK(c.match);
      }
    }
  }
}

TEST_CASE("generated sources are deterministic") {
  fs::path model = test::shared_dir() / "models" / "attention_block" / "model.onnx";
  ir::Graph a = optimizer::optimize(frontend::import_onnx(model)).graph;
  ir::Graph b = optimizer::optimize(frontend::import_onnx(model)).graph;
  for (codegen::Target t : {codegen::Target::Cpu, codegen::Target::Cuda})
    CHECK(codegen::print_kernels(codegen::make_plan(a), t) ==
          codegen::print_kernels(codegen::make_plan(b), t));
}

TEST_CASE("the C++ twin of every dynamic model matches both test sets from one build") {
  fs::path root = test::shared_dir() / "models_dynamic";
  for (const auto& entry : fs::directory_iterator(root)) {
    if (!fs::exists(entry.path() / "model.onnx")) continue;
    SECTION(entry.path().filename().string()) {
      ir::Graph g = frontend::import_onnx(entry.path() / "model.onnx");
      if (std::getenv("EQFUSE_CODEGEN_LOCALIZE"))
        check_every_value(g, entry.path() / "test_data_set_0");
      check_memory(codegen::make_plan(g));
      auto twin = codegen::CpuModule::build(g);
      for (const char* set : {"test_data_set_0", "test_data_set_1"})
        check_against(*twin, g, entry.path() / set);
    }
  }
}
