#pragma once
// Random inputs for `eqfuse run` when none are given: fixed seed, floats uniform in [-1, 1),
// booleans fair coins, and integers in [0, bound) where the bound comes from how the input is
// used (the indexed dim of a Gather or GatherElements it reaches through casts and reshapes,
// so embedding ids stay in range), else [0, 2) (masks, flags). Symbolic dims get size 1.
#include <cstdint>
#include <vector>

#include "ir/graph.h"

namespace eqfuse::tools {

std::vector<ir::Tensor> random_inputs(const ir::Graph& graph, uint64_t seed);

}  // namespace eqfuse::tools
