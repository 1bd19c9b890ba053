// `eqfuse-bench MODEL... [--device NAME ...] [--json FILE] [--plot FILE.svg] [--runs N]
// [--ort DIR] [--gpu-results FILE] [--no-measure]`: eqfuse beside the original model and its peers,
// per model: kernels before and after, predicted time per device, optimization time, the measured
// CPU time of the generated C++ twin of the optimized model against the reference interpreter on
// the original (same inputs, outputs compared), and where ONNX Runtime is installed
// (onnxruntime-node, --ort DIR) its own optimized graph: kernels and CPU latency (a
// structure-only model runs everywhere at weights made up from a seed); where
// bench/gpu/run.sh has measured on a GPU, those figures (gpu_results.h). Prints a
// table, and writes JSON and an SVG bar chart on request. A MODEL is an .onnx file or a folder
// holding model.onnx. Exit 0 done (a model that fails is reported in its row), 1 a twin whose
// outputs differ from the interpreter's (after the table is written), 2 bad usage.
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "codegen/cpu_backend.h"
#include "cost/cost_model.h"
#include "frontend/onnx_export.h"
#include "frontend/onnx_import.h"
#include "frontend/test_data.h"
#include "ir/interpreter.h"
#include "optimizer/optimize.h"
#include "support/error.h"
#include "tools/eqfuse_bench/gpu_results.h"
#include "tools/eqfuse_bench/ort_peer.h"
#include "tools/eqfuse_bench/plot.h"
#include "tools/model_summary.h"
#include "tools/progress_line.h"
#include "tools/random_inputs.h"

