// `eqfuse optimize` on the bundled example models: exit codes, the --json report's fields, an
// output model that imports back and matches the model's test data, the same bytes for any
// thread count, and bad input (a malformed model, an unproved rule file, bad limits).
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "tests/test_data.h"
#include "tests/tools/run_eqfuse.h"

using namespace eqfuse::test;

namespace {

std::string example(const std::string& model, const std::string& file = "model.onnx") {
  return (source_dir() / "examples" / "models" / model / file).string();
}

std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace

TEST_CASE("eqfuse optimize: the report, and an output that runs and matches", "[tools][fast]") {
  fs::path dir = fresh_dir("cli_optimize");
  for (const std::string model : {"mlp", "pointwise_chain"}) {
    std::string out = (dir / (model + ".opt.onnx")).string();
    std::vector<std::string> args = {"optimize", example(model), "-o", out, "--json"};
    Result r = run_eqfuse(args);
    INFO(describe(args, r));
    REQUIRE(r.code == 0);
    nlohmann::json j = nlohmann::json::parse(r.out);
    for (const char* field :
         {"predicted_ms_before", "predicted_ms_after", "kernels_before", "kernels_after", "seconds",
          "enodes", "iterations", "stop_reason", "extraction", "verified"})
      CHECK(j.contains(field));
    CHECK(j["verified"] == "passed");
    CHECK(j["extraction"]["method"] == "dag");
    CHECK(j["predicted_ms_after"].get<double>() <= j["predicted_ms_before"].get<double>());
    CHECK(j["stop_reason"] != "time_limit");
    // Every kernel of the written model is explained.
    REQUIRE(j["kernels"].is_array());
    size_t kinds = 0;
    for (const auto& [kind, n] : j["kernel_kinds"].items()) kinds += n.get<size_t>();
    CHECK(j["kernels"].size() == kinds);
    CHECK(!j["kernels"].empty());
    for (const auto& k : j["kernels"]) {
      CHECK(k["op"] == "Kernel");
      CHECK(!k["fused_ops"].empty());
      CHECK(k["rules"].is_array());
      CHECK(k["output"].is_string());
    }
    CHECK(j["rewritten"].is_array());
    REQUIRE(j["replaced"].is_array());
    for (const auto& e : j["replaced"]) {
      CHECK(e["node"].is_string());
      CHECK(e["now"].is_string());
      CHECK(!e["rules"].empty());
    }
    std::vector<std::string> check = {
        "run",    out,    "--test-data", example(model, "test_data_set_0"),
        "--rtol", "1e-3", "--atol",      "1e-4"};
    Result ran = run_eqfuse(check);
    INFO(describe(check, ran));
    CHECK(ran.code == 0);
  }
}

TEST_CASE("eqfuse optimize --precision prices 16-bit storage; the graph stays f32",
          "[tools][fast]") {
  fs::path dir = fresh_dir("cli_optimize_precision");
  std::map<std::string, nlohmann::json> report;
  for (const std::string precision : {"f32", "bf16"}) {
    std::string out = (dir / ("mlp." + precision + ".onnx")).string();
    std::vector<std::string> args = {"optimize",    example("mlp"), "-o",    out,
                                     "--precision", precision,      "--json"};
    Result r = run_eqfuse(args);
    INFO(describe(args, r));
    REQUIRE(r.code == 0);
    report[precision] = nlohmann::json::parse(r.out);
    CHECK(report[precision]["precision"] == precision);
    CHECK(report[precision]["verified"] == "passed");  // against the f32 model, at f32
  }
  CHECK(report["bf16"]["predicted_ms_before"].get<double>() <
        report["f32"]["predicted_ms_before"].get<double>());
  Result bad = run_eqfuse(
      {"optimize", example("mlp"), "-o", (dir / "x.onnx").string(), "--precision", "f64"});
  CHECK(bad.code == 2);
  CHECK_THAT(bad.err, Catch::Contains("precision 'f64'"));
}

TEST_CASE("eqfuse optimize --explain: the rules behind each kernel", "[tools][fast]") {
  fs::path dir = fresh_dir("cli_optimize_explain");
  std::vector<std::string> args = {"optimize", example("mlp"), "-o", (dir / "mlp.onnx").string(),
                                   "--explain"};
  Result r = run_eqfuse(args);
  INFO(describe(args, r));
  REQUIRE(r.code == 0);
  CHECK(r.out.find("why:") != std::string::npos);
  CHECK(r.out.find("(contraction, ") != std::string::npos);
  CHECK(r.out.find("fuses ") != std::string::npos);
  CHECK(r.out.find("rules: ") != std::string::npos);
  // The GELU's bias Add of the model went into the kernel as rewritten by a rule.
  CHECK(r.out.find("of the model is now inside kernel ") != std::string::npos);
}

TEST_CASE("eqfuse optimize --dump-extraction: the problem eqfuse extract solves the same",
          "[tools][fast]") {
  fs::path dir = fresh_dir("cli_optimize_dump");
  std::string out = (dir / "mlp.opt.onnx").string(), dump = (dir / "mlp.extraction.json").string();
  std::vector<std::string> args = {"optimize", example("mlp"),      "-o", out,
                                   "--json",   "--dump-extraction", dump, "--no-verify"};
  Result r = run_eqfuse(args);
  INFO(describe(args, r));
  REQUIRE(r.code == 0);
  double cost_ms = nlohmann::json::parse(r.out)["extraction"]["cost_ms"].get<double>();
  CHECK(nlohmann::json::parse(r.out)["extraction"]["stop_reason"] == "converged");
  // The DAG-aware search with no steps to spend prices its start and says why it stopped.
  std::vector<std::string> unsearched = {"extract",    dump, "--method", "dag",
                                         "--dag-work", "0",  "--json"};
  Result u = run_eqfuse(unsearched);
  INFO(describe(unsearched, u));
  REQUIRE(u.code == 0);
  CHECK(nlohmann::json::parse(u.out)["stop_reason"] == "work limit");
  std::vector<std::string> stopped = {"optimize", example("mlp"), "-o", out, "--dag-work", "0"};
  Result s = run_eqfuse(stopped);
  INFO(describe(stopped, s));
  REQUIRE(s.code == 0);
  CHECK(s.out.find(", stop: work limit") != std::string::npos);
  std::vector<std::string> again = {"extract", dump, "--method", "ilp", "--json"};
  Result e = run_eqfuse(again);
  INFO(describe(again, e));
  REQUIRE(e.code == 0);
  nlohmann::json j = nlohmann::json::parse(e.out);
  // The exact solver on the dumped problem is never worse than the DAG-aware search was.
  CHECK(j["dag_cost"].get<double>() <= cost_ms * (1 + 1e-9));
  CHECK(j["bound"].get<double>() <= cost_ms * (1 + 1e-9));
  // Solved whole, without the split at separator e-classes: a bound that holds as well.
  again.push_back("--whole");
  Result w = run_eqfuse(again);
  INFO(describe(again, w));
  REQUIRE(w.code == 0);
  nlohmann::json whole = nlohmann::json::parse(w.out);
  CHECK(whole["dag_cost"].get<double>() <= cost_ms * (1 + 1e-9));
  CHECK(whole["bound"].get<double>() <= j["dag_cost"].get<double>() * (1 + 1e-9));
  CHECK(j["bound"].get<double>() <= whole["dag_cost"].get<double>() * (1 + 1e-9));
}

TEST_CASE("eqfuse optimize: the same bytes at one and two threads", "[tools][fast]") {
  fs::path dir = fresh_dir("cli_optimize_threads");
  std::string a = (dir / "a.onnx").string(), b = (dir / "b.onnx").string();
  REQUIRE(run_eqfuse({"optimize", example("pointwise_chain"), "-o", a, "--threads", "1"}).code ==
          0);
  REQUIRE(run_eqfuse({"optimize", example("pointwise_chain"), "-o", b, "--threads", "2"}).code ==
          0);
  CHECK(read_bytes(a) == read_bytes(b));
}

TEST_CASE("eqfuse optimize: bad input gets a clear error", "[tools][fast]") {
  fs::path dir = fresh_dir("cli_optimize_bad");
  fs::path garbage = dir / "garbage.onnx";
  std::ofstream(garbage) << "not a model";
  std::vector<std::string> args = {"optimize", garbage.string(), "-o", (dir / "o.onnx").string()};
  Result r = run_eqfuse(args);
  INFO(describe(args, r));
  CHECK(r.code == 2);
  CHECK(r.err.find("garbage.onnx") != std::string::npos);

  fs::path rules = dir / "wrong.rules";
  std::ofstream(rules)
      << "(rewrite relu-distributes (Relu (Add ?a ?b)) (Add (Relu ?a) (Relu ?b)))\n";
  args = {"optimize", example("mlp"), "-o", (dir / "o.onnx").string(), "--rules", rules.string()};
  r = run_eqfuse(args);
  INFO(describe(args, r));
  CHECK(r.code == 1);
  CHECK(r.err.find("relu-distributes") != std::string::npos);

  args = {"optimize", example("mlp"), "-o", (dir / "o.onnx").string(), "--iter-limit", "0"};
  r = run_eqfuse(args);
  INFO(describe(args, r));
  CHECK(r.code == 2);
}
