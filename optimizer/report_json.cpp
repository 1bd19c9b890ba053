#include "optimizer/report_json.h"

#include "ir/kernel_body.h"

namespace eqfuse::optimizer {

nlohmann::json report_json(const OptimizeReport& r) {
  nlohmann::json j = {
      {"kernels_before", r.kernels_before},
      {"kernels_after", r.kernels_after},
      {"predicted_ms_before", r.predicted_ms_before},
      {"predicted_ms_after", r.predicted_ms_after},
      {"precision", r.precision},
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
        {"stop_reason", r.extraction.stop_reason},
        {"seconds", r.extraction.seconds}}},
      {"shape_specs_made_constant", r.shape_specs_made_constant},
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
  auto explained = [](const std::vector<NodeExplanation>& list) {
    nlohmann::json out = nlohmann::json::array();
    for (const NodeExplanation& e : list) {
      nlohmann::json one = {{"node", e.node},
                            {"output", e.output},
                            {"op", e.op},
                            {"rules", e.rules},
                            {"predicted_ms", e.predicted_ms}};
      if (e.op == ir::kKernelOp) {
        one["kind"] = e.kind;
        nlohmann::json ops = nlohmann::json::array();
        for (const FusedOp& op : e.fused_ops)
          ops.push_back({{"op", op.op},
                         {"rule", op.rule.empty() ? nlohmann::json() : nlohmann::json(op.rule)}});
        one["fused_ops"] = ops;
        one["ops_from_input"] = e.ops_from_input();
      }
      out.push_back(std::move(one));
    }
    return out;
  };
  j["kernels"] = explained(r.explained.kernels);
  j["rewritten"] = explained(r.explained.rewritten);
  nlohmann::json replaced = nlohmann::json::array();
  for (const Replacement& e : r.explained.replaced)
    replaced.push_back({{"node", e.node}, {"op", e.op}, {"now", e.now}, {"rules", e.rules}});
  j["replaced"] = replaced;
  return j;
}

}  // namespace eqfuse::optimizer