namespace eqfuse::bench {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct Args {
  std::vector<std::string> models;
  std::vector<std::string> devices = {"h200"};
  std::string json, plot, ort, gpu_results;
  int runs = 5;
  bool no_measure = false;
};

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// The median wall time of `runs` calls (after one warm-up), in ms.
template <class F>
double median_ms(int runs, F&& f) {
  f();
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    auto t = Clock::now();
    f();
    ms.push_back(seconds_since(t) * 1e3);
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

// Files and folders removed when it goes out of scope, errors ignored.
struct RemovedOnExit {
  std::vector<fs::path> paths;
  ~RemovedOnExit() {
    std::error_code ignored;
    for (const fs::path& p : paths) fs::remove_all(p, ignored);
  }
};

fs::path model_file(const std::string& given) {
  fs::path p(given);
  if (fs::is_directory(p)) p /= "model.onnx";
  if (!fs::exists(p))
    throw Error("'" + given + "': no such model (an .onnx file or a folder with model.onnx)");
  return p;
}

// Inputs: the model's first test set where it has one, else random ones (tools/random_inputs.h).
std::vector<ir::Tensor> bench_inputs(const ir::Graph& graph, const fs::path& model) {
  fs::path set = model.parent_path() / "test_data_set_0";
  if (fs::exists(set / "input_0.pb"))
    return frontend::bind_inputs(graph, frontend::read_test_data_set(set).inputs);
  auto dims = tools::choose_dims(graph, {}, tools::dim_hints_from_test_data(graph, model));
  return tools::random_inputs(graph, 1, dims);
}

nlohmann::json bench_model(const Args& args, const fs::path& model, const std::string& progress,
                           tools::ProgressLine& line) {
  auto say = [&](const std::string& what) { line.update(progress + " " + what); };
  nlohmann::json row = {{"model", model.parent_path().filename().string()},
                        {"file", model.string()}};
  say("import");
  ir::Graph original = frontend::import_onnx(model);
  // A structure-only model runs at made-up weights (ONNX Runtime too, from a copy written with
  // them): its times are real, its outputs only compared between the interpreter and the twin.
  const bool seeded = !args.no_measure && !tools::missing_weight_files(original).empty() &&
                      tools::opaque_node_labels(original).empty();
  if (seeded) {
    say("seed weights");
    tools::seed_missing_weights(original, 1);
  }
  bool weights = tools::missing_weight_files(original).empty();
  bool runnable = weights && tools::opaque_node_labels(original).empty();
  row["weights"] = seeded ? "seeded" : weights ? "model" : "missing";

  say("optimize");
  optimizer::OptimizeOptions options;
  options.device = args.devices.front();
  options.verify = runnable;
  auto t0 = Clock::now();
  optimizer::OptimizeResult opt = optimizer::optimize(original, options);
  row["optimize_seconds"] = seconds_since(t0);
  row["verified"] = opt.report.verified;
  row["kernels_before"] = opt.report.kernels_before;
  row["kernels_after"] = opt.report.kernels_after;
  for (const std::string& device : args.devices) {
    cost::CostModel cost(cost::DeviceProfile::load(device));
    row["predicted_ms"][device] = {{"before", cost.graph_cost(original).ms()},
                                   {"after", cost.graph_cost(opt.graph).ms()}};
  }

  if (args.no_measure) return row;
  if (!runnable) {
    row["measured_note"] =
        weights ? "has ops the interpreter lacks" : "structure only (no weights)";
    return row;
  }
  std::vector<ir::Tensor> inputs = bench_inputs(original, model);
  say("interpreter");
  ir::Interpreter interpreter(original);
  std::vector<ir::Tensor> reference;
  row["interpreter_ms"] = median_ms(args.runs, [&] { reference = interpreter.run(inputs); });
  say("build the C++ twin");
  auto tb = Clock::now();
  codegen::CpuBuildInfo info;
  std::unique_ptr<codegen::CpuModule> twin = codegen::CpuModule::build(opt.graph, &info, say);
  row["twin_build_seconds"] = seconds_since(tb);
  row["twin_build_cached"] = info.cached;
  say("C++ twin");
  std::vector<ir::Tensor> got;
  double twin_ms = median_ms(args.runs, [&] { got = twin->run(inputs); });
  row["twin_ms"] = twin_ms;
  row["twin_speedup"] = row["interpreter_ms"].get<double>() / twin_ms;
  bool match = got.size() == reference.size();
  for (size_t k = 0; match && k < got.size(); ++k)
    match = frontend::compare_tensors(got[k], reference[k], 1e-3, 1e-4).match;
  row["twin_match"] = match;

  if (!args.ort.empty()) {
    say("ONNX Runtime");
    RemovedOnExit scratch;  // the seeded copy and ONNX Runtime's graph, whatever happens
    fs::path ort_model = model;
    if (seeded) {  // in a folder named as the model's, which names ONNX Runtime's graph too
      const fs::path dir = fs::temp_directory_path() / fmt::format("eqfuse-bench-{}", getpid());
      scratch.paths.push_back(dir);
      ort_model = dir / model.parent_path().filename() / "model.onnx";
      fs::create_directories(ort_model.parent_path());
      frontend::export_onnx(original, ort_model);
    }
    OrtResult ort = run_ort(args.ort, ort_model, args.runs);
    scratch.paths.push_back(ort.optimized);
    if (ort.ok) {
      row["ort"] = {
          {"kernels", optimizer::count_launching_ops(frontend::import_onnx(ort.optimized))},
          {"ms", ort.ms},
          {"twin_vs_ort", ort.ms / twin_ms}};
    } else {
      row["ort"] = {{"note", ort.note}};
    }
  }
  return row;
}

std::string cell(const nlohmann::json& row, const char* key, const char* format = "{:.2f}") {
  if (!row.contains(key) || row[key].is_null()) return "-";
  if (row[key].is_number_float()) return fmt::format(fmt::runtime(format), row[key].get<double>());
  return row[key].dump();
}

// A measured GPU figure at batch 1, or "-".
std::string gpu_cell(const nlohmann::json& row, const char* key, const char* format) {
  if (!row.contains("gpu")) return "-";
  const nlohmann::json& b1 = row["gpu"]["batches"]["1"];
  if (!b1.contains(key) || !b1[key].is_number()) return "-";
  return fmt::format(fmt::runtime(format), b1[key].get<double>());
}

void print_table(const nlohmann::json& rows, const std::string& device, bool ort, bool gpu) {
  std::cout << fmt::format(
      "{:<16} {:>7} {:>7} {:>7} {:>10} {:>10} {:>8} {:>10} {:>9} {:>8}{}{}\n", "model", "kernels",
      "eqfuse", "ORT", device + " ms", "eqfuse ms", "opt s", "interp ms", "twin ms", "twin x",
      ort ? fmt::format(" {:>8} {:>8}", "ORT ms", "ORT/twin") : "",
      gpu ? fmt::format(" {:>9} {:>9} {:>9}", "GPU ms", "compile", "comp/eqf") : "");
  for (const auto& r : rows) {
    if (r.contains("error")) {
      std::cout << fmt::format("{:<16} error: {}\n", r["model"].get<std::string>(),
                               r["error"].get<std::string>());
      continue;
    }
    const auto& p = r["predicted_ms"][device];
    std::string ort_kernels =
        r.contains("ort") && r["ort"].contains("kernels") ? r["ort"]["kernels"].dump() : "-";
    std::cout << fmt::format(
        "{:<16} {:>7} {:>7} {:>7} {:>10.4f} {:>10.4f} {:>8.2f} {:>10} {:>9} {:>8}",
        r["model"].get<std::string>(), r["kernels_before"].get<size_t>(),
        r["kernels_after"].get<size_t>(), ort_kernels, p["before"].get<double>(),
        p["after"].get<double>(), r["optimize_seconds"].get<double>(), cell(r, "interpreter_ms"),
        cell(r, "twin_ms"), cell(r, "twin_speedup", "{:.2f}x"));
    if (ort) {
      if (r.contains("ort") && r["ort"].contains("ms"))
        std::cout << fmt::format(" {:>8.2f} {:>7.2f}x", r["ort"]["ms"].get<double>(),
                                 r["ort"]["twin_vs_ort"].get<double>());
      else
        std::cout << fmt::format(" {:>8} {:>8}", "-", "-");
    }
    if (gpu)
      std::cout << fmt::format(" {:>9} {:>9} {:>9}", gpu_cell(r, "eqfuse_ms", "{:.4f}"),
                               gpu_cell(r, "compile_ms", "{:.4f}"),
                               gpu_cell(r, "compile_vs_eqfuse", "{:.2f}x"));
    if (r.contains("twin_match") && !r["twin_match"].get<bool>()) std::cout << "  TWIN MISMATCH";
    if (r.contains("weights") && r["weights"] == "seeded") std::cout << "  (seeded weights)";
    if (r.contains("measured_note"))
      std::cout << "  (" << r["measured_note"].get<std::string>() << ")";
    std::cout << "\n";
  }
}

int run(const Args& args) {
  nlohmann::json rows = nlohmann::json::array();
  std::string ort_note;
  if (!args.ort.empty() && !ort_available(args.ort, &ort_note))
    throw Error("--ort " + args.ort + ": " + ort_note);
  if (args.ort.empty())
    ort_note =
        "ONNX Runtime columns skipped: pass --ort DIR, a folder holding "
        "node_modules/onnxruntime-node (npm install --ignore-scripts onnxruntime-node)";
  // Measured GPU figures: --gpu-results FILE, else bench/gpu/results/gpu.json where it exists.
  std::string gpu_file = args.gpu_results;
  if (gpu_file.empty() && fs::exists(kDefaultGpuResults)) gpu_file = kDefaultGpuResults;
  std::map<std::string, nlohmann::json> gpu;
  std::string gpu_note;
  if (!gpu_file.empty()) {
    gpu = read_gpu_results(gpu_file);
    std::string device =
        gpu.empty() ? "no model" : gpu.begin()->second["device"].get<std::string>();
    gpu_note = fmt::format(
        "GPU columns (batch 1; eqfuse's generic CUDA build and torch.compile, median ms) from {}, "
        "measured on {} by bench/gpu/run.sh",
        gpu_file, device);
  } else {
    gpu_note = fmt::format(
        "GPU columns skipped: no {} (bench/gpu/run.sh writes it on a machine with a GPU; or pass "
        "--gpu-results FILE)",
        kDefaultGpuResults);
  }
  tools::ProgressLine line;
  for (size_t i = 0; i < args.models.size(); ++i) {
    fs::path model = model_file(args.models[i]);
    std::string progress = fmt::format("[{}/{}] {}:", i + 1, args.models.size(),
                                       model.parent_path().filename().string());
    try {
      rows.push_back(bench_model(args, model, progress, line));
      if (auto it = gpu.find(rows.back()["model"].get<std::string>()); it != gpu.end())
        rows.back()["gpu"] = it->second;
    } catch (const Error& e) {
      rows.push_back({{"model", model.parent_path().filename().string()}, {"error", e.what()}});
    }
  }
  line.clear();
  print_table(rows, args.devices.front(), !args.ort.empty(), !gpu_file.empty());
  if (!ort_note.empty()) std::cout << ort_note << "\n";
  std::cout << gpu_note << "\n";
  nlohmann::json doc = {{"devices", args.devices}, {"runs", args.runs}, {"models", rows}};
  if (!ort_note.empty()) doc["ort_note"] = ort_note;
  doc["gpu_results"] = gpu_file.empty() ? nlohmann::json(nullptr) : nlohmann::json(gpu_file);
  doc["gpu_note"] = gpu_note;
  if (!args.json.empty()) {
    std::ofstream f(args.json);
    if (!(f << doc.dump(1) << "\n")) throw Error("cannot write '" + args.json + "'");
  }
  if (!args.plot.empty()) write_plot(doc, args.plot);
  for (const auto& r : rows)
    if (r.contains("twin_match") && !r["twin_match"].get<bool>()) return 1;
  return 0;
}

}  // namespace
}  // namespace eqfuse::bench

