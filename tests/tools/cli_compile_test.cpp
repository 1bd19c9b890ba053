// `eqfuse compile` and `eqfuse run --backend`: a generated C++ tree builds with only a C++
// compiler and its bench matches the model's test data; bad input is refused by name.
#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "tests/frontend/model_builder.h"
#include "tests/test_data.h"
#include "tests/tools/run_eqfuse.h"

using namespace eqfuse;
using namespace eqfuse::test;

namespace {

fs::path example(const char* name) {
  return source_dir() / "examples" / "models" / name;
}

int shell(const std::string& cmd) {
  int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Builds a written C++ tree with warnings as errors and runs its bench on `data`: its JSON.
nlohmann::json build_and_bench(const fs::path& tree, const fs::path& data) {
  std::string t = "'" + tree.string() + "'";
  REQUIRE(shell("cd " + t +
                " && c++ -std=c++17 -O2 -fopenmp -fPIC -shared -Wall -Wextra -Werror "
                "-o libeqfuse_model.so kernels.cpp && c++ -std=c++17 -O2 -Wall -Wextra -Werror "
                "-o bench bench.cpp -L. -leqfuse_model -Wl,-rpath,.") == 0);
  REQUIRE(shell("cd " + t + " && ./bench --test-data '" + data.string() +
                "' --runs 2 > bench.json") == 0);
  std::ifstream in(tree / "bench.json");
  return nlohmann::json::parse(in);
}

}  // namespace

TEST_CASE("a compiled C++ tree builds alone and matches the test data", "[tools][compile]") {
  fs::path dir = fresh_dir("compile_cpu");
  fs::path tree = dir / "mlp";
  Result r = run_eqfuse({"compile", (example("mlp") / "model.onnx").string(), "--target", "cpu",
                         "--out", tree.string(), "--json"});
  INFO(describe({"compile"}, r));
  REQUIRE(r.code == 0);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["kernels"].get<int>() >= 1);
  CHECK(j["weights_written"] == true);
  for (const char* f :
       {"kernels.cpp", "eqfuse_model.h", "bench.cpp", "CMakeLists.txt", "weights.bin", "plan.json"})
    CHECK(fs::exists(tree / f));
  auto b = build_and_bench(tree, example("mlp") / "test_data_set_0");
  CHECK(b["match"] == true);
  CHECK(b["checked"].size() == 1);
  // A time per stage of the plan (eqfuse_profile), each a part of the run.
  std::ifstream plan_file(tree / "plan.json");
  const auto plan = nlohmann::json::parse(plan_file);
  size_t stages = 0;
  for (const auto& k : plan["kernels"]) stages += k["stages"].size();
  REQUIRE(b["stage_ms"].size() == stages);
  double total = 0;
  for (const auto& ms : b["stage_ms"]) {
    CHECK(ms.get<double>() >= 0);
    total += ms.get<double>();
  }
  CHECK(total > 0);
}

TEST_CASE("a CUDA tree names each stage's form and prices each stage in it", "[tools][compile]") {
  fs::path dir = fresh_dir("compile_forms");
  // As compiled; without cuBLASLt; at 16 bits, where copy stages round the model's input.
  for (const char* variant : {"lt", "plain", "f16"}) {
    const std::string v = variant;
    const bool lt = v != "plain";
    fs::path tree = dir / v;
    std::vector<std::string> args = {"compile", (example("mlp") / "model.onnx").string(), "--out",
                                     tree.string()};
    if (!lt) args.push_back("--no-cublaslt");
    if (v == "f16") args.insert(args.end(), {"--precision", "f16"});
    Result r = run_eqfuse(args);
    INFO(describe(args, r));
    REQUIRE(r.code == 0);
    std::ifstream plan_file(tree / "plan.json"), pred_file(tree / "predictions.json");
    const auto plan = nlohmann::json::parse(plan_file);
    const auto pred = nlohmann::json::parse(pred_file);
    std::map<size_t, std::string> forms;
    for (const auto& k : plan["kernels"])
      for (const auto& s : k["stages"]) forms[s["index"].get<size_t>()] = s["form"];
    size_t priced = 0, library = 0;
    for (const auto& k : pred["kernels"]) {
      double sum = 0;
      for (const auto& s : k["stages"]) {
        CHECK(s["form"] == forms.at(s["index"].get<size_t>()));
        sum += s["predicted_ms"]["64"].get<double>();
        ++priced;
        library += s["form"] == "cublas" || s["form"] == "cublaslt";
        if (!lt) CHECK(s["form"] != "cublaslt");
      }
      CHECK(k["predicted_ms"]["64"].get<double>() == Approx(sum));
      // A copy the plan adds is no node of the graph the optimizer priced.
      if (k["op"] == "copy")
        CHECK(k["optimizer_ms"]["64"].get<double>() == 0);
      else
        CHECK(k["optimizer_ms"]["64"].get<double>() > 0);
    }
    CHECK(priced == forms.size());  // every stage, once
    CHECK(library >= 1);            // the MLP's products
    CHECK(plan["cublaslt"] == lt);
    std::ifstream cmake(tree / "CMakeLists.txt");
    const std::string text((std::istreambuf_iterator<char>(cmake)), {});
    CHECK((text.find("CUDA::cublasLt") != std::string::npos) == lt);
    if (v == "f16")
      CHECK(std::count_if(forms.begin(), forms.end(),
                          [](const auto& f) { return f.second == "copy"; }) >= 1);
  }
}

