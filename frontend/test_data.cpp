#include "frontend/test_data.h"

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "frontend/tensor_proto.h"
#include "support/error.h"

namespace eqfuse::frontend {

namespace fs = std::filesystem;

NamedTensor read_tensor_file(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw Error(fmt::format("{}: cannot open the tensor file", file.string()));
  std::ostringstream buffer;
  buffer << in.rdbuf();
  std::string bytes = buffer.str();
  onnx::TensorProto proto;
  if (bytes.empty() || !proto.ParseFromString(bytes)) {
    throw Error(fmt::format("{}: not a serialized ONNX TensorProto", file.string()));
  }
  return {proto.name(), tensor_from_proto(proto, file.string())};
}

void write_tensor_file(const fs::path& file, const std::string& name, const ir::Tensor& tensor) {
  std::string bytes;
  tensor_to_proto(tensor, name).SerializeToString(&bytes);
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw Error(fmt::format("{}: cannot write the file", file.string()));
}

TestDataSet read_test_data_set(const fs::path& dir) {
  if (!fs::is_directory(dir)) {
    throw Error(fmt::format("{}: test data folder not found", dir.string()));
  }
  TestDataSet set;
  for (int k = 0;; ++k) {
    fs::path f = dir / fmt::format("input_{}.pb", k);
    if (!fs::exists(f)) break;
    set.inputs.push_back(read_tensor_file(f));
  }
  for (int k = 0;; ++k) {
    fs::path f = dir / fmt::format("output_{}.pb", k);
    if (!fs::exists(f)) break;
    set.outputs.push_back(read_tensor_file(f));
  }
  if (set.inputs.empty() && set.outputs.empty()) {
    throw Error(fmt::format("{}: no input_K.pb or output_K.pb files", dir.string()));
  }
  return set;
}

namespace {

bool type_accepts(const ir::TensorType& declared, const ir::Tensor& t) {
  if (declared.dtype != t.dtype()) return false;
  if (!declared.shape.has_rank()) return true;
  if (declared.shape.rank() != t.rank()) return false;
  for (size_t i = 0; i < t.rank(); ++i) {
    const ir::Dim& d = declared.shape[i];
    if (d.is_static() && d.value() != t.dims()[i]) return false;
  }
  return true;
}

}  // namespace

std::vector<ir::Tensor> bind_inputs(const ir::Graph& graph, const std::vector<NamedTensor>& given) {
  const auto& inputs = graph.inputs();
  std::vector<ir::Tensor> out(inputs.size());
  std::vector<bool> bound(inputs.size(), false);
  bool by_name = !given.empty();
  for (const auto& t : given) {
    bool found = false;
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (graph.value(inputs[i]).name == t.name) found = true;
    }
    if (!found) by_name = false;
  }
  for (size_t k = 0; k < given.size(); ++k) {
    size_t slot = k;
    if (by_name) {
      for (size_t i = 0; i < inputs.size(); ++i) {
        if (graph.value(inputs[i]).name == given[k].name) slot = i;
      }
    }
    if (slot >= inputs.size()) {
      throw Error(fmt::format("{} input tensors given but the model has {} inputs", given.size(),
                              inputs.size()));
    }
    const ir::Value& v = graph.value(inputs[slot]);
    if (!type_accepts(v.type, given[k].tensor)) {
      throw Error(fmt::format("input '{}' expects {}, got {}", v.name, v.type.str(),
                              given[k].tensor.type().str()));
    }
    out[slot] = given[k].tensor;
    bound[slot] = true;
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!bound[i]) {
      throw Error(fmt::format("no value given for input '{}'", graph.value(inputs[i]).name));
    }
  }
  return out;
}

std::string Comparison::str() const {
  if (!same_shape) return "shape or dtype differs";
  return fmt::format("max abs error {:.3g}, max rel error {:.3g}, {} mismatched", max_abs_error,
                     max_rel_error, mismatches);
}

Comparison compare_tensors(const ir::Tensor& got, const ir::Tensor& expected, double rtol,
                           double atol) {
  Comparison c;
  if (got.dims() != expected.dims() || got.dtype() != expected.dtype()) {
    c.match = false;
    c.same_shape = false;
    return c;
  }
  double worst = -1;
  for (int64_t i = 0; i < got.numel(); ++i) {
    double a = got.get(i);
    double e = expected.get(i);
    bool ok;
    double abs_err = 0;
    if (std::isnan(e) || std::isnan(a)) {
      ok = std::isnan(e) && std::isnan(a);
      if (!ok) abs_err = INFINITY;
    } else if (std::isinf(e) || std::isinf(a)) {
      ok = a == e;
      if (!ok) abs_err = INFINITY;
    } else {
      abs_err = std::fabs(a - e);
      ok = abs_err <= atol + rtol * std::fabs(e);
      if (e != 0) c.max_rel_error = std::max(c.max_rel_error, abs_err / std::fabs(e));
    }
    c.max_abs_error = std::max(c.max_abs_error, abs_err);
    if (!ok) {
      if (c.mismatches == 0) c.worst_index = i;
      ++c.mismatches;
      c.match = false;
    } else if (c.match && abs_err > worst) {
      worst = abs_err;
      c.worst_index = i;
    }
  }
  return c;
}

}  // namespace eqfuse::frontend
