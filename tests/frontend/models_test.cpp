// The shared model set (../shared/models): every model with test_data_set_0 runs in the
// interpreter to PyTorch's outputs (rtol 1e-3, atol 1e-4); structure-only models import in
// well under a second; every model survives export and re-import.
#include <onnx/checker.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <iostream>

#include "frontend/onnx_export.h"
#include "frontend/onnx_import.h"
#include "frontend/test_data.h"
#include "ir/interpreter.h"
#include "support/error.h"
#include "tests/frontend/graph_compare.h"
#include "tests/test_data.h"

namespace {

using namespace eqfuse;
using namespace eqfuse::test;
namespace fs = std::filesystem;

std::vector<fs::path> model_dirs() {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(shared_dir() / "models")) {
    if (fs::exists(e.path() / "model.onnx")) out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

bool has_missing_weights(const ir::Graph& g) {
  for (const ir::Value& v : g.values()) {
    if (v.external && !fs::exists(v.external->file)) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("every shared model with test data matches PyTorch", "[frontend][models]") {
  for (const fs::path& dir : model_dirs()) {
    if (!fs::is_directory(dir / "test_data_set_0")) continue;
    std::string name = dir.filename().string();
    SECTION(name) {
      auto t0 = std::chrono::steady_clock::now();
      ir::Graph g = frontend::import_onnx(dir / "model.onnx");
      double import_ms = ms_since(t0);
      frontend::TestDataSet data = frontend::read_test_data_set(dir / "test_data_set_0");
      std::vector<ir::Tensor> inputs = frontend::bind_inputs(g, data.inputs);
      auto t1 = std::chrono::steady_clock::now();
      std::vector<ir::Tensor> got = ir::Interpreter(g).run(inputs);
      double run_ms = ms_since(t1);
      REQUIRE(got.size() == data.outputs.size());
      for (size_t k = 0; k < got.size(); ++k) {
        auto c = frontend::compare_tensors(got[k], data.outputs[k].tensor, 1e-3, 1e-4);
        std::cout << name << " output " << k << ": " << c.str() << " (import " << import_ms
                  << " ms, run " << run_ms << " ms)\n";
        INFO(name << " output " << k << ": " << c.str());
        CHECK(c.match);
      }
      ir::Graph back = frontend::import_onnx_bytes(frontend::export_onnx_bytes(g, dir), dir,
                                                   name + " (round trip)");
      check_same_structure(g, back);
      check_same_outputs(ir::Interpreter(back).run(inputs), got, 0, 0);
    }
  }
}

TEST_CASE("every shared model imports fast and survives a round trip", "[frontend][models]") {
  for (const fs::path& dir : model_dirs()) {
    std::string name = dir.filename().string();
    SECTION(name) {
      auto t0 = std::chrono::steady_clock::now();
      ir::Graph g = frontend::import_onnx(dir / "model.onnx");
      double import_ms = ms_since(t0);
      bool structure_only = has_missing_weights(g);
      std::cout << name << ": " << g.nodes().size() << " nodes, " << g.parameter_count()
                << " parameters, imported in " << import_ms << " ms"
                << (structure_only ? " (structure only)" : "") << "\n";
      if (structure_only) CHECK(import_ms < 1000);
      for (const ir::Node& n : g.nodes()) {
        INFO(name << ": " << n.op_type << " '" << n.name << "'");
        CHECK(!n.is_opaque());
        CHECK(n.op_type != "Constant");
        CHECK(n.op_type != "Identity");
      }
      onnx::ModelProto proto = frontend::export_model_proto(g, dir);
      if (!structure_only) CHECK_NOTHROW(onnx::checker::check_model(proto));
      std::string bytes;
      proto.SerializeToString(&bytes);
      ir::Graph back = frontend::import_onnx_bytes(bytes, dir, name + " (round trip)");
      check_same_structure(g, back);
      if (structure_only) {
        // Export refers to the original weights file rather than needing its contents.
        int external = 0;
        for (const auto& t : proto.graph().initializer()) {
          external += t.data_location() == onnx::TensorProto::EXTERNAL;
        }
        CHECK(external > 0);
      }
    }
  }
}
