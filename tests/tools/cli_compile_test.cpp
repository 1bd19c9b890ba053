// `eqfuse compile` and `eqfuse run --backend`: a generated C++ tree builds with only a C++
// compiler and its bench matches the model's test data; bad input is refused by name.
#include <catch2/catch.hpp>
#include <fstream>
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
  std::string t = "'" + tree.string() + "'";
  REQUIRE(shell("cd " + t +
                " && c++ -std=c++17 -O2 -fopenmp -fPIC -shared -Wall -Wextra -Werror "
                "-o libeqfuse_model.so kernels.cpp && c++ -std=c++17 -O2 -Wall -Wextra -Werror "
                "-o bench bench.cpp -L. -leqfuse_model -Wl,-rpath,.") == 0);
  std::string data = "'" + (example("mlp") / "test_data_set_0").string() + "'";
  REQUIRE(shell("cd " + t + " && ./bench --test-data " + data + " --runs 2 > bench.json") == 0);
  std::ifstream in(tree / "bench.json");
  auto b = nlohmann::json::parse(in);
  CHECK(b["match"] == true);
  CHECK(b["checked"].size() == 1);
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