int main(int argc, char** argv) {
  using namespace eqfuse;
  bench::Args args;
  CLI::App app{"eqfuse-bench: eqfuse beside the original model and its peers"};
  app.add_option("models", args.models, "ONNX models (files, or folders holding model.onnx)")
      ->required();
  app.add_option("--device", args.devices,
                 "device profiles for predicted times (repeatable; default h200)");
  app.add_option("--json", args.json, "write the results as JSON to FILE");
  app.add_option("--plot", args.plot, "write a bar chart of kernels and CPU times to FILE.svg");
  app.add_option("--runs", args.runs,
                 "timed runs per measurement, after one warm-up (median; default 5)")
      ->check(CLI::Range(1, 1000));
  app.add_option("--ort", args.ort,
                 "folder holding node_modules/onnxruntime-node: adds ONNX Runtime's columns");
  app.add_option("--gpu-results", args.gpu_results,
                 "merged GPU results of bench/gpu/run.sh (default bench/gpu/results/gpu.json where "
                 "it exists): adds measured GPU columns");
  app.add_flag("--no-measure", args.no_measure,
               "skip the measured CPU columns (no C++ compiler needed)");
  app.footer(
      "Examples:\n  eqfuse-bench examples/models/*\n"
      "  eqfuse-bench ../shared/models/* --device h200 --device a100 --json r.json --plot r.svg\n"
      "  eqfuse-bench ../shared/models/mlp_block --ort /tmp/ort\n"
      "  eqfuse-bench ../shared/models/* --gpu-results bench/gpu/results/gpu.json");
  try {
    app.parse(argc, argv);
    return bench::run(args);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const Error& e) {
    std::cerr << "eqfuse-bench: " << e.what() << "\n";
    return e.exit_code();
  }
}
