#pragma once
// ONNX test data (the layout of ONNX's backend tests: test_data_set_N/input_K.pb and
// output_K.pb, each a serialized TensorProto) and the check of computed outputs against it,
// shared by `eqfuse run`, the conformance test and the model tests so they agree on what
// "matches" means.
#include <filesystem>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/tensor.h"

namespace eqfuse::frontend {

struct NamedTensor {
  std::string name;  // as stored in the file; may be empty
  ir::Tensor tensor;
};

// One serialized TensorProto. Errors name the file.
NamedTensor read_tensor_file(const std::filesystem::path& file);
void write_tensor_file(const std::filesystem::path& file, const std::string& name,
                       const ir::Tensor& tensor);

struct TestDataSet {
  std::vector<NamedTensor> inputs;   // input_0.pb, input_1.pb, ...
  std::vector<NamedTensor> outputs;  // output_0.pb, ...
};
TestDataSet read_test_data_set(const std::filesystem::path& dir);

// The tensors for graph.inputs(), in order: by name where the files name graph inputs, else
// by position. Error when one is missing or dtype/shape disagree with the graph.
std::vector<ir::Tensor> bind_inputs(const ir::Graph& graph, const std::vector<NamedTensor>& given);

// |got - expected| <= atol + rtol * |expected| elementwise; NaN matches NaN, infinities match
// by sign; integers and booleans compare exactly (the tolerance still applies, harmlessly).
struct Comparison {
  bool match = true;
  bool same_shape = true;
  int64_t mismatches = 0;
  double max_abs_error = 0;
  double max_rel_error = 0;  // over elements with expected != 0
  int64_t worst_index = -1;  // the first element that fails, or the largest error
  std::string str() const;   // "max abs 1.2e-06, max rel 3.4e-05, 0 of 100 mismatch"
};
Comparison compare_tensors(const ir::Tensor& got, const ir::Tensor& expected, double rtol,
                           double atol);

}  // namespace eqfuse::frontend
