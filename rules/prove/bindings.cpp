#include "rules/prove/bindings.h"

namespace eqfuse::rules::prove {

std::vector<RuleBinding> proof_bindings(const Rule& rule, const ShapeChoice& choice) {
  return enumerate_bindings(rule, choice).bindings;
}

}  // namespace eqfuse::rules::prove
