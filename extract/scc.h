#pragma once
// Strongly connected components of a directed graph given by adjacency lists (Tarjan,
// iterative, so deep e-class graphs do not overflow the stack). Extraction needs them for
// acyclicity: only e-classes in a non-trivial component can be part of a cycle.
#include <cstdint>
#include <vector>

namespace eqfuse::extract {

// The component of each vertex; components are numbered in reverse topological order (a
// component's successors come before it).
std::vector<uint32_t> strongly_connected_components(const std::vector<std::vector<uint32_t>>& edges,
                                                    uint32_t* num_components);

}  // namespace eqfuse::extract
