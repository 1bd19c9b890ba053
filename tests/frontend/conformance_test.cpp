// ONNX's own backend node tests (Debian package libonnx-testdata): every case whose ops are all
// in the op table is imported, run in the interpreter and compared with ONNX's expected
// outputs, then exported, re-imported and run again. Tolerance: |got - expected| <= 1e-5 +
// 1e-3 * |expected| (ONNX's backend runner uses rtol 1e-3 too), NaN matching NaN.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "frontend/onnx_export.h"
#include "frontend/onnx_import.h"
#include "frontend/test_data.h"
#include "ir/interpreter.h"
#include "ir/op_table.h"
#include "support/error.h"

namespace {

using namespace eqfuse;
namespace fs = std::filesystem;

constexpr double kRtol = 1e-3;
constexpr double kAtol = 1e-5;
const char* kNodeTests = "/usr/share/libonnx-testdata/data/node";

// Cases whose semantics eqfuse deliberately does not support, with the reason.
const std::map<std::string, std::string> kExcluded = {
    // Training-mode ops: eqfuse is an inference optimizer; Dropout is the identity.
    {"test_dropout_random_old", "random training-mode dropout (inference only)"},
    {"test_training_dropout", "training-mode dropout (inference only)"},
    {"test_training_dropout_default", "training-mode dropout (inference only)"},
    {"test_training_dropout_default_mask", "training-mode dropout (inference only)"},
    {"test_training_dropout_mask", "training-mode dropout (inference only)"},
    {"test_training_dropout_zero_ratio", "training-mode dropout (inference only)"},
    {"test_training_dropout_zero_ratio_mask", "training-mode dropout (inference only)"},
    {"test_batchnorm_epsilon_training_mode", "training-mode BatchNormalization (inference only)"},
    {"test_batchnorm_example_training_mode", "training-mode BatchNormalization (inference only)"},
};

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The ops of a model the table lacks (top-level graph, default domain or not).
std::set<std::string> missing_ops(const onnx::ModelProto& m) {
  std::set<std::string> missing;
  for (const auto& n : m.graph().node()) {
    std::string op = n.op_type();
    bool onnx_domain = n.domain().empty() || n.domain() == "ai.onnx";
    if (onnx_domain && op == "Constant") continue;
    if (onnx_domain && op == "Upsample") op = "Resize";  // upgraded at import
    if (!ir::find_op(op, onnx_domain ? "" : n.domain())) {
      missing.insert(onnx_domain ? op : n.domain() + "." + op);
    }
  }
  return missing;
}

struct Outcome {
  enum Kind { Passed, Failed, Unsupported, Excluded } kind;
  std::string reason;
};

Outcome run_case(const fs::path& dir, std::map<std::string, int>& missing_histogram) {
  std::string bytes = read_file(dir / "model.onnx");
  onnx::ModelProto proto;
  if (!proto.ParseFromString(bytes)) return {Outcome::Failed, "model.onnx does not parse"};
  std::string name = dir.filename().string();
  if (auto it = kExcluded.find(name); it != kExcluded.end()) {
    return {Outcome::Excluded, it->second};
  }
  auto missing = missing_ops(proto);
  if (!missing.empty()) {
    for (const auto& op : missing) ++missing_histogram[op];
    return {Outcome::Unsupported, "op " + *missing.begin() + " not in the table"};
  }
  ir::Graph g;
  try {
    g = frontend::import_onnx_bytes(bytes, dir, name);
  } catch (const Error& e) {
    if (e.kind() == Error::Kind::Unsupported) return {Outcome::Unsupported, e.what()};
    return {Outcome::Failed, std::string("import: ") + e.what()};
  }
  for (const ir::Node& n : g.nodes()) {
    if (n.is_opaque()) return {Outcome::Unsupported, "opaque op " + n.op_type};
  }
  ir::Graph back;
  try {
    back =
        frontend::import_onnx_bytes(frontend::export_onnx_bytes(g, dir), dir, name + " (export)");
  } catch (const Error& e) {
    return {Outcome::Failed, std::string("round trip: ") + e.what()};
  }
  int sets = 0;
  for (int k = 0; fs::is_directory(dir / ("test_data_set_" + std::to_string(k))); ++k) {
    ++sets;
    frontend::TestDataSet data;
    std::vector<ir::Tensor> got;
    try {
      data = frontend::read_test_data_set(dir / ("test_data_set_" + std::to_string(k)));
      std::vector<ir::Tensor> inputs = frontend::bind_inputs(g, data.inputs);
      got = ir::Interpreter(g).run(inputs);
      std::vector<ir::Tensor> again = ir::Interpreter(back).run(inputs);
      for (size_t i = 0; i < got.size(); ++i) {
        auto c = frontend::compare_tensors(again.at(i), got[i], 0, 0);
        if (!c.match) return {Outcome::Failed, "round trip changes output " + std::to_string(i)};
      }
    } catch (const Error& e) {
      if (e.kind() == Error::Kind::Unsupported) return {Outcome::Unsupported, e.what()};
      return {Outcome::Failed, e.what()};
    }
    if (got.size() != data.outputs.size()) {
      return {Outcome::Failed, "wrong number of outputs"};
    }
    for (size_t i = 0; i < got.size(); ++i) {
      auto c = frontend::compare_tensors(got[i], data.outputs[i].tensor, kRtol, kAtol);
      if (!c.match) {
        std::string detail = c.str();
        if (!c.same_shape) {
          detail =
              "got " + got[i].type().str() + ", expected " + data.outputs[i].tensor.type().str();
        }
        return {Outcome::Failed, "output " + std::to_string(i) + ": " + detail};
      }
    }
  }
  if (sets == 0) return {Outcome::Failed, "no test data"};
  return {Outcome::Passed, ""};
}

}  // namespace

