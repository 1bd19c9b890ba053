#pragma once
// The kind of a fused kernel: which of the declared kinds (rules/fusion_kinds.h; the library's
// are rules/library/fusion.rules) admits its body. Fusion forms only kernels that some kind
// admits; reports and pictures name a kernel by its kind.
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/op_table.h"
#include "rules/fusion_kinds.h"

namespace eqfuse::optimizer {

// One op of a kernel body as the kind check sees it, in topological order (the root last).
struct BodyOp {
  const ir::OpDef* def = nullptr;
  const ir::Attributes* attrs = nullptr;
  std::vector<int> inputs;  // an earlier op's index, or -1 - k for the kernel's input k
  std::vector<const ir::TensorType*> input_types;
};

// Whether an op may be part of a kernel at all: pointwise, or of a declared role.
bool fusible_op(const ir::OpDef& def, const rules::FusionKinds& kinds);

// The name of the first kind that admits the body, or nullopt when none does (it is then not a
// kernel that code generation can emit).
std::optional<std::string> classify_kernel(const std::vector<BodyOp>& ops,
                                           const rules::FusionKinds& kinds);
// The same for a body expanded at its input types (ir::kernel_body_graph).
std::optional<std::string> classify_kernel(const ir::Graph& body_graph,
                                           const rules::FusionKinds& kinds);
// The kind of a Kernel node of `graph`, its body expanded at the types of its inputs.
std::optional<std::string> kernel_node_kind(
    const ir::Graph& graph, const ir::Node& kernel,
    const rules::FusionKinds& kinds = rules::library_fusion_kinds());

}  // namespace eqfuse::optimizer
