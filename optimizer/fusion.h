#pragma once
// Fusion inside the e-graph. After (or without) algebraic saturation, each e-class gains fused
// kernel e-nodes (ir/kernel_body.h) that compute what its other e-nodes compute: a consumer
// merged with a producer of one of its inputs, round after round, so that extraction, which
// charges a kernel what generated code will spend on it (its stages: launches or library calls,
// and the traffic of the values they store; cost/stage_costs.h), decides what to fuse, among the
// algebraic alternatives, and whether a producer read by two consumers is materialized once or
// recomputed in both.
//
// Which merges are legal is declared, not coded: a kernel must be of one of the kinds in the
// rule files (rules/fusion_kinds.h; the library's rules/library/fusion.rules declares
// pointwise, row reduction, contraction with epilogue and attention, the kinds code generation
// implements), read by optimizer/kernel_kind.h.
//
// Soundness: every kernel is checked before it joins an e-class. The merge is stated as an
// instance of a rule, the consumer with the producer in place of its input rewriting to the
// kernel, and proved: by reflexivity when the two sides expand to the same term (what a correct
// merge gives), else by the rule prover (rules/prove/prover.h) with Z3. A refused kernel never
// enters the e-graph and is reported with its counterexample. Checking only extracted kernels
// would not be sound: a wrong union spreads by congruence.
//
// Bounds keep it finite and are reported: rounds, body size, kernel inputs, kernels per e-class.
#include <functional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "optimizer/kernel_kind.h"
#include "optimizer/tensor_egraph.h"
#include "rules/fusion_kinds.h"

namespace eqfuse::optimizer {

// The origin (egraph/egraph.h) of the kernel e-nodes that fusion adds.
inline constexpr const char* kFusionOrigin = "fusion";

// A kernel for the planted-applier tests: a body over ?0..?n-1 and the e-classes it reads.
struct FusionUnit {
  std::string body;
  std::vector<egraph::EClassId> inputs;
};
// Builds the kernel that merges `producer` into `consumer`'s input `slot`. Unset: the
// optimizer's own substitution. Tests plant wrong ones to see them refused.
using MergeFn =
    std::function<FusionUnit(const FusionUnit& consumer, size_t slot, const FusionUnit& producer)>;

struct FusionOptions {
  size_t rounds = 5;             // merge rounds
  size_t max_body_ops = 48;      // distinct op applications in one body
  size_t max_body_terms = 1024;  // applications of the body written as a tree (its text's size)
  size_t max_inputs = 10;        // kernel inputs
  size_t kernels_per_class = 4;  // kernel e-nodes added per e-class and round (largest first)
  MergeFn merge;
  // Which kernels may form (rules/fusion_kinds.h); unset: the library's (fusion.rules).
  std::shared_ptr<const rules::FusionKinds> kinds;
  bool use_proof_cache = true;  // for kernels that need the rule prover
};

struct FusionRefusal {
  std::string kernel;  // the body
  std::string reason;  // the verdict and counterexample
};

struct FusionReport {
  size_t rounds = 0;
  size_t kernels_added = 0;
  size_t candidates = 0;        // merges tried
  size_t proved_reflexive = 0;  // kernels whose check was reflexivity
  size_t proved_z3 = 0;         // kernels the rule prover proved
  std::vector<FusionRefusal> refused;
  size_t enodes_before = 0, enodes_after = 0;
  std::string stop_reason;  // "saturated", "round limit"
  double seconds = 0;
};

// Adds kernel e-nodes to the e-classes of `teg` (rebuilt on return) that the `focus` choices
// reach from the outputs (all e-classes when empty): the best graph of the algebra alone and the
// original graph, say. Each focus graph is fused alone first, exactly as a pipeline that fixed
// that graph would fuse it (algebra then fusion; fusion only), then all of them together with
// the e-classes' other algebraic alternatives. So every kernel those pipelines find is in the
// e-graph too, and extraction chooses among all of them.
FusionReport fuse(TensorEGraph& teg, const FusionOptions& options = {},
                  const std::vector<NodeChoice>& focus = {});

}  // namespace eqfuse::optimizer