TEST_CASE("ONNX backend node tests pass for every supported case", "[frontend][conformance]") {
  if (!fs::is_directory(kNodeTests)) {
    WARN("skipped: " << kNodeTests << " not found (Debian package libonnx-testdata)");
    return;
  }
  std::vector<fs::path> cases;
  for (const auto& entry : fs::directory_iterator(kNodeTests)) {
    if (fs::exists(entry.path() / "model.onnx")) cases.push_back(entry.path());
  }
  std::sort(cases.begin(), cases.end());
  const char* filter = std::getenv("EQFUSE_CONFORMANCE_FILTER");
  std::map<Outcome::Kind, int> counts;
  std::map<std::string, int> missing;
  std::vector<std::string> failures;
  std::vector<std::string> kernel_unsupported;
  for (const auto& dir : cases) {
    std::string name = dir.filename().string();
    if (filter && name.find(filter) == std::string::npos) continue;
    Outcome o = run_case(dir, missing);
    ++counts[o.kind];
    if (o.kind == Outcome::Failed) failures.push_back(name + ": " + o.reason);
    if (o.kind == Outcome::Unsupported && o.reason.rfind("op ", 0) != 0) {
      kernel_unsupported.push_back(name + ": " + o.reason);
    }
  }
  int supported = counts[Outcome::Passed] + counts[Outcome::Failed];
  std::cout << "conformance (rtol " << kRtol << ", atol " << kAtol << "): " << cases.size()
            << " cases, " << supported << " supported: " << counts[Outcome::Passed] << " passed, "
            << counts[Outcome::Failed] << " failed; " << counts[Outcome::Unsupported]
            << " unsupported, " << counts[Outcome::Excluded] << " excluded\n";
  std::vector<std::pair<int, std::string>> ops;
  for (const auto& [op, n] : missing) ops.emplace_back(n, op);
  std::sort(ops.rbegin(), ops.rend());
  std::cout << "ops missing from the table (cases):";
  for (const auto& [n, op] : ops) std::cout << " " << op << "(" << n << ")";
  std::cout << "\n";
  for (const auto& k : kernel_unsupported) std::cout << "  unsupported: " << k << "\n";
  for (const auto& f : failures) std::cout << "  FAILED " << f << "\n";
  CHECK(failures.empty());
  if (!filter) CHECK(supported >= 450);
}
