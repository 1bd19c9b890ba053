#pragma once
// Ops that generated code computes as compositions of others, rewritten so before planning:
// - a Split with several outputs, as one Slice per output (a stage writes its node's first
//   output only): part k starts where the parts before it end, their extents along the axis
//   static in the output types;
// - a LayerNormalization whose Mean or InvStdDev is read (training exports), as its reductions:
//   ReduceMean of x, of (x - mean)², then the normalization, each statistic a value of its own;
// - InstanceNormalization (rank 3 or more), as the same reductions over each channel's plane.
// Everything else, and any of these whose shapes do not allow it, is kept; the plan then refuses
// what it cannot compute by name.
#include <vector>

#include "ir/graph.h"

namespace eqfuse::codegen {

// `graph` with those ops rewritten; `origin` (one source node per node, as ir::inline_kernels
// gives it) follows the rewrite.
ir::Graph decompose_for_codegen(const ir::Graph& graph, std::vector<ir::NodeId>& origin);

}  // namespace eqfuse::codegen
