// `eqfuse info`, `eqfuse run` and `eqfuse extract`: exit codes (0 ok, 1 mismatch, 2 bad input
// or usage, 3 unsupported), text and --json output, on the bundled example models, small models
// written here and a small e-graph in data/. Uses ../shared only where present (structure-only
// models).
#include <sys/wait.h>

#include <array>
#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "frontend/test_data.h"
#include "tests/frontend/model_builder.h"
#include "tests/test_data.h"

namespace {

using namespace eqfuse;
using namespace eqfuse::test;
namespace fs = std::filesystem;

struct Result {
  int code = -1;
  std::string out;  // stdout only; stderr goes to the test log
};

Result run_eqfuse(const std::string& args) {
  std::string cmd = std::string("'") + EQFUSE_BINARY + "' " + args;
  Result r;
  FILE* pipe = popen(cmd.c_str(), "r");
  REQUIRE(pipe);
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) r.out.append(buf.data(), n);
  int status = pclose(pipe);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  INFO("$ eqfuse " << args << "\n" << r.out);
  return r;
}

std::string quoted(const fs::path& p) {
  return "'" + p.string() + "'";
}

fs::path example(const char* name) {
  return source_dir() / "examples" / "models" / name;
}

nlohmann::json parse_json(const std::string& out) {
  INFO(out);
  nlohmann::json j;
  REQUIRE_NOTHROW(j = nlohmann::json::parse(out));
  return j;
}

}  // namespace

TEST_CASE("eqfuse info describes a model", "[tools][info]") {
  fs::path model = example("mlp") / "model.onnx";
  Result r = run_eqfuse("info " + quoted(model));
  CHECK(r.code == 0);
  CHECK(r.out.find("MatMul") != std::string::npos);
  CHECK(r.out.find("LayerNormalization") != std::string::npos);

  Result j = run_eqfuse("info --json " + quoted(model));
  CHECK(j.code == 0);
  nlohmann::json doc = parse_json(j.out);
  CHECK(doc["ops"]["MatMul"] == 2);
  CHECK(doc["parameters"]["count"].get<int64_t>() > 0);
  CHECK(doc["inputs"].size() == 1);
  CHECK(doc["outputs"].size() == 1);
  CHECK(doc["opaque_ops"].empty());
}

TEST_CASE("eqfuse info refuses unusable files with exit 2", "[tools][info]") {
  fs::path dir = temp_dir("cli_info");
  write_file(dir / "empty.onnx", "");
  write_file(dir / "garbage.onnx", "garbage garbage garbage");
  CHECK(run_eqfuse("info " + quoted(dir / "empty.onnx")).code == 2);
  CHECK(run_eqfuse("info " + quoted(dir / "garbage.onnx")).code == 2);
  CHECK(run_eqfuse("info " + quoted(dir / "absent.onnx")).code == 2);
  Result j = run_eqfuse("info --json " + quoted(dir / "garbage.onnx"));
  CHECK(j.code == 2);
  CHECK(parse_json(j.out).contains("error"));
  CHECK(run_eqfuse("info").code == 2);  // usage
  CHECK(run_eqfuse("info --help").code == 0);
}

TEST_CASE("eqfuse run checks a model against its test data", "[tools][run]") {
  fs::path dir = example("mlp");
  fs::path model = dir / "model.onnx";
  Result r = run_eqfuse("run " + quoted(model) + " --test-data " + quoted(dir / "test_data_set_0"));
  CHECK(r.code == 0);
  CHECK(r.out.find("all outputs match") != std::string::npos);

  Result j =
      run_eqfuse("run --json " + quoted(model) + " --test-data " + quoted(dir / "test_data_set_0"));
  CHECK(j.code == 0);
  nlohmann::json doc = parse_json(j.out);
  CHECK(doc["match"] == true);
  REQUIRE(doc["outputs"].size() == 1);
  CHECK(doc["outputs"][0]["max_abs_error"].get<double>() < 1e-4);

  // Altered expected outputs: a mismatch, exit 1.
  fs::path bad = temp_dir("cli_mismatch");
  fs::copy_file(dir / "test_data_set_0" / "input_0.pb", bad / "input_0.pb",
                fs::copy_options::overwrite_existing);
  frontend::NamedTensor out = frontend::read_tensor_file(dir / "test_data_set_0" / "output_0.pb");
  out.tensor.set(0, out.tensor.get(0) + 1.0);
  frontend::write_tensor_file(bad / "output_0.pb", out.name, out.tensor);
  Result m = run_eqfuse("run " + quoted(model) + " --test-data " + quoted(bad));
  CHECK(m.code == 1);
  CHECK(m.out.find("MISMATCH") != std::string::npos);
  // ... that a loose enough tolerance accepts.
  CHECK(run_eqfuse("run " + quoted(model) + " --test-data " + quoted(bad) + " --atol 2").code == 0);
}