TEST_CASE("eqfuse run --backend cpu runs the C++ twin", "[tools][compile]") {
  Result r = run_eqfuse({"run", (example("mlp") / "model.onnx").string(), "--backend", "cpu",
                         "--test-data", (example("mlp") / "test_data_set_0").string(), "--atol",
                         "1e-4", "--json"});
  INFO(describe({"run"}, r));
  REQUIRE(r.code == 0);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["match"] == true);
  CHECK(j["backend"] == "cpu");
  Result bad = run_eqfuse({"run", (example("mlp") / "model.onnx").string(), "--backend", "tpu"});
  CHECK(bad.code == 2);
}

TEST_CASE("eqfuse run --backend cuda runs on a GPU, or says there is none (exit 2)",
          "[tools][compile]") {
  Result r =
      run_eqfuse({"run", (example("mlp") / "model.onnx").string(), "--backend", "cuda",
                  "--test-data", (example("mlp") / "test_data_set_0").string(), "--atol", "1e-4"});
  INFO(describe({"run --backend cuda"}, r));
  if (r.code == 2) {
    CHECK_THAT(r.err, Catch::Contains("no GPU") && Catch::Contains("--backend cpu"));
  } else {
    CHECK(r.code == 0);
    CHECK_THAT(r.out, Catch::Contains("CUDA on"));
  }
}

TEST_CASE("a tree run with seeded weights keeps its index weights", "[tools][compile]") {
  // y = Gather(x, idx) * w: a seeded run (no weights.bin) draws w but must keep idx in range.
  fs::path dir = fresh_dir("compile_seeded");
  auto m = onnx_model();
  add_input(m, "x", {5, 3});
  add_int64_initializer(m, "idx", {4, 0});
  add_float_initializer(m, "w", {3}, 0.5f);
  add_node(m, "Gather", {"x", "idx"}, {"g"}, "gather");
  add_node(m, "Mul", {"g", "w"}, {"y"}, "mul");
  add_output(m, "y", {2, 3});
  {
    std::ofstream f(dir / "gather.onnx", std::ios::binary);
    f << bytes_of(m);
  }
  fs::path tree = dir / "tree";
  Result r = run_eqfuse({"compile", (dir / "gather.onnx").string(), "--target", "cpu", "--out",
                         tree.string(), "--no-optimize"});
  INFO(describe({"compile"}, r));
  REQUIRE(r.code == 0);
  fs::remove(tree / "weights.bin");
  std::string t = "'" + tree.string() + "'";
  REQUIRE(shell("cd " + t +
                " && c++ -std=c++17 -O1 -fopenmp -fPIC -shared -Wall -Wextra -Werror "
                "-o libeqfuse_model.so kernels.cpp && c++ -std=c++17 -O1 -Wall -Wextra -Werror "
                "-o bench bench.cpp -L. -leqfuse_model -Wl,-rpath,.") == 0);
  for (int seed : {1, 2, 3})
    CHECK(shell("cd " + t + " && ./bench --seed " + std::to_string(seed) +
                " --runs 1 > seeded.json") == 0);
  std::ifstream in(tree / "seeded.json");
  CHECK(nlohmann::json::parse(in)["seeded_weights"] == true);
}

TEST_CASE("eqfuse compile --seed-weights writes made-up weights for a structure-only model",
          "[tools][compile]") {
  // y = x * w with w in an absent external file: without --seed-weights the tree has no
  // weights.bin (its bench seeds them); with it, weights.bin holds them, and the twin's plan
  // reorders a product's weights into panels as it would real ones.
  fs::path dir = fresh_dir("compile_seed_weights");
  auto m = onnx_model();
  add_input(m, "x", {5, 8});
  add_external_float_initializer(m, "w", {8, 70}, "absent_weights.bin");
  add_node(m, "MatMul", {"x", "w"}, {"y"}, "product");
  add_output(m, "y", {5, 70});
  {
    std::ofstream f(dir / "structure_only.onnx", std::ios::binary);
    f << bytes_of(m);
  }
  for (bool seed : {false, true}) {
    fs::path tree = dir / (seed ? "seeded" : "plain");
    std::vector<std::string> args = {"compile",  (dir / "structure_only.onnx").string(),
                                     "--target", "cpu",
                                     "--out",    tree.string(),
                                     "--json"};
    if (seed) args.push_back("--seed-weights");
    Result r = run_eqfuse(args);
    INFO(describe({"compile"}, r));
    REQUIRE(r.code == 0);
    auto j = nlohmann::json::parse(r.out);
    CHECK(j["weights_written"] == seed);
    CHECK(j["seeded_weights"] == (seed ? 1 : 0));
    CHECK(fs::exists(tree / "weights.bin") == seed);
    std::ifstream kernels(tree / "kernels.cpp");
    const std::string text((std::istreambuf_iterator<char>(kernels)), {});
    CHECK((text.find("w_panels") != std::string::npos) == seed);
  }
}

