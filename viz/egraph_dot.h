#pragma once
// An e-graph (egraph-serialize JSON, egraph/serialized_egraph.h) as a Graphviz picture: each
// e-class a cluster of its e-nodes, each e-node an edge to every child e-class, the roots'
// clusters drawn bold and the e-nodes of a chosen term (extracted_nodes: what extraction picks)
// filled. Whole e-graphs of more than a few hundred e-classes are unreadable, so a picture can
// be the neighbourhood of one e-class: the e-classes within `depth` child or parent steps of
// it, with the e-classes just outside drawn as dashed stubs.
#include <string>
#include <vector>

#include "egraph/serialized_egraph.h"

namespace eqfuse::viz {

struct EGraphDotOptions {
  std::string focus_class;          // empty: the whole e-graph
  size_t depth = 2;                 // steps from focus_class
  std::vector<std::string> chosen;  // node ids to highlight
  size_t max_classes = 300;         // more: Error suggesting a neighbourhood
};

std::string egraph_dot(const egraph::SerializedEGraph& egraph, const EGraphDotOptions& options);

// The e-nodes that DAG-aware extraction (extract/dag.h) chooses under the file's costs, by id.
// Throws Error when a root has no finite term.
std::vector<std::string> extracted_nodes(const egraph::SerializedEGraph& egraph);

}  // namespace eqfuse::viz
