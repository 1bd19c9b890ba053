// `eqfuse run MODEL`: runs a model in the reference interpreter. With --test-data (ONNX layout:
// input_K.pb, output_K.pb) it checks the outputs against the expected ones; inputs may also
// come from --input NAME=FILE.pb or be made up (random_inputs.h), at the sizes --dim NAME=VALUE
// gives symbolic dims (else the model's hints, else defaults). Exit 0 all outputs match,
// 1 a mismatch, 2 bad input or usage (and --backend cuda without a GPU), 3 an op or missing
// weights that stop execution (--seed-weights makes them up instead: random_inputs.h). With
// --backend cpu the generated C++ twin runs instead, with
// --backend cuda the generated CUDA (NVRTC, on GPU 0); --precision f16|bf16 builds either
// storing weights and intermediates at 16 bits and checks it against the f32 interpreter.
#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "codegen/cpu_backend.h"
#include "codegen/cuda_backend.h"
#include "frontend/onnx_import.h"
#include "frontend/test_data.h"
#include "ir/interpreter.h"
#include "support/error.h"
#include "tools/command.h"
#include "tools/model_summary.h"
#include "tools/precision_check.h"
#include "tools/progress_line.h"
#include "tools/random_inputs.h"

namespace eqfuse::tools {
namespace {

namespace fs = std::filesystem;

struct RunOptions {
  std::string model;
  std::string test_data;
  std::vector<std::string> inputs;
  std::vector<std::string> dims;
  std::string output_dir;
  double rtol = -1;  // unset: 1e-3, or the precision's
  double atol = -1;  // unset: 1e-5, or the precision's
  std::string precision = "f32";
  uint64_t seed = 0;
  bool seed_weights = false;
  bool json = false;
  std::string backend = "interpreter";
};

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

int run_model(RunOptions opt) {
  if (!opt.test_data.empty() && !opt.inputs.empty()) {
    throw Error("give inputs either with --test-data or with --input, not both");
  }
  codegen::PlanOptions plan_options;
  plan_options.precision = codegen::parse_precision(opt.precision);
  const bool lowered = plan_options.precision != ir::DType::f32;
  if (lowered && opt.backend == "interpreter")
    throw Error("--precision " + opt.precision +
                " applies to generated code: use it with --backend cpu or cuda (the interpreter "
                "computes the model's own dtypes)");
  auto [precision_rtol, precision_atol] = codegen::precision_tolerance(plan_options.precision);
  if (opt.rtol < 0) opt.rtol = lowered ? precision_rtol : 1e-3;
  if (opt.atol < 0) opt.atol = lowered ? precision_atol : 1e-5;
  auto t0 = std::chrono::steady_clock::now();
  ir::Graph graph = frontend::import_onnx(opt.model);
  double import_ms = ms_since(t0);

  size_t seeded_weights = 0;
  if (auto missing = missing_weight_files(graph); !missing.empty()) {
    if (!opt.seed_weights)
      throw Error(fmt::format("{}: cannot run: the weights are missing ({} not found); this is a "
                              "structure-only model (eqfuse info works on it; --seed-weights "
                              "runs it at made-up weights)",
                              opt.model, missing.front()),
                  Error::Kind::Unsupported);
    seeded_weights = seed_missing_weights(graph, opt.seed);
  }
  if (auto opaque = opaque_node_labels(graph); !opaque.empty()) {
    std::string list;
    for (size_t i = 0; i < opaque.size() && i < 5; ++i) list += (i ? ", " : "") + opaque[i];
    throw Error(fmt::format("{}: cannot run: {} node(s) use ops the interpreter does not have: {}",
                            opt.model, opaque.size(), list),
                Error::Kind::Unsupported);
  }

  std::vector<frontend::NamedTensor> given;
  std::vector<frontend::NamedTensor> expected;
  std::string source = "random";
  if (!opt.test_data.empty()) {
    frontend::TestDataSet set = frontend::read_test_data_set(opt.test_data);
    given = std::move(set.inputs);
    expected = std::move(set.outputs);
    source = "test data";
  }
  for (const auto& spec : opt.inputs) {
    auto eq = spec.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw Error(fmt::format("--input '{}': expected NAME=FILE.pb", spec));
    }
    frontend::NamedTensor t = frontend::read_tensor_file(spec.substr(eq + 1));
    t.name = spec.substr(0, eq);
    if (!graph.find_value(t.name))
      throw Error(fmt::format("--input: the model has no input '{}'", t.name));
    given.push_back(std::move(t));
    source = "files";
  }
  std::map<std::string, int64_t> bound = parse_dim_options(opt.dims);
  std::map<std::string, DimChoice> dims;
  std::vector<ir::Tensor> inputs;
  if (given.empty() && !graph.inputs().empty()) {
    dims = choose_dims(graph, bound, dim_hints_from_test_data(graph, opt.model));
    inputs = random_inputs(graph, opt.seed, dims);
  } else {
    inputs = frontend::bind_inputs(graph, given);
    // The inputs fix the dims; --dim may only agree with them.
    for (size_t i = 0; i < inputs.size(); ++i) {
      const ir::Value& v = graph.value(graph.inputs()[i]);
      if (!v.type.shape.has_rank() || v.type.shape.rank() != inputs[i].rank()) continue;
      for (size_t k = 0; k < inputs[i].rank(); ++k) {
        const std::string& name = v.type.shape[k].symbol_name();
        if (name.empty() || v.type.shape[k].is_static()) continue;
        int64_t got = inputs[i].dims()[k];
        if (auto it = bound.find(name); it != bound.end() && it->second != got) {
          throw Error(fmt::format("--dim {}={}: input '{}' has {} = {}", name, it->second, v.name,
                                  name, got));
        }
        dims.emplace(name, DimChoice{got, source});
      }
    }
  }
  if (!expected.empty() && expected.size() != graph.outputs().size()) {
    throw Error(fmt::format("{}: {} expected outputs for a model with {} outputs", opt.test_data,
                            expected.size(), graph.outputs().size()));
  }