TEST_CASE("eqfuse run takes inputs from files or makes them up", "[tools][run]") {
  fs::path dir = example("pointwise_chain");
  fs::path model = dir / "model.onnx";
  fs::path outdir = temp_dir("cli_outputs");
  fs::remove_all(outdir);
  Result r = run_eqfuse("run " + quoted(model) + " --output-dir " + quoted(outdir));
  CHECK(r.code == 0);
  CHECK(fs::exists(outdir / "output_0.pb"));

  nlohmann::json info = parse_json(run_eqfuse("info --json " + quoted(model)).out);
  std::string args;
  for (size_t k = 0; k < info["inputs"].size(); ++k) {
    std::string name = info["inputs"][k]["name"];
    args += " --input " + name + "=" +
            quoted(dir / "test_data_set_0" / ("input_" + std::to_string(k) + ".pb"));
  }
  Result f = run_eqfuse("run --json " + quoted(model) + args + " --output-dir " + quoted(outdir));
  CHECK(f.code == 0);
  CHECK(parse_json(f.out)["inputs_from"] == "files");
  auto got = frontend::read_tensor_file(outdir / "output_0.pb");
  auto expected = frontend::read_tensor_file(dir / "test_data_set_0" / "output_0.pb");
  CHECK(frontend::compare_tensors(got.tensor, expected.tensor, 1e-3, 1e-4).match);

  CHECK(run_eqfuse("run " + quoted(model) +
                   " --input nosuch=" + quoted(dir / "test_data_set_0" / "input_0.pb"))
            .code == 2);
  CHECK(run_eqfuse("run " + quoted(model) + " --test-data " + quoted(outdir / "absent")).code == 2);
}

TEST_CASE("eqfuse run says clearly what it cannot execute (exit 3)", "[tools][run]") {
  fs::path dir = temp_dir("cli_unsupported");
  // An op outside the table.
  auto m = onnx_model();
  auto* o = m.add_opset_import();
  o->set_domain("com.example");
  o->set_version(1);
  add_input(m, "x", {2});
  add_node(m, "Mystery", {"x"}, {"y"}, "mystery")->set_domain("com.example");
  add_value(m.mutable_graph()->mutable_value_info(), "y", onnx::TensorProto::FLOAT, {2});
  add_output(m, "y", {2});
  write_file(dir / "opaque.onnx", bytes_of(m));
  Result r = run_eqfuse("run " + quoted(dir / "opaque.onnx"));
  CHECK(r.code == 3);
  Result i = run_eqfuse("info --json " + quoted(dir / "opaque.onnx"));
  CHECK(i.code == 0);
  CHECK(parse_json(i.out)["opaque_ops"]["com.example.Mystery"] == 1);

  // Weights in an external file that is absent.
  auto w = onnx_model();
  add_input(w, "x", {2});
  add_external_float_initializer(w, "w", {2}, "absent_weights.bin");
  add_node(w, "Add", {"x", "w"}, {"y"});
  add_output(w, "y", {2});
  write_file(dir / "structure_only.onnx", bytes_of(w));
  CHECK(run_eqfuse("info " + quoted(dir / "structure_only.onnx")).code == 0);
  Result s = run_eqfuse("run --json " + quoted(dir / "structure_only.onnx"));
  CHECK(s.code == 3);
  const std::string why = parse_json(s.out)["error"].get<std::string>();
  CHECK(why.find("absent_weights.bin") != std::string::npos);
  CHECK(why.find("--seed-weights") != std::string::npos);
  // --seed-weights makes the absent weights up from --seed: the same ones in the interpreter and
  // the twin, whose outputs then agree; another seed, other weights.
  auto seeded = [&](const std::string& flags) {
    Result r = run_eqfuse("run --json --seed-weights " + flags + " " +
                          quoted(dir / "structure_only.onnx"));
    REQUIRE(r.code == 0);
    nlohmann::json j = parse_json(r.out);
    CHECK(j["seeded_weights"] == 1);
    return std::make_pair(j["outputs"][0]["min"].get<double>(),
                          j["outputs"][0]["max"].get<double>());
  };
  const auto interpreted = seeded("--seed 3"), twin = seeded("--seed 3 --backend cpu");
  CHECK(twin.first == Approx(interpreted.first).epsilon(1e-6));
  CHECK(twin.second == Approx(interpreted.second).epsilon(1e-6));
  CHECK(seeded("--seed 4") != interpreted);
  Result text = run_eqfuse("run --seed-weights " + quoted(dir / "structure_only.onnx"));
  CHECK(text.code == 0);
  CHECK(text.out.find("weights 1 made up from seed 0") != std::string::npos);
}

