#include "optimizer/report_json.h"

namespace eqfuse::optimizer {

nlohmann::json report_json(const OptimizeReport& r) {
  nlohmann::json j = {
      {"kernels_before", r.kernels_before},
      {"kernels_after", r.kernels_after},
      {"predicted_ms_before", r.predicted_ms_before},
      {"predicted_ms_after", r.predicted_ms_after},
      {"ops_before", r.ops_before},
      {"ops_after", r.ops_after},
      {"seconds", r.seconds},
      {"rules",
       {{"count", r.rules}, {"from_cache", r.rules_from_cache}, {"seconds", r.proof_seconds}}},
      {"enodes", r.enodes},
      {"eclasses", r.eclasses},
      {"iterations", r.iterations},
      {"enodes_per_iteration", r.enodes_per_iteration},
      {"stop_reason", r.stop_reason},
      {"saturation_seconds", r.saturation_seconds},
      {"extraction",
       {{"method", r.extraction.method},
        {"cost_ms", r.extraction.cost_ms},
        {"bound_ms",
         r.extraction.bound_ms ? nlohmann::json(*r.extraction.bound_ms) : nlohmann::json()},
        {"optimal", r.extraction.optimal},
        {"seconds", r.extraction.seconds}}},
      {"weights_folded", r.weights_folded},
      {"verified", r.verified},
      {"verify_note", r.verify_note},
      {"verify_max_abs_error", r.verify_max_abs_error},
      {"verify_seconds", r.verify_seconds}};
  if (!r.folding_note.empty()) j["folding_note"] = r.folding_note;
  nlohmann::json refused = nlohmann::json::array();
  for (const auto& f : r.fusion.refused)
    refused.push_back({{"kernel", f.kernel}, {"reason", f.reason}});
  j["fusion"] = {{"rounds", r.fusion.rounds},
                 {"kernels_added", r.fusion.kernels_added},
                 {"candidates", r.fusion.candidates},
                 {"proved_reflexive", r.fusion.proved_reflexive},
                 {"proved_z3", r.fusion.proved_z3},
                 {"refused", refused},
                 {"enodes_before", r.fusion.enodes_before},
                 {"enodes_after", r.fusion.enodes_after},
                 {"stop_reason", r.fusion.stop_reason},
                 {"seconds", r.fusion.seconds}};
  j["kernel_kinds"] = r.kernel_kinds;
  nlohmann::json top = nlohmann::json::array();
  for (const auto& [name, n] : r.top_rules) top.push_back({{"rule", name}, {"applications", n}});
  j["top_rules"] = top;
  return j;
}

}  // namespace eqfuse::optimizer
