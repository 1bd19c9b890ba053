#pragma once
// The e-graph in exchange formats: egraph-serialize JSON (through the plain data model of
// serialized_egraph.h; what extraction-gym, egg and the visualizers read) and Graphviz dot.
//
// Node ids are "CLASS.K" (the K-th node of class CLASS, nodes in class order, which is sorted
// by op), a child names node "CHILD.0" of its class, ops are the op name followed by the
// attributes as written in terms (`Transpose :perm (0 2 1)`), every cost is 1, a node's
// provenance is its "origin" (absent for nodes of the input). The output
// depends only on the e-graph, so equal e-graphs (e.g. from runs with different thread counts)
// serialize to identical bytes.
#include <string>
#include <vector>

#include "egraph/egraph.h"
#include "egraph/serialized_egraph.h"

namespace eqfuse::egraph {

// An e-node as serialized: its op name, then its attributes as written in terms.
std::string node_text(const EGraph& egraph, NodeId n);
// `egraph` must be clean. `roots` become root_eclasses (canonicalized).
SerializedEGraph to_serialized(const EGraph& egraph, const std::vector<EClassId>& roots = {});
// Adds the serialized e-graph's nodes, merging nodes of one file e-class; returns the classes of
// its root_eclasses. Throws eqfuse::Error if some class cannot be built from leaves up.
std::vector<EClassId> add_serialized(EGraph& egraph, const SerializedEGraph& serialized);
// Graphviz: one cluster per e-class, edges from e-nodes to the classes of their children.
std::string to_dot(const EGraph& egraph, const std::vector<EClassId>& roots = {});

}  // namespace eqfuse::egraph
