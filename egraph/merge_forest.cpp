#include "egraph/merge_forest.h"

#include <algorithm>
#include <deque>

namespace eqfuse::egraph {

MergeForest::MergeForest(const EGraph& egraph)
    : merges_(egraph.merges().begin(), egraph.merges().end()) {
  for (uint32_t i = 0; i < merges_.size(); ++i) {
    edges_[merges_[i].a].push_back(i);
    edges_[merges_[i].b].push_back(i);
  }
}

std::vector<MergeRecord> MergeForest::path(NodeId from, NodeId to) const {
  if (from == to) return {};
  // Breadth-first from `from`, remembering by which merge each node was reached.
  std::unordered_map<NodeId, uint32_t> via;
  std::deque<NodeId> todo = {from};
  via.emplace(from, kNoId);
  while (!todo.empty() && !via.count(to)) {
    NodeId n = todo.front();
    todo.pop_front();
    auto it = edges_.find(n);
    if (it == edges_.end()) continue;
    for (uint32_t e : it->second) {
      NodeId other = merges_[e].a == n ? merges_[e].b : merges_[e].a;
      if (via.emplace(other, e).second) todo.push_back(other);
    }
  }
  std::vector<MergeRecord> out;
  if (!via.count(to)) return out;
  for (NodeId n = to; n != from;) {
    const MergeRecord& m = merges_[via.at(n)];
    out.push_back(m);
    n = m.a == n ? m.b : m.a;
  }
  std::reverse(out.begin(), out.end());
  return out;
}

}  // namespace eqfuse::egraph
