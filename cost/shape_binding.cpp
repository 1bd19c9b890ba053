#include "cost/shape_binding.h"

#include <map>
#include <optional>
#include <string>

namespace eqfuse::cost {

ir::TensorType bind_type(const ir::TensorType& type, const DimBindings& bindings) {
  if (!type.shape.has_rank()) return ir::TensorType{type.dtype, ir::Shape()};
  ir::TensorType out{type.dtype, type.shape};
  for (ir::Dim& d : out.shape.dims()) {
    if (d.is_static()) continue;
    // A named dim, or an expression of named dims (batch*64): each symbol takes the size given
    // for its name or else the default, and the expression is evaluated, so that batch*64 is 64
    // times batch (binding the expression as a whole would break Reshape's element count).
    ir::SymInt size = d.sym();
    std::map<std::string, int64_t> env;  // only the dim's own symbols (this runs per e-node)
    for (const std::string& name : size.symbols()) {
      int64_t value = bindings.fallback;
      if (bindings.by_name)
        if (auto it = bindings.by_name->find(name); it != bindings.by_name->end())
          value = it->second;
      env.emplace(name, value);
    }
    std::optional<int64_t> v = size.is_known() ? size.evaluate(env) : std::nullopt;
    d = ir::Dim(v && *v > 0 ? *v : bindings.fallback);
  }
  return out;
}

double bound_bytes(const ir::TensorType& type, const DimBindings& bindings) {
  ir::TensorType t = bind_type(type, bindings);
  return static_cast<double>(t.shape.numel().value_or(1)) *
         static_cast<double>(ir::dtype_size(t.dtype));
}

}  // namespace eqfuse::cost
