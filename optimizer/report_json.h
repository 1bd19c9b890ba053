#pragma once
// The optimizer's report as one JSON object: what `eqfuse optimize --json` prints (which adds
// "output", the file written) and what the Python bindings return as a dict. One writer, so the
// two never disagree on a field; docs/cli.md lists the fields.
#include <nlohmann/json.hpp>

#include "optimizer/optimize.h"

namespace eqfuse::optimizer {

nlohmann::json report_json(const OptimizeReport& report);

}  // namespace eqfuse::optimizer
