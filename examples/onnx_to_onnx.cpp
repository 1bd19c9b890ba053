// ONNX in, optimized ONNX out, checked: what `eqfuse optimize MODEL -o OUT` does, through the
// library. The model is read, optimized with the proved rule library and fusion, written back as
// ONNX, read again, and both files are run in the reference interpreter on the model's own test
// data (its input_0.pb and output_0.pb), within rtol 1e-3, atol 1e-4. Built and run by the tests
// (example_onnx_to_onnx) on the bundled MLP block.
//
//   onnx_to_onnx MODEL_DIR OUT.onnx     (MODEL_DIR holds model.onnx and test_data_set_0/)
#include <cstdio>
#include <filesystem>

#include "frontend/onnx_export.h"
#include "frontend/onnx_import.h"
#include "frontend/test_data.h"
#include "ir/interpreter.h"
#include "optimizer/optimize.h"
#include "support/error.h"

using namespace eqfuse;
namespace fs = std::filesystem;

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s MODEL_DIR OUT.onnx\n", argv[0]);
    return 2;
  }
  fs::path dir = argv[1], out = argv[2];
  try {
    ir::Graph original = frontend::import_onnx(dir / "model.onnx");

    optimizer::OptimizeOptions options;  // the rule library, fusion, DAG extraction, verified
    options.device = "h200";
    optimizer::OptimizeResult result = optimizer::optimize(original, options);
    const optimizer::OptimizeReport& r = result.report;
    std::printf("%zu -> %zu kernels, %.4f -> %.4f ms predicted on %s; stop: %s\n", r.kernels_before,
                r.kernels_after, r.predicted_ms_before, r.predicted_ms_after,
                options.device.c_str(), r.stop_reason.c_str());
    for (const auto& [kind, count] : r.kernel_kinds)
      std::printf("  %zu %s kernel(s)\n", count, kind.c_str());
    frontend::export_onnx(result.graph, out);

    // What a user of the file sees: read it back and run it against the model's test data.
    ir::Graph written = frontend::import_onnx(out);
    frontend::TestDataSet data = frontend::read_test_data_set(dir / "test_data_set_0");
    bool all_match = true;
    for (const ir::Graph* g : {&original, &written}) {
      std::vector<ir::Tensor> got = ir::Interpreter(*g).run(frontend::bind_inputs(*g, data.inputs));
      for (size_t k = 0; k < data.outputs.size(); ++k) {
        frontend::Comparison c =
            frontend::compare_tensors(got.at(k), data.outputs[k].tensor, 1e-3, 1e-4);
        std::printf("%s output %zu: %s (%s)\n", g == &original ? "original " : "optimized", k,
                    c.match ? "matches" : "DIFFERS", c.str().c_str());
        all_match = all_match && c.match;
      }
    }
    std::printf("wrote %s\n", out.string().c_str());
    return all_match ? 0 : 1;
  } catch (const Error& e) {  // a malformed model, a rule that is not proved, ...
    std::fprintf(stderr, "onnx_to_onnx: %s\n", e.what());
    return e.exit_code();
  }
}