TEST_CASE("eqfuse compile names the op it cannot compile (exit 3)", "[tools][compile]") {
  fs::path dir = fresh_dir("compile_opaque");
  auto m = onnx_model();
  auto* o = m.add_opset_import();
  o->set_domain("com.example");
  o->set_version(1);
  add_input(m, "x", {2});
  add_node(m, "Mystery", {"x"}, {"y"}, "mystery")->set_domain("com.example");
  add_value(m.mutable_graph()->mutable_value_info(), "y", onnx::TensorProto::FLOAT, {2});
  add_output(m, "y", {2});
  {
    std::ofstream f(dir / "opaque.onnx", std::ios::binary);
    f << bytes_of(m);
  }
  Result r = run_eqfuse({"compile", (dir / "opaque.onnx").string(), "--out",
                         (dir / "tree").string(), "--no-optimize"});
  CHECK(r.code == 3);
  CHECK_THAT(r.err, Catch::Contains("Mystery"));
  Result bad =
      run_eqfuse({"compile", (dir / "absent.onnx").string(), "--out", (dir / "tree").string()});
  CHECK(bad.code == 2);
}

TEST_CASE("--precision bf16: compile checks and states it, the tree's bench uses its tolerance",
          "[tools][compile]") {
  fs::path dir = fresh_dir("compile_bf16");
  fs::path tree = dir / "mlp";
  Result r = run_eqfuse({"compile", (example("mlp") / "model.onnx").string(), "--target", "cpu",
                         "--out", tree.string(), "--precision", "bf16", "--json"});
  INFO(describe({"compile --precision bf16"}, r));
  REQUIRE(r.code == 0);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["precision"]["dtype"] == "bf16");
  CHECK(j["precision"]["checked"] == true);
  CHECK(j["precision"]["max_abs_error"].get<double>() > 0);  // an approximation, visibly
  CHECK(j["precision"]["max_abs_error"].get<double>() <=
        j["precision"]["atol"].get<double>() + j["precision"]["rtol"].get<double>());
  auto b = build_and_bench(tree, example("mlp") / "test_data_set_0");
  CHECK(b["precision"] == "bf16");
  CHECK(b["match"] == true);
  // The weights blob holds 16-bit weights: about half the f32 tree's.
  fs::path f32_tree = dir / "mlp_f32";
  REQUIRE(run_eqfuse({"compile", (example("mlp") / "model.onnx").string(), "--target", "cpu",
                      "--out", f32_tree.string()})
              .code == 0);
  CHECK(fs::file_size(tree / "weights.bin") < fs::file_size(f32_tree / "weights.bin") * 6 / 10);
}

TEST_CASE("eqfuse run --precision compares the 16-bit twin with the f32 interpreter",
          "[tools][compile]") {
  for (const char* precision : {"bf16", "f16"}) {
    Result r = run_eqfuse({"run", (example("mlp") / "model.onnx").string(), "--backend", "cpu",
                           "--precision", precision, "--json"});
    INFO(describe({"run --precision", precision}, r));
    REQUIRE(r.code == 0);
    auto j = nlohmann::json::parse(r.out);
    CHECK(j["precision"] == precision);
    CHECK(j["expected_from"] == "the f32 interpreter");
    CHECK(j["match"] == true);
    CHECK(j["outputs"][0]["max_abs_error"].get<double>() > 0);
    // A tolerance tighter than 16 bits can hold is a mismatch, exit 1: the check is real.
    Result tight = run_eqfuse({"run", (example("mlp") / "model.onnx").string(), "--backend", "cpu",
                               "--precision", precision, "--rtol", "1e-7", "--atol", "1e-9"});
    CHECK(tight.code == 1);
  }
  Result interp =
      run_eqfuse({"run", (example("mlp") / "model.onnx").string(), "--precision", "bf16"});
  CHECK(interp.code == 2);
  CHECK_THAT(interp.err, Catch::Contains("--backend cpu"));
  Result bad = run_eqfuse(
      {"run", (example("mlp") / "model.onnx").string(), "--backend", "cpu", "--precision", "int8"});
  CHECK(bad.code == 2);
}
