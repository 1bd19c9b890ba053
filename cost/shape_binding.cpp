#include "cost/shape_binding.h"

namespace eqfuse::cost {

ir::TensorType bind_type(const ir::TensorType& type, const DimBindings& bindings) {
  if (!type.shape.has_rank()) return ir::TensorType{type.dtype, ir::Shape()};
  ir::TensorType out{type.dtype, type.shape};
  for (ir::Dim& d : out.shape.dims()) {
    if (d.is_static()) continue;
    int64_t size = bindings.fallback;
    if (bindings.by_name) {
      // A named dim, or an expression of named dims (batch*64) once they are all bound.
      if (auto v = d.evaluate(*bindings.by_name); v && *v > 0) size = *v;
    }
    d = ir::Dim(size);
  }
  return out;
}

double bound_bytes(const ir::TensorType& type, const DimBindings& bindings) {
  ir::TensorType t = bind_type(type, bindings);
  return static_cast<double>(t.shape.numel().value_or(1)) *
         static_cast<double>(ir::dtype_size(t.dtype));
}

}  // namespace eqfuse::cost