  // The backend: the reference interpreter, or generated code built on first use and cached:
  // the C++ twin, or CUDA (NVRTC and the GPU, codegen/cuda_backend.h).
  std::unique_ptr<codegen::CpuModule> twin;
  std::unique_ptr<codegen::CudaModule> gpu;
  const codegen::KernelPlan* plan = nullptr;
  std::string generated;  // what ran, for the summary line
  bool cached = false;
  double build_ms = 0;
  if (opt.backend == "cpu" || opt.backend == "cuda") {
    auto tb = std::chrono::steady_clock::now();
    ProgressLine line;
    auto progress = [&line](const std::string& what) { line.update(what); };
    if (opt.backend == "cpu") {
      codegen::CpuBuildInfo build;
      twin = codegen::CpuModule::build(graph, &build, progress, plan_options);
      plan = &twin->plan();
      generated = "C++ twin";
      cached = build.cached;
    } else {
      codegen::CudaBuildInfo build;
      try {
        gpu = codegen::CudaModule::build(graph, &build, progress, plan_options);
      } catch (const Error& e) {
        if (e.kind() != Error::Kind::BadInput) throw;
        throw Error(
            std::string("--backend cuda: ") + e.what() + "; use --backend cpu for the C++ twin",
            Error::Kind::BadInput);
      }
      plan = &gpu->plan();
      generated = "CUDA on " + build.gpu + " (" + build.arch + ")";
      for (const std::string& library : build.artifacts.host_libraries) generated += ", " + library;
      if (!build.artifacts.host_libraries_refused.empty())
        std::cerr << "warning: " << build.artifacts.host_libraries_refused << "\n";
      cached = build.artifacts.cached;
    }
    build_ms = ms_since(tb);
  } else if (opt.backend != "interpreter") {
    throw Error("--backend " + opt.backend + ": expected interpreter, cpu or cuda");
  }
  auto t1 = std::chrono::steady_clock::now();
  std::vector<ir::Tensor> outputs = twin  ? twin->run(inputs)
                                    : gpu ? gpu->run(inputs)
                                          : ir::Interpreter(graph).run(inputs);
  double run_ms = ms_since(t1);
  // A lower precision is an approximation: without expected outputs it is compared with the
  // f32 model in the interpreter.
  std::string expected_from = "test data";
  if (lowered && expected.empty()) {
    for (ir::Tensor& t : ir::Interpreter(graph).run(inputs)) expected.push_back({"", std::move(t)});
    expected_from = "the f32 interpreter";
  }

