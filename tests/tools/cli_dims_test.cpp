// `eqfuse info`, `run` and `cost` on models with symbolic dims: info prints them, run binds
// them from test data, from --dim NAME=VALUE or from documented defaults (1 for a leading
// batch dim, 32 otherwise, so 2x2 windows fit) and says which; invalid symbolic reshapes are
// refused with exit 2 naming the node. The shared models (../shared) are used where present.
#include <sys/wait.h>

#include <array>
#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "tests/frontend/model_builder.h"
#include "tests/test_data.h"

namespace {

using namespace eqfuse;
using namespace eqfuse::test;
namespace fs = std::filesystem;

struct Result {
  int code = -1;
  std::string out;
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
  return r;
}

std::string quoted(const fs::path& p) {
  return "'" + p.string() + "'";
}

nlohmann::json parse_json(const std::string& out) {
  INFO(out);
  nlohmann::json j;
  REQUIRE_NOTHROW(j = nlohmann::json::parse(out));
  return j;
}

// A tensor value whose dims are sizes (>= 0) or names.
void add_typed(google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>* to,
               const std::string& name, const std::vector<std::string>& dims) {
  auto* t = to->Add();
  t->set_name(name);
  auto* tt = t->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  for (const std::string& d : dims) {
    if (std::isdigit(static_cast<unsigned char>(d[0])))
      tt->mutable_shape()->add_dim()->set_dim_value(std::stoll(d));
    else
      tt->mutable_shape()->add_dim()->set_dim_param(d);
  }
}

// x[n,3,h,w] -> MaxPool 2x2 stride 2.
fs::path pooling_model() {
  auto m = onnx_model();
  add_typed(m.mutable_graph()->mutable_input(), "x", {"n", "3", "h", "w"});
  auto* p = add_node(m, "MaxPool", {"x"}, {"y"}, "pool");
  add_ints_attr(p, "kernel_shape", {2, 2});
  add_ints_attr(p, "strides", {2, 2});
  add_typed(m.mutable_graph()->mutable_output(), "y", {"n", "3", "hp", "wp"});
  fs::path file = temp_dir("cli_dims") / "pool.onnx";
  write_file(file, bytes_of(m));
  return file;
}

// x[batch,6] -> Reshape to Concat(Shape(x)[0], 4): [batch,4], which no batch satisfies.
fs::path bad_reshape_model() {
  auto m = onnx_model();
  add_typed(m.mutable_graph()->mutable_input(), "x", {"batch", "6"});
  add_int64_initializer(m, "zero", {0});
  add_int64_initializer(m, "four", {4});
  add_node(m, "Shape", {"x"}, {"s"}, "shape");
  add_node(m, "Gather", {"s", "zero"}, {"b"}, "gather");
  add_node(m, "Concat", {"b", "four"}, {"target"}, "concat")->add_attribute()->CopyFrom([] {
    onnx::AttributeProto a;
    a.set_name("axis");
    a.set_type(onnx::AttributeProto::INT);
    a.set_i(0);
    return a;
  }());
  add_node(m, "Reshape", {"x", "target"}, {"y"}, "bad_reshape");
  add_typed(m.mutable_graph()->mutable_output(), "y", {"batch", "4"});
  fs::path file = temp_dir("cli_dims") / "bad_reshape.onnx";
  write_file(file, bytes_of(m));
  return file;
}

std::vector<fs::path> shared_models() {
  std::vector<fs::path> out;
  for (const char* set : {"models", "models_dynamic"}) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(shared_dir() / set, ec)) {
      if (fs::exists(e.path() / "model.onnx")) out.push_back(e.path() / "model.onnx");
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST_CASE("eqfuse run makes inputs for symbolic spatial dims that windows fit", "[tools][run]") {
  fs::path model = pooling_model();
  Result info = run_eqfuse("info " + quoted(model));
  CHECK(info.code == 0);
  CHECK(info.out.find("f32[n,3,h,w]") != std::string::npos);

  Result r = run_eqfuse("run --json " + quoted(model));
  REQUIRE(r.code == 0);
  nlohmann::json j = parse_json(r.out);
  CHECK(j["dims"]["n"]["size"] == 1);
  CHECK(j["dims"]["h"]["size"] == 32);
  CHECK(j["dims"]["w"]["source"] == "default");
  CHECK(j["outputs"][0]["shape"] == nlohmann::json::array({1, 3, 16, 16}));

  Result d = run_eqfuse("run --json " + quoted(model) + " --dim h=8 --dim w=9 --dim n=2");
  REQUIRE(d.code == 0);
  nlohmann::json k = parse_json(d.out);
  CHECK(k["dims"]["h"]["source"] == "--dim");
  CHECK(k["outputs"][0]["shape"] == nlohmann::json::array({2, 3, 4, 4}));

  Result text = run_eqfuse("run " + quoted(model) + " --dim h=4");
  CHECK(text.code == 0);
  CHECK(text.out.find("h=4 (--dim)") != std::string::npos);
  CHECK(text.out.find("w=32 (default)") != std::string::npos);

  CHECK(run_eqfuse("run " + quoted(model) + " --dim h=1").code == 2);  // window larger
  CHECK(run_eqfuse("run " + quoted(model) + " --dim nosuch=3").code == 2);
  CHECK(run_eqfuse("run " + quoted(model) + " --dim h=0").code == 2);
  CHECK(run_eqfuse("run " + quoted(model) + " --dim h").code == 2);
}

TEST_CASE("an invalid symbolic reshape gets exit 2 naming the node", "[tools][info][run]") {
  fs::path model = bad_reshape_model();
  Result i = run_eqfuse("info --json " + quoted(model));
  CHECK(i.code == 2);
  CHECK(i.out.find("bad_reshape") != std::string::npos);
  Result r = run_eqfuse("run --json " + quoted(model));
  CHECK(r.code == 2);
  CHECK(r.out.find("bad_reshape") != std::string::npos);
}

TEST_CASE("eqfuse cost takes --dim for symbolic dims", "[tools][cost]") {
  fs::path model = pooling_model();
  CHECK(
      run_eqfuse("cost " + quoted(model) + " --device h200 --dim n=8 --dim h=64 --dim w=64").code ==
      0);
  CHECK(run_eqfuse("cost " + quoted(model) + " --device h200 --dim n").code == 2);
  CHECK(run_eqfuse("cost " + quoted(model) + " --device h200 --bind n=2").code == 2);
}

TEST_CASE("the dynamic-batch models show batch and run both test sets", "[tools][run][info]") {
  if (!have_shared_dir()) {
    WARN("skipped: ../shared not found");
    return;
  }
  for (const char* name : {"pointwise_chain", "mlp_block", "attention_block", "bert_tiny",
                           "gpt_tiny", "squeezenet1_1"}) {
    fs::path dir = shared_dir() / "models_dynamic" / name;
    INFO(name);
    Result info = run_eqfuse("info --json " + quoted(dir / "model.onnx"));
    REQUIRE(info.code == 0);
    nlohmann::json doc = parse_json(info.out);
    CHECK(doc["inputs"][0]["shape"][0] == "batch");
    CHECK(doc["outputs"][0]["shape"][0] == "batch");
    for (int k : {0, 1}) {
      Result r = run_eqfuse("run " + quoted(dir / "model.onnx") + " --test-data " +
                            quoted(dir / ("test_data_set_" + std::to_string(k))) +
                            " --rtol 1e-3 --atol 1e-4");
      INFO(r.out);
      CHECK(r.code == 0);
    }
  }
}

TEST_CASE("eqfuse run with made-up inputs runs every shared model", "[tools][run]") {
  if (!have_shared_dir()) {
    WARN("skipped: ../shared not found");
    return;
  }
  for (const fs::path& model : shared_models()) {
    INFO(model);
    Result r = run_eqfuse("run --json " + quoted(model));
    INFO(r.out);
    bool structure_only = !fs::exists(model.parent_path() / "test_data_set_0");
    // Structure-only models (no weights.bin) cannot run: exit 3, saying so.
    CHECK(r.code == (structure_only ? 3 : 0));
    if (r.code == 0 && model.string().find("models_dynamic") != std::string::npos) {
      nlohmann::json j = parse_json(r.out);
      CHECK(j["dims"]["batch"]["source"] == "test data");
    }
  }
}
