#pragma once
// Which ops generated code computes, and how each reads its inputs: the one list the plan and
// the printer share. An op outside it makes code generation stop with an error naming it.
#include <optional>
#include <vector>

#include "codegen/plan.h"
#include "ir/graph.h"

namespace eqfuse::codegen {

// Computed element by element where it is used (elementwise ops and layout ops folded into
// indexing).
bool is_pointwise(const ir::Node& node);
// Of those, the ones that read each input at the element they write (under numpy broadcasting):
// not a layout op, which moves elements (Expand, which only broadcasts, counts as one).
bool is_elementwise(const ir::Node& node);
// A reduction of the last axis that keeps it (Reduce*, its axes constant): what a rows stage
// computes inside (Stage::row_reductions).
bool reduces_last_axis(const ir::Graph& graph, const ir::Node& node);
// A Dropout that passes its input through: its training_mode input absent or a constant false,
// or its ratio a constant 0. Any other is training mode, which generated code does not compute.
bool dropout_is_identity(const ir::Graph& graph, const ir::Node& node);
// How a node is lowered when its value is materialized. Error (Unsupported) naming the op and
// node when generated code cannot compute it.
StageKind stage_kind(const ir::Node& node);
// The inputs whose elements generated code reads (Reshape's shape input is not one: the output
// type already states the shape).
std::vector<size_t> data_inputs(const ir::Node& node);
// A Gather that picks one slice along its axis (its indices a constant of one element, rank 0
// or 1): element `index` along `axis` of its input goes to `axis` of its output, dropped
// (rank-0 indices) or kept at 0. Layout copies may be stored by their producers through it
// (Buffer::placed_by).
struct GatheredSlice {
  size_t axis = 0;
  int64_t index = 0;
  bool keeps_axis = false;
};
std::optional<GatheredSlice> gathered_slice(const ir::Graph& graph, const ir::Node& node);
// The inputs a stage reads from buffers, never recomputing them: contraction operands, which
// it reads contiguous, and a Resize's input, which each output element reads at up to 2^rank
// taps (its producers recomputed there would run once per tap, more than the cost model prices).
std::vector<size_t> contiguous_inputs(const ir::Node& node);
}  // namespace eqfuse::codegen