  if (!opt.output_dir.empty()) {
    fs::create_directories(opt.output_dir);
    for (size_t k = 0; k < outputs.size(); ++k) {
      frontend::write_tensor_file(fs::path(opt.output_dir) / fmt::format("output_{}.pb", k),
                                  graph.value(graph.outputs()[k]).name, outputs[k]);
    }
  }

  bool all_match = true;
  nlohmann::json jout = nlohmann::json::array();
  if (!opt.json) {
    if (plan)
      std::cout << fmt::format(
          "{}: {} inputs ({}), import {:.1f} ms, {}{} {} in {:.1f} ms "
          "({} stages), run {:.1f} ms\n",
          opt.model, inputs.size(), source, import_ms, generated,
          lowered
              ? fmt::format(" at {} (weights and intermediates stored at 16 bits)", opt.precision)
              : "",
          cached ? "found in the cache" : "built", build_ms, plan->stages.size(), run_ms);
    else
      std::cout << fmt::format("{}: {} inputs ({}), import {:.1f} ms, interpreter {:.1f} ms\n",
                               opt.model, inputs.size(), source, import_ms, run_ms);
    if (seeded_weights)
      std::cout << fmt::format(
          "weights {} made up from seed {} (--seed-weights: the outputs mean nothing)\n",
          seeded_weights, opt.seed);
    if (!dims.empty()) {
      std::string line;
      for (const auto& [name, c] : dims)
        line += fmt::format("{}{}={} ({})", line.empty() ? "" : ", ", name, c.size, c.source);
      std::cout << "dims " << line << "\n";
    }
  }
  for (size_t k = 0; k < outputs.size(); ++k) {
    const std::string& name = graph.value(graph.outputs()[k]).name;
    nlohmann::json j = type_json(outputs[k].type());
    j["name"] = name;
    std::string line = fmt::format("output {} {}", name, outputs[k].type().str());
    if (!expected.empty()) {
      frontend::Comparison c =
          frontend::compare_tensors(outputs[k], expected[k].tensor, opt.rtol, opt.atol);
      all_match = all_match && c.match;
      j["match"] = c.match;
      j["max_abs_error"] = c.max_abs_error;
      j["max_rel_error"] = c.max_rel_error;
      j["mismatches"] = c.mismatches;
      if (!c.same_shape) {
        j["expected"] = type_json(expected[k].tensor.type());
        line += fmt::format(": expected {}  MISMATCH", expected[k].tensor.type().str());
      } else {
        line += fmt::format(": {}  {}", c.str(), c.match ? "ok" : "MISMATCH");
        if (!c.match && c.worst_index >= 0) {
          line += fmt::format(" (first at element {}: got {}, expected {})", c.worst_index,
                              outputs[k].get(c.worst_index), expected[k].tensor.get(c.worst_index));
        }
      }
    } else {
      double lo = 0, hi = 0;
      for (int64_t i = 0; i < outputs[k].numel(); ++i) {
        double v = outputs[k].get(i);
        lo = i == 0 ? v : std::min(lo, v);
        hi = i == 0 ? v : std::max(hi, v);
      }
      j["min"] = lo;
      j["max"] = hi;
      line += fmt::format(": min {:.4g}, max {:.4g}", lo, hi);
    }
    jout.push_back(j);
    if (!opt.json) std::cout << line << "\n";
  }
  if (opt.json) {
    nlohmann::json j;
    j["model"] = opt.model;
    j["inputs_from"] = source;
    j["import_ms"] = import_ms;
    j["run_ms"] = run_ms;
    j["backend"] = opt.backend;
    j["seeded_weights"] = seeded_weights;
    if (plan) {
      j["precision"] = opt.precision;
      j["build_ms"] = build_ms;
      j["build_cached"] = cached;
      j["stages"] = plan->stages.size();
    }
    nlohmann::json jd = nlohmann::json::object();
    for (const auto& [name, c] : dims) jd[name] = {{"size", c.size}, {"source", c.source}};
    j["dims"] = jd;
    j["outputs"] = jout;
    if (!expected.empty()) {
      j["expected_from"] = expected_from;
      j["rtol"] = opt.rtol;
      j["atol"] = opt.atol;
      j["match"] = all_match;
    }
    std::cout << j.dump(2) << "\n";
  } else if (!expected.empty()) {
    std::cout << fmt::format("{} {} (rtol {}, atol {})\n",
                             all_match ? "all outputs match" : "MISMATCH against", expected_from,
                             opt.rtol, opt.atol);
  }
  return all_match ? 0 : 1;
}

RegisterCommand run_command{
    {"run", "Run a model in the reference interpreter, optionally checking it against test data",
     [](CLI::App& app) {
       auto opt = std::make_shared<RunOptions>();
       app.add_option("model", opt->model, "ONNX model file")->required();
       app.add_option("--test-data", opt->test_data,
                      "Folder with input_K.pb (and output_K.pb to compare against)");
       app.add_option("--input", opt->inputs, "NAME=FILE.pb: one input as a TensorProto file");
       app.add_option("--dim", opt->dims,
                      "NAME=SIZE: the size of a symbolic dim for made-up inputs (repeatable)");
       app.add_option("--output-dir", opt->output_dir, "Write the outputs there as output_K.pb");
       app.add_option("--rtol", opt->rtol,
                      "Relative tolerance (default 1e-3, or the --precision's)");
       app.add_option("--atol", opt->atol,
                      "Absolute tolerance (default 1e-5, or the --precision's)");
       app.add_option("--precision", opt->precision,
                      "f32 (default), f16 or bf16, with --backend cpu or cuda: generated code "
                      "stores weights and intermediates at 16 bits (compared with the f32 "
                      "interpreter when no expected outputs are given)");
       app.add_option("--seed", opt->seed, "Seed of the random inputs (default 0)");
       app.add_flag("--seed-weights", opt->seed_weights,
                    "Run a structure-only model (its weights file absent) at weights made up "
                    "from --seed: for timing and comparing backends");
       app.add_flag("--json", opt->json, "Print one JSON document on stdout");
       app.add_option("--backend", opt->backend,
                      "interpreter (default), cpu (the generated C++ twin, built with the "
                      "system compiler on first use), cuda (the generated CUDA, built with NVRTC "
                      "on first use; needs a GPU)");
       app.footer(
           "Examples:\n  eqfuse run examples/models/mlp/model.onnx --test-data "
           "examples/models/mlp/test_data_set_0\n  eqfuse run out.onnx --backend cpu --dim batch=8 "
           "--seed 1\n  eqfuse run model.onnx --input x=x.pb --output-dir outs");
       return CommandMain([opt] {
         try {
           return run_model(*opt);
         } catch (const Error& e) {
           if (opt->json) std::cout << nlohmann::json{{"error", e.what()}}.dump(2) << "\n";
           throw;
         }
       });
     }}};

}  // namespace
}  // namespace eqfuse::tools
