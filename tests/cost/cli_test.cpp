// `eqfuse cost` and `eqfuse calibrate` as a user runs them: exit codes (DESIGN.md: 0 ok, 2 bad
// input or usage) and the JSON fields of `cost --json`.
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cost/calibration.h"
#include "tests/test_data.h"

namespace {

struct RunResult {
  int exit_code;
  std::string out;
  std::string err;
};

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

RunResult run(const std::string& args) {
  auto dir = std::filesystem::temp_directory_path();
  auto out = dir / "eqfuse_cost_cli_out.txt", err = dir / "eqfuse_cost_cli_err.txt";
  std::string cmd = std::string("'") + EQFUSE_BINARY + "' " + args + " >'" + out.string() +
                    "' 2>'" + err.string() + "'";
  int status = std::system(cmd.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(out), slurp(err)};
}

std::string resnet18() {
  return (eqfuse::test::shared_dir() / "models/resnet18/model.onnx").string();
}

}  // namespace

TEST_CASE("calibrate without a GPU says so and exits 2", "[cost][cli]") {
  if (!eqfuse::cost::calibration_unavailable()) {
    WARN("a GPU is present: the no-GPU path is not exercised");
    return;
  }
  auto out = std::filesystem::temp_directory_path() / "eqfuse_calibrated.json";
  RunResult r = run("calibrate --out '" + out.string() + "'");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("no CUDA driver/GPU found: calibration needs a GPU"));
  CHECK(r.out.empty());
}

TEST_CASE("calibrate without --out is a usage error", "[cost][cli]") {
  CHECK(run("calibrate").exit_code == 2);
}

TEST_CASE("cost: bad device, missing model and bad bindings exit 2", "[cost][cli]") {
  RunResult unknown = run("cost '" + resnet18() + "' --device v100");
  CHECK(unknown.exit_code == 2);
  CHECK_THAT(unknown.err, Catch::Contains("unknown device 'v100'"));
  CHECK(run("cost /nonexistent/model.onnx --device h200").exit_code == 2);
  CHECK(run("cost '" + resnet18() + "' --device h200 --bind batch").exit_code == 2);
  CHECK(run("cost '" + resnet18() + "'").exit_code == 2);  // --device is required
}

TEST_CASE("cost --json on resnet18: total_ms and per-node name, op, ms, bound", "[cost][cli]") {
  if (!std::filesystem::exists(resnet18())) {
    WARN("shared models not found: skipped");
    return;
  }
  RunResult r = run("cost '" + resnet18() + "' --device h200 --json");
  REQUIRE(r.exit_code == 0);
  nlohmann::json j = nlohmann::json::parse(r.out);
  REQUIRE(j["nodes"].is_array());
  REQUIRE(!j["nodes"].empty());
  double sum = 0;
  for (const auto& n : j["nodes"]) {
    CHECK(n["name"].is_string());
    CHECK(n["op"].is_string());
    CHECK(n["ms"].get<double>() >= 0);
    std::string bound = n["bound"];
    CHECK((bound == "compute" || bound == "memory" || bound == "launch" || bound == "free"));
    sum += n["ms"].get<double>();
  }
  CHECK(j["total_ms"].get<double>() == Approx(sum));
  CHECK(j["total_ms"].get<double>() > 0);

  RunResult a100 = run("cost '" + resnet18() + "' --device a100 --json");
  REQUIRE(a100.exit_code == 0);
  CHECK(nlohmann::json::parse(a100.out)["total_ms"].get<double>() > j["total_ms"].get<double>());

  // At bf16 storage every node moves fewer bytes and the model is predicted faster.
  RunResult bf16 = run("cost '" + resnet18() + "' --device h200 --precision bf16 --json");
  REQUIRE(bf16.exit_code == 0);
  nlohmann::json b = nlohmann::json::parse(bf16.out);
  CHECK(b["precision"] == "bf16");
  CHECK(b["total_ms"].get<double>() < j["total_ms"].get<double>());
  REQUIRE(b["nodes"].size() == j["nodes"].size());
  for (size_t i = 0; i < b["nodes"].size(); ++i)
    CHECK(b["nodes"][i]["bytes"].get<double>() <= j["nodes"][i]["bytes"].get<double>());
  RunResult bad = run("cost '" + resnet18() + "' --device h200 --precision i8");
  CHECK(bad.exit_code == 2);
  CHECK_THAT(bad.err, Catch::Contains("precision 'i8'"));
}
