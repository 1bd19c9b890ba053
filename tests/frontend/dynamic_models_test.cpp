// The dynamic-batch models (../shared/models_dynamic): each imports once with `batch` kept as a
// symbol in its inputs and outputs, and that one graph runs both test sets, batch 1 and batch
// 5, to PyTorch's outputs (rtol 1e-3, atol 1e-4). The shape chains the exporter wrote for
// the reshapes are typed symbolically, so no value inside is of unknown rank.
#include <catch2/catch.hpp>
#include <iostream>

#include "frontend/onnx_export.h"
#include "frontend/onnx_import.h"
#include "frontend/test_data.h"
#include "ir/interpreter.h"
#include "tests/test_data.h"

namespace {

using namespace eqfuse;
using namespace eqfuse::test;
namespace fs = std::filesystem;

const char* const kModels[] = {"pointwise_chain", "mlp_block", "attention_block",
                               "bert_tiny",       "gpt_tiny",  "squeezenet1_1"};

}  // namespace

TEST_CASE("every dynamic-batch model runs both test sets from one import", "[frontend][models]") {
  for (const char* name : kModels) {
    SECTION(name) {
      fs::path dir = shared_dir() / "models_dynamic" / name;
      ir::Graph g = frontend::import_onnx(dir / "model.onnx");
      for (ir::ValueId v : g.inputs()) {
        INFO(g.value(v).name << " " << g.value(v).type.str());
        CHECK(g.value(v).type.shape[0] == ir::Dim::symbol("batch"));
      }
      for (ir::ValueId v : g.outputs()) {
        INFO(g.value(v).name << " " << g.value(v).type.str());
        CHECK(g.value(v).type.shape[0] == ir::Dim::symbol("batch"));
      }
      // Every value inside is typed: no unknown rank, no unknown dim ("?").
      size_t symbolic = 0;
      for (const ir::Value& v : g.values()) {
        INFO(v.name << " " << v.type.str());
        CHECK(v.type.shape.has_rank());
        CHECK(v.type.str().find('?') == std::string::npos);
        if (!v.type.shape.is_static()) ++symbolic;
      }
      std::cout << name << ": " << g.nodes().size() << " nodes, " << symbolic
                << " values of symbolic shape\n";
      ir::Interpreter interp(g);
      for (int k : {0, 1}) {
        frontend::TestDataSet data =
            frontend::read_test_data_set(dir / ("test_data_set_" + std::to_string(k)));
        std::vector<ir::Tensor> got = interp.run(frontend::bind_inputs(g, data.inputs));
        REQUIRE(got.size() == data.outputs.size());
        for (size_t i = 0; i < got.size(); ++i) {
          auto c = frontend::compare_tensors(got[i], data.outputs[i].tensor, 1e-3, 1e-4);
          std::cout << name << " set " << k << " output " << i << " " << got[i].type().str() << ": "
                    << c.str() << "\n";
          INFO(name << " set " << k << " output " << i << ": " << c.str());
          CHECK(c.match);
        }
      }
      // Export keeps the symbol, and the re-imported model still runs at any batch.
      ir::Graph back = frontend::import_onnx_bytes(frontend::export_onnx_bytes(g, dir), dir,
                                                   std::string(name) + " (round trip)");
      CHECK(back.value(back.inputs()[0]).type.shape[0] == ir::Dim::symbol("batch"));
    }
  }
}
