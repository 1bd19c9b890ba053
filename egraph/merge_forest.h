#pragma once
// Why two e-nodes are equal: the chain of merges that joined their classes. The e-graph logs
// each successful merge where asked to (EGraph::record_merges, EGraph::merges); as each joined two
// different classes, the log is a spanning forest of every class over its e-nodes, and the unique
// path between two e-nodes of one class is the chain of merges, each with its origin (a rule's
// name, "fusion", kCongruenceOrigin, or kNoOrigin for a merge made outside any rule, such as the
// analysis's constant folding). This is egg's explanation forest without the sub-proofs of
// congruence: a congruence step says that two nodes became equal because their children did.
#include <unordered_map>
#include <vector>

#include "egraph/egraph.h"

namespace eqfuse::egraph {

class MergeForest {
 public:
  // A snapshot of the e-graph's merge log; later merges are not seen.
  explicit MergeForest(const EGraph& egraph);

  // The merges on the path from `from` to `to`, in order from `from`; empty when they are the
  // same node or lie in different classes.
  std::vector<MergeRecord> path(NodeId from, NodeId to) const;

 private:
  // Per node, the indexes into merges_ of the merges it took part in.
  std::unordered_map<NodeId, std::vector<uint32_t>> edges_;
  std::vector<MergeRecord> merges_;
};

}  // namespace eqfuse::egraph
