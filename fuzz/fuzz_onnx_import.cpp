// Fuzz target: arbitrary bytes as an ONNX model. Import (shape inference included) either gives
// a graph or throws eqfuse::Error; an imported graph then goes through the tensor e-graph and
// back, and through export, which must not fail on anything import accepted.
#include <cstddef>
#include <cstdint>
#include <string>

#include "frontend/onnx_export.h"
#include "frontend/onnx_import.h"
#include "optimizer/tensor_egraph.h"
#include "support/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace eqfuse;
  std::string bytes(reinterpret_cast<const char*>(data), size);
  ir::Graph graph;
  try {
    graph = frontend::import_onnx_bytes(bytes, "/nonexistent", "fuzz.onnx");
  } catch (const Error&) {
    return 0;  // rejected with a message: what bad input should get
  }
  optimizer::TensorEGraph teg = optimizer::from_graph(graph);
  ir::Graph back = optimizer::to_graph(teg, optimizer::original_choice(teg));
  (void)frontend::export_onnx_bytes(back, "/nonexistent");
  return 0;
}
