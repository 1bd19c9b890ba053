#pragma once
// Pad's meaning along one axis, shared by the interpreter's kernel and generated code, so that
// both read the same element for every mode.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/op_table.h"

namespace eqfuse::ir {

// The pads of a Pad node, (begin..., end...) over all its input's `rank` axes (its `axes`
// input spread out, other axes 0); nullopt where the pads or axes are not constants.
std::optional<std::vector<int64_t>> pad_amounts(const OpContext& ctx, size_t rank);

// Where output coordinate `o` reads along an axis of `n` elements padded by `begin` in front,
// under `mode` (constant, reflect, edge, wrap): a coordinate of the input, or -1 for the
// constant.
int64_t pad_source(int64_t o, int64_t begin, int64_t n, const std::string& mode);

}  // namespace eqfuse::ir