TEST_CASE("eqfuse info is quick on the structure-only shared models", "[tools][info]") {
  if (!have_shared_dir()) {
    WARN("skipped: ../shared not found");
    return;
  }
  for (const char* name : {"resnet50", "bert_base", "vit_b_16"}) {
    fs::path model = shared_dir() / "models" / name / "model.onnx";
    if (!fs::exists(model)) continue;
    Result r = run_eqfuse("info --json " + quoted(model));
    CHECK(r.code == 0);
    nlohmann::json doc = parse_json(r.out);
    INFO(name);
    CHECK(doc["import_ms"].get<double>() < 1000);
    CHECK(!doc["parameters"]["missing_weight_files"].empty());
    CHECK(run_eqfuse("run " + quoted(model)).code == 3);
  }
}

TEST_CASE("eqfuse extract reports each method's choice as JSON and writes it", "[tools][extract]") {
  // Tree-greedy takes both 7-cost leaves (14); sharing X costs 12 as a DAG.
  const fs::path egraph = source_dir() / "tests" / "tools" / "data" / "shared_subterm.json";
  const fs::path out = fs::temp_directory_path() / ("eqfuse_choice_" + std::to_string(getpid()));
  for (const char* method : {"greedy", "dag", "ilp"}) {
    INFO(method);
    std::string progress = std::string(method) == "ilp" ? " --progress" : "";
    Result r = run_eqfuse("extract " + quoted(egraph) + " --method " + method + " --json --out " +
                          quoted(out) + progress);
    REQUIRE(r.code == 0);
    nlohmann::json j = parse_json(r.out);  // stdout holds the JSON object and nothing else
    for (const char* field : {"dag_cost", "tree_cost", "seconds", "optimal", "bound"})
      CHECK(j.contains(field));
    std::ifstream in(out);
    nlohmann::json choice = nlohmann::json::parse(in);
    if (std::string(method) == "greedy") {
      CHECK(j["dag_cost"] == 14.0);
      CHECK(j["bound"].is_null());
      CHECK(choice["A"] == "a2");
    } else {
      CHECK(j["dag_cost"] == 12.0);
      CHECK(choice == nlohmann::json{{"R", "r"}, {"A", "a1"}, {"B", "b1"}, {"X", "x"}});
    }
    if (std::string(method) == "ilp") {
      CHECK(j["optimal"] == true);
      CHECK(j["bound"] == 12.0);
    }
  }
  fs::remove(out);
}

TEST_CASE("eqfuse extract refuses unreadable e-graphs and bad usage with exit 2",
          "[tools][extract]") {
  const fs::path dir = fs::temp_directory_path() / ("eqfuse_extract_" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "broken.json") << "{\"nodes\": {";
  std::ofstream(dir / "cyclic.json")
      << R"({"nodes": {"a": {"op": "f", "children": ["a"], "eclass": "A"}}, "root_eclasses": ["A"]})";
  const std::string good =
      quoted(source_dir() / "tests" / "tools" / "data" / "shared_subterm.json");
  CHECK(run_eqfuse("extract " + quoted(dir / "absent.json")).code == 2);
  CHECK(run_eqfuse("extract " + quoted(dir / "broken.json")).code == 2);
  CHECK(run_eqfuse("extract " + quoted(dir / "cyclic.json")).code == 2);  // no finite term
  CHECK(run_eqfuse("extract " + good + " --method exact").code == 2);
  CHECK(run_eqfuse("extract " + good + " --time-limit -1").code == 2);
  CHECK(run_eqfuse("extract").code == 2);
  fs::remove_all(dir);
}
