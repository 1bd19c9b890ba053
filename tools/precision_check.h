#pragma once
// `--precision f16|bf16` is an approximation the user asks for, so it is never silent: before a
// command hands over generated code at a lower precision, the C++ twin built at that precision
// runs on random inputs and is compared with the f32 model in the interpreter, at the
// precision's tolerance (codegen::precision_tolerance). What was measured goes in the command's
// output; a mismatch is exit 1 naming the output.
#include <filesystem>
#include <functional>
#include <map>
#include <string>

#include "ir/dtype.h"
#include "ir/graph.h"

namespace eqfuse::tools {

struct PrecisionCheck {
  ir::DType precision = ir::DType::f32;
  bool checked = false;
  std::string not_checked;  // why, when !checked (a structure-only model, an opaque op)
  double rtol = 0, atol = 0;
  double max_abs_error = 0, max_rel_error = 0;
  bool match = true;
  std::string worst_output;  // the output with the largest absolute error
  std::string str() const;   // one line for a summary
};

// Runs the check described above for `graph` (kernels allowed). Dims take --dim sizes, the
// model's test-data hints, else the defaults of random_inputs.h. `on_compile` as in
// codegen::CpuModule::build.
PrecisionCheck check_precision(const ir::Graph& graph, ir::DType precision,
                               const std::map<std::string, int64_t>& dims,
                               const std::filesystem::path& model,
                               const std::function<void(const std::string&)>& on_compile = {});

}  // namespace eqfuse::tools
