// ONNX's own backend tests (Debian package libonnx-testdata: node, pytorch-converted,
// pytorch-operator and simple) run through code generation: every case the interpreter passes is
// planned, and either its C++ twin is built and matches ONNX's expected outputs on every test
// set (rtol 1e-3, atol 1e-5, NaN matching NaN: the interpreter's conformance tolerance), or code
// generation refuses it with an Unsupported error naming one of the case's ops or values. A
// wrong output, a twin that does not compile, or any other error fails the test. The op-by-op
// cases reach index arithmetic, dtypes and attributes that the shared models do not (an IsInf
// computed in int64, a Clip whose int8 bounds did not compile, a training-mode Dropout passed
// through).
#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <filesystem>
#include <iostream>
#include <map>
#include <mutex>
#include <thread>

#include "codegen/cpu_backend.h"
#include "frontend/onnx_import.h"
#include "frontend/test_data.h"
#include "ir/interpreter.h"
#include "support/error.h"

namespace {

using namespace eqfuse;
namespace fs = std::filesystem;

constexpr double kRtol = 1e-3;
constexpr double kAtol = 1e-5;
const char* kTestData = "/usr/share/libonnx-testdata/data";

struct Outcome {
  enum Kind { Passed, Refused, Failed, NotInInterpreter } kind;
  std::string reason;
};

std::vector<fs::path> test_sets(const fs::path& dir) {
  std::vector<fs::path> sets;
  for (int k = 0; fs::is_directory(dir / ("test_data_set_" + std::to_string(k))); ++k)
    sets.push_back(dir / ("test_data_set_" + std::to_string(k)));
  return sets;
}

// The first output that differs from the expected one, or "".
std::string mismatch(const std::vector<ir::Tensor>& got, const frontend::TestDataSet& data) {
  if (got.size() != data.outputs.size()) return "wrong number of outputs";
  for (size_t i = 0; i < got.size(); ++i) {
    frontend::Comparison c =
        frontend::compare_tensors(got[i], data.outputs[i].tensor, kRtol, kAtol);
    if (!c.match)
      return "output " + std::to_string(i) + ": " +
             (c.same_shape ? c.str()
                           : "got " + got[i].type().str() + ", expected " +
                                 data.outputs[i].tensor.type().str());
  }
  return "";
}

Outcome run_case(const fs::path& dir) {
  ir::Graph g;
  std::vector<frontend::TestDataSet> sets;
  std::vector<std::vector<ir::Tensor>> inputs;
  // Cases the interpreter cannot import, run or match are the frontend conformance test's.
  try {
    g = frontend::import_onnx(dir / "model.onnx");
    for (const ir::Node& n : g.nodes())
      if (n.is_opaque()) return {Outcome::NotInInterpreter, "opaque op " + n.op_type};
    for (const fs::path& set : test_sets(dir)) {
      sets.push_back(frontend::read_test_data_set(set));
      inputs.push_back(frontend::bind_inputs(g, sets.back().inputs));
      if (!mismatch(ir::Interpreter(g).run(inputs.back()), sets.back()).empty())
        return {Outcome::NotInInterpreter, "the interpreter differs"};
    }
  } catch (const Error& e) {
    return {Outcome::NotInInterpreter, e.what()};
  }
  if (sets.empty()) return {Outcome::NotInInterpreter, "no test data"};
  std::unique_ptr<codegen::CpuModule> twin;
  try {
    twin = codegen::CpuModule::build(g);
  } catch (const Error& e) {
    if (e.kind() != Error::Kind::Unsupported)
      return {Outcome::Failed, std::string("build: ") + e.what()};
    // A refusal names an op or a value of the case (the user's way to what stopped it).
    const std::string why = e.what();
    for (const ir::Node& n : g.nodes())
      if (why.find(n.op_type) != std::string::npos) return {Outcome::Refused, why};
    for (const ir::Value& v : g.values())
      if (!v.name.empty() && why.find("'" + v.name + "'") != std::string::npos)
        return {Outcome::Refused, why};
    return {Outcome::Failed, "refused without naming an op or value: " + why};
  }
  for (size_t k = 0; k < sets.size(); ++k) {
    try {
      const std::string wrong = mismatch(twin->run(inputs[k]), sets[k]);
      if (!wrong.empty()) return {Outcome::Failed, "test set " + std::to_string(k) + " " + wrong};
    } catch (const Error& e) {
      return {Outcome::Failed, std::string("run: ") + e.what()};
    }
  }
  return {Outcome::Passed, ""};
}

}  // namespace

TEST_CASE(
    "the C++ twin passes ONNX's backend tests that the interpreter passes, or names the op "
    "it refuses",
    "[codegen][conformance]") {
  std::vector<fs::path> cases;
  for (const char* group : {"node", "pytorch-converted", "pytorch-operator", "simple"}) {
    const fs::path root = fs::path(kTestData) / group;
    if (!fs::is_directory(root)) continue;
    for (const auto& entry : fs::directory_iterator(root))
      if (fs::exists(entry.path() / "model.onnx")) cases.push_back(entry.path());
  }
  if (cases.empty()) {
    WARN("skipped: " << kTestData << " not found (Debian package libonnx-testdata)");
    return;
  }
  std::sort(cases.begin(), cases.end());
  const char* filter = std::getenv("EQFUSE_CONFORMANCE_FILTER");
  if (filter)
    cases.erase(std::remove_if(cases.begin(), cases.end(),
                               [&](const fs::path& p) {
                                 return p.string().find(filter) == std::string::npos;
                               }),
                cases.end());

  // Each twin is a compiler run of a fraction of a second: one case per core at a time.
  std::vector<Outcome> outcomes(cases.size());
  std::atomic<size_t> next{0};
  std::vector<std::thread> workers;
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  for (unsigned t = 0; t < threads; ++t)
    workers.emplace_back([&] {
      for (size_t i; (i = next++) < cases.size();) outcomes[i] = run_case(cases[i]);
    });
  for (std::thread& w : workers) w.join();

  std::map<Outcome::Kind, int> counts;
  std::map<std::string, int> refused_by;  // the refusal's text up to the node name
  std::vector<std::string> failures;
  for (size_t i = 0; i < cases.size(); ++i) {
    const Outcome& o = outcomes[i];
    ++counts[o.kind];
    const std::string name =
        cases[i].parent_path().filename().string() + "/" + cases[i].filename().string();
    if (o.kind == Outcome::Failed) failures.push_back(name + ": " + o.reason);
    if (o.kind == Outcome::Refused) ++refused_by[o.reason.substr(0, o.reason.find(" '"))];
  }
  std::cout << "C++ twin conformance (rtol " << kRtol << ", atol " << kAtol << "): " << cases.size()
            << " cases, " << cases.size() - counts[Outcome::NotInInterpreter]
            << " that the interpreter passes: " << counts[Outcome::Passed] << " passed, "
            << counts[Outcome::Refused] << " refused, " << counts[Outcome::Failed]
            << " failed\nrefused (cases):";
  std::vector<std::pair<int, std::string>> by_count;
  for (const auto& [why, n] : refused_by) by_count.emplace_back(n, why);
  std::sort(by_count.rbegin(), by_count.rend());
  for (const auto& [n, why] : by_count) std::cout << " " << why << " (" << n << ")";
  std::cout << "\n";
  for (const std::string& f : failures) std::cout << "  FAILED " << f << "\n";
  CHECK(failures.empty());
  // Every case passed when this was written; a lower count is an op the twin stopped computing.
  if (!filter) CHECK(counts[Outcome::Passed] >= 569);
}
