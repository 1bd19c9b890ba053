#include "tools/precision_check.h"

#include <fmt/format.h>

#include "codegen/cpu_backend.h"
#include "frontend/test_data.h"
#include "ir/interpreter.h"
#include "support/error.h"
#include "tools/model_summary.h"
#include "tools/random_inputs.h"

namespace eqfuse::tools {

std::string PrecisionCheck::str() const {
  std::string what = fmt::format(
      "precision {}: f32 weights and intermediates stored as {}, arithmetic in f32 (an "
      "approximation)",
      ir::dtype_name(precision), ir::dtype_name(precision));
  if (!checked) return what + "; not checked: " + not_checked;
  return what + fmt::format(
                    "; checked with the C++ twin against the f32 interpreter on random inputs: "
                    "max abs error {:.3g} ({}), {} rtol {} atol {}",
                    max_abs_error, worst_output, match ? "within" : "NOT within", rtol, atol);
}

PrecisionCheck check_precision(const ir::Graph& graph, ir::DType precision,
                               const std::map<std::string, int64_t>& dims,
                               const std::filesystem::path& model,
                               const std::function<void(const std::string&)>& on_compile) {
  PrecisionCheck r;
  r.precision = precision;
  std::tie(r.rtol, r.atol) = codegen::precision_tolerance(precision);
  if (auto missing = missing_weight_files(graph); !missing.empty()) {
    r.not_checked = "the weights are missing (a structure-only model)";
    return r;
  }
  if (auto opaque = opaque_node_labels(graph); !opaque.empty()) {
    r.not_checked = "the interpreter cannot run " + opaque.front();
    return r;
  }
  auto chosen = choose_dims(graph, dims, dim_hints_from_test_data(graph, model));
  std::vector<ir::Tensor> inputs = random_inputs(graph, 0, chosen);
  std::vector<ir::Tensor> want = ir::Interpreter(graph).run(inputs);
  codegen::PlanOptions options;
  options.precision = precision;
  auto twin = codegen::CpuModule::build(graph, nullptr, on_compile, options);
  std::vector<ir::Tensor> got = twin->run(inputs);
  for (size_t k = 0; k < got.size(); ++k) {
    frontend::Comparison c = frontend::compare_tensors(got[k], want[k], r.rtol, r.atol);
    const std::string& name = graph.value(graph.outputs()[k]).name;
    if (k == 0 || c.max_abs_error > r.max_abs_error) r.worst_output = name;
    r.max_abs_error = std::max(r.max_abs_error, c.max_abs_error);
    r.max_rel_error = std::max(r.max_rel_error, c.max_rel_error);
    r.match = r.match && c.match;
  }
  r.checked = true;
  return r;
}

}  // namespace eqfuse::tools
