#pragma once
// The extraction problem: e-classes, the e-nodes of each with a cost and the e-classes of
// their children, and the root e-classes. It is what every extractor reads, and nothing more:
// a serialized e-graph (egraph-serialize JSON) and the in-memory tensor e-graph with costs from
// the cost model both become one, so the extractors know neither.
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

namespace eqfuse::egraph {
struct SerializedEGraph;
}

namespace eqfuse::extract {

using ClassIndex = uint32_t;
using NodeIndex = uint32_t;
inline constexpr NodeIndex kNoNode = std::numeric_limits<NodeIndex>::max();

class ExtractionProblem {
 public:
  ClassIndex add_class();
  // Children are e-classes (one per argument; repeats allowed). Costs must be finite; they may
  // be negative, which only the ILP supports (greedy and dag refuse them: see
  // require_non_negative_costs in extract/greedy.h). Throws eqfuse::Error.
  NodeIndex add_node(ClassIndex eclass, double cost, std::span<const ClassIndex> children);
  void add_root(ClassIndex eclass);

  size_t num_classes() const { return class_nodes_.size(); }
  size_t num_nodes() const { return node_class_.size(); }
  ClassIndex node_class(NodeIndex n) const { return node_class_[n]; }
  double cost(NodeIndex n) const { return node_cost_[n]; }
  std::span<const ClassIndex> children(NodeIndex n) const {
    return {child_classes_.data() + child_begin_[n], child_classes_.data() + child_begin_[n + 1]};
  }
  std::span<const NodeIndex> nodes(ClassIndex c) const { return class_nodes_[c]; }
  std::span<const ClassIndex> roots() const { return roots_; }
  // The least e-node cost (0 without e-nodes); negative when some cost is.
  double min_cost() const { return min_cost_; }

 private:
  std::vector<ClassIndex> node_class_;
  std::vector<double> node_cost_;
  std::vector<uint32_t> child_begin_{0};
  std::vector<ClassIndex> child_classes_;
  std::vector<std::vector<NodeIndex>> class_nodes_;
  std::vector<ClassIndex> roots_;
  double min_cost_ = 0;
};

// A problem built from a serialized e-graph, with the file's ids to map a choice back.
struct SerializedProblem {
  ExtractionProblem problem;
  std::vector<std::string> class_ids;  // by ClassIndex (order of first appearance)
  std::vector<std::string> node_ids;   // by NodeIndex (file order)
};
SerializedProblem make_problem(const egraph::SerializedEGraph& egraph);

// The problem as a serialized e-graph, so that `eqfuse extract` and other extractors can read
// it: e-class "K" for ClassIndex K, e-node "K.J" for the J-th e-node of class K with `ops[n]` as
// its op (ops may be empty: then every op is "node"), a child naming the first e-node of its
// class. E-nodes with a child e-class that has no e-node left are dropped (repeatedly), as no
// choice can use them; make_problem of the result is the same problem up to those.
egraph::SerializedEGraph to_serialized(const ExtractionProblem& problem,
                                       std::span<const std::string> ops = {});

}  // namespace eqfuse::extract
