#pragma once
// The optimizer's public API: a graph goes in, the cheapest graph that eqfuse can prove equal to
// it comes out, with a report of how it got there.
//
//   proved rules ─▶ from_graph ─▶ egraph::run (algebra, limits) ─▶ fuse (kernel e-nodes, each
//   proved) ─▶ extract (cost::CostModel) ─▶ to_graph ─▶ fold weight-only subgraphs ─▶ verify
//
// Algebra and fusion share one e-graph, so extraction chooses among both at once ("joint");
// `sequential` instead extracts after algebra and fuses that graph, as a pipeline of a graph
// rewriter and a fusing compiler would (for comparison).
//
// Every rule is proved before use (rules/prove/, with the proof cache): a rule that is not
// `proved` refuses the run (Error naming it). Limits reached are stop reasons in the report,
// never errors. Verification (on by default where the weights are there) runs the original and
// the optimized graph in the reference interpreter on random inputs and fails with an Error
// naming the output that differs: a wrong graph never comes out silently.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cost/device_profile.h"
#include "ir/graph.h"
#include "optimizer/explain.h"
#include "optimizer/extraction.h"
#include "optimizer/fusion.h"

namespace eqfuse::optimizer {

struct OptimizeOptions {
  std::string device = "h200";                  // builtin profile name or a JSON file
  std::map<std::string, int64_t> dim_bindings;  // symbolic dims for the cost model only
  // The type code generation will store f32 tensors at (`compile --precision`): the cost model
  // prices their traffic at it (cost/cost_model.h). The graph itself stays f32.
  ir::DType precision = ir::DType::f32;
  // Rule files to use instead of the library (each rule proved before use).
  std::vector<std::string> rule_files;
  // Saturation limits; the defaults end every shared model on the iteration or node limit.
  size_t iterations = 8;
  size_t nodes = 50000;
  double seconds = 20;
  ExtractOptions extraction;
  // Phases: algebraic rewriting and fusion (either may be off).
  bool algebra = true;
  bool fusion = true;
  bool sequential = false;  // algebra, extract, then fuse the extracted graph
  FusionOptions fusion_options;
  bool verify = true;
  double verify_rtol = 1e-3, verify_atol = 1e-4;
  int verify_trials = 1;
  bool use_proof_cache = true;
  unsigned proof_jobs = 0;  // threads for proving uncached rules (0: all cores)
  int threads = 1;          // saturation's search threads (results do not depend on it)
};

// Turns on exactly the named phases ("algebra", "fusion"), as `--phases` and the Python
// bindings name them; Error naming an unknown one.
void set_phases(OptimizeOptions& options, const std::vector<std::string>& phases);

// Kernels as a user counts launches: every node except Reshape, Flatten, Squeeze, Unsqueeze,
// Identity, Dropout and Constant (an opaque op counts as one), as a runtime that copies each
// Concat and Transpose launches them (ONNX Runtime's graphs, counted beside ours).
size_t count_launching_ops(const ir::Graph& graph);
// count_launching_ops as eqfuse's generated code launches them: also without a Concat or
// Transpose that its producers store in place (codegen::nodes_stored_by_producers).
size_t count_kernels(const ir::Graph& graph);

struct OptimizeReport {
  // Rules
  size_t rules = 0, rules_from_cache = 0;
  double proof_seconds = 0;
  // Saturation
  std::string stop_reason;
  size_t iterations = 0, enodes = 0, eclasses = 0;
  std::vector<size_t> enodes_per_iteration;
  double saturation_seconds = 0;
  std::vector<std::pair<std::string, size_t>> top_rules;  // applications, most first
  // Fusion
  FusionReport fusion;
  std::map<std::string, size_t> kernel_kinds;  // fused kernels of the result by kind
  // Extraction
  Extraction extraction;
  // Before and after
  size_t kernels_before = 0, kernels_after = 0;
  double predicted_ms_before = 0, predicted_ms_after = 0;
  std::string precision = "f32";  // the storage the predictions assume (OptimizeOptions)
  std::map<std::string, size_t> ops_before, ops_after;  // launching ops by type
  size_t shape_specs_made_constant = 0;  // Reshapes of computed shapes (ir/constant_shape_specs.h)
  size_t weights_folded = 0;             // weight-only nodes computed at optimize time
  std::string folding_note;              // why some could not be (structure-only model)
  // Why: each kernel of the result and each other node a rule made, with the rules behind it.
  Explanations explained;
  // Verification
  std::string verified = "skipped";  // "passed", "failed", "skipped"
  std::string verify_note;           // tolerance and inputs, or why skipped
  double verify_max_abs_error = 0;
  double verify_seconds = 0;
  double seconds = 0;  // the whole optimize()
};

struct OptimizeResult {
  ir::Graph graph;
  OptimizeReport report;
};

// Progress, for a terminal: phase ("prove", "saturate", "extract", "verify") and a line.
using ProgressFn = std::function<void(const std::string& phase, const std::string& line)>;

OptimizeResult optimize(const ir::Graph& graph, const OptimizeOptions& options = {},
                        const ProgressFn& progress = {});

}  // namespace eqfuse::optimizer
