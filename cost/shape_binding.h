#pragma once
// Static shapes for costing: the cost model counts bytes and FLOPs, which symbolic dims
// ("batch", "seq") do not have. Binding replaces each symbolic dim by a size the user gave for
// its name, and every other dynamic dim by a default (see cost_model.h for the policy).
#include <map>
#include <string>

#include "ir/shape.h"

namespace eqfuse::cost {

struct DimBindings {
  const std::map<std::string, int64_t>* by_name = nullptr;
  int64_t fallback = 1;
};

// The type with every dynamic dim bound; an unranked shape becomes a scalar (one element).
ir::TensorType bind_type(const ir::TensorType& type, const DimBindings& bindings);
// Bytes of a type after binding.
double bound_bytes(const ir::TensorType& type, const DimBindings& bindings);

}  // namespace eqfuse::cost
