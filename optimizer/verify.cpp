#include "optimizer/verify.h"

#include <fmt/format.h>

#include <cmath>
#include <random>

#include "ir/interpreter.h"
#include "support/error.h"

namespace eqfuse::optimizer {

namespace {

bool has_all_weights(const ir::Graph& g) {
  for (ir::ValueId id : g.weights()) {
    try {
      if (!g.weight_data(id)) return false;
    } catch (const Error&) {
      return false;
    }
  }
  return true;
}

// Floats in [-1, 1]; integers 0 or 1 (in range for any index input); booleans false.
ir::Tensor random_input(const ir::TensorType& type, const std::map<std::string, int64_t>& dims,
                        std::mt19937_64& rng) {
  std::vector<int64_t> shape;
  for (const ir::Dim& d : type.shape.dims()) {
    if (d.is_static()) {
      shape.push_back(d.value());
    } else {
      auto it = dims.find(d.str());
      shape.push_back(it == dims.end() ? 1 : it->second);
    }
  }
  ir::Tensor t(type.dtype, shape);
  std::uniform_real_distribution<double> u(-1, 1);
  for (int64_t i = 0; i < t.numel(); ++i) {
    double x = u(rng);
    if (!ir::is_floating(type.dtype)) x = type.dtype == ir::DType::boolean ? 0 : (x > 0);
    t.set(i, x);
  }
  return t;
}

}  // namespace

VerifyResult verify_same_outputs(const ir::Graph& original, const ir::Graph& optimized,
                                 const VerifyOptions& options) {
  VerifyResult r;
  if (!has_all_weights(original)) {
    r.outcome = "skipped";
    r.note = "the model has no weight data (structure only): nothing to run";
    return r;
  }
  std::mt19937_64 rng(options.seed);
  for (int trial = 0; trial < options.trials; ++trial) {
    std::vector<ir::Tensor> inputs;
    for (ir::ValueId id : original.inputs())
      inputs.push_back(random_input(original.value(id).type, options.dim_bindings, rng));
    std::vector<ir::Tensor> want, got;
    try {
      want = ir::Interpreter(original).run(inputs);
    } catch (const Error& e) {
      r.outcome = "skipped";
      r.note = std::string("the original graph cannot run in the interpreter: ") + e.what();
      return r;
    }
    got = ir::Interpreter(optimized).run(inputs);  // an error here is a bug, not a skip
    if (got.size() != want.size()) {
      r.outcome = "failed";
      r.note = fmt::format("{} outputs instead of {}", got.size(), want.size());
      return r;
    }
    for (size_t k = 0; k < want.size(); ++k) {
      const std::string& name = original.value(original.outputs()[k]).name;
      if (got[k].dims() != want[k].dims()) {
        r.outcome = "failed";
        r.note = fmt::format("output '{}' has shape {} instead of {}", name,
                             ir::Shape::from_dims(got[k].dims()).str(),
                             ir::Shape::from_dims(want[k].dims()).str());
        return r;
      }
      for (int64_t e = 0; e < want[k].numel(); ++e) {
        double a = got[k].get(e), b = want[k].get(e);
        if (std::isnan(a) && std::isnan(b)) continue;
        double err = std::abs(a - b);
        r.max_abs_error = std::max(r.max_abs_error, err);
        if (!(err <= options.atol + options.rtol * std::abs(b))) {
          r.outcome = "failed";
          r.note = fmt::format(
              "output '{}' element {}: the original gives {:.9g}, the optimized graph {:.9g} "
              "(rtol {}, atol {})",
              name, e, b, a, options.rtol, options.atol);
          return r;
        }
      }
    }
  }
  r.outcome = "passed";
  r.note = fmt::format("{} random input set(s), floats in [-1, 1], integers 0/1; rtol {}, atol {}",
                       options.trials, options.rtol, options.atol);
  return r;
}

}  // namespace eqfuse::optimizer
