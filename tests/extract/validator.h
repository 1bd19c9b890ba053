#pragma once
// An extraction validator that shares no code with extract/: it reads the serialized e-graph and
// a choice as the command line writes it ({eclass id: node id}) and recomputes everything.
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>

#include "egraph/serialized_egraph.h"
#include "extract/choice.h"
#include "extract/problem.h"

namespace eqfuse::test {

using ChoiceMap = std::map<std::string, std::string>;  // e-class id -> e-node id

struct Validation {
  bool ok = false;
  std::string error;  // why not
  double dag_cost = 0;
};

inline Validation validate_choice(const egraph::SerializedEGraph& g, const ChoiceMap& choice) {
  std::unordered_map<std::string, const egraph::SerializedNode*> node_by_id;
  for (const auto& n : g.nodes) node_by_id[n.id] = &n;
  std::unordered_map<std::string, int> state;  // 1 visiting, 2 done
  Validation v;
  // Recursive on purpose (the simplest thing that is obviously right); tensat depths are small.
  std::function<bool(const std::string&)> visit = [&](const std::string& eclass) {
    int& s = state[eclass];
    if (s == 2) return true;
    if (s == 1) {
      v.error = "cycle through e-class " + eclass;
      return false;
    }
    s = 1;
    auto it = choice.find(eclass);
    if (it == choice.end()) {
      v.error = "e-class " + eclass + " is used but not chosen";
      return false;
    }
    auto node = node_by_id.find(it->second);
    if (node == node_by_id.end() || node->second->eclass != eclass) {
      v.error = "e-class " + eclass + " chose " + it->second + ", not one of its e-nodes";
      return false;
    }
    v.dag_cost += node->second->cost;
    for (const auto& child : node->second->children)
      if (!visit(node_by_id.at(child)->eclass)) return false;
    state[eclass] = 2;
    return true;
  };
  for (const auto& root : g.root_eclasses)
    if (!visit(root)) return v;
  v.ok = true;
  return v;
}

// The choice of a result in the file's own ids, as `eqfuse extract --out` writes it.
inline ChoiceMap to_choice_map(const extract::SerializedProblem& sp,
                               const extract::ExtractionResult& result) {
  ChoiceMap out;
  for (extract::ClassIndex c = 0; c < result.choice.size(); ++c)
    if (result.choice[c] != extract::kNoNode) out[sp.class_ids[c]] = sp.node_ids[result.choice[c]];
  return out;
}

}  // namespace eqfuse::test
