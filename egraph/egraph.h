#pragma once
// The e-graph: a set of e-classes (equivalence classes of terms) over e-nodes (an operator, an
// attribute payload and child e-classes). It is language-agnostic: operators are interned
// Symbols, so the same engine serves the toy arithmetic of the tests and the tensor language of
// the optimizer.
//
// Layout, chosen so that a million e-nodes cost ~100 bytes each and no e-node owns a heap block:
//  - e-nodes live in flat arrays indexed by NodeId (op, attrs, offset into one children array);
//  - an e-class's id is the NodeId of the e-node that created it; one union-find maps nodes to
//    classes (path halving, union by size);
//  - the hash-cons is a flat open-addressing table of (hash, NodeId), keyed by node content;
//  - parents are rings threaded through the children array (one `next` per child slot), so a
//    union splices two rings in O(1) and an added node costs no allocation;
//  - after `rebuild`, class -> nodes (sorted by op) and op -> classes are dense CSR indexes,
//    which is all that e-matching reads.
//
// Rebuilding is egg's deferred algorithm: `merge` records the absorbed class's parents; `rebuild`
// re-canonicalizes them, merging classes whose nodes become equal (congruence), and re-runs
// the analysis on parents of classes whose data changed, until nothing changes. Between a merge
// and the next rebuild the e-graph is "dirty": add/lookup/find/merge stay correct, but the
// indexes (class_nodes, classes_with_op, num_nodes) are only valid when clean.
//
// Multi-output operations: a node whose op yields several values (a Split, a fused kernel with
// two outputs) lives in a *tuple-valued* e-class; each output is a projection node
// `(Proj :index k T)` whose only child is that tuple class (the `:index` attribute is the
// output number, 0-based). Rules match and build them like any other node, e.g.
// `(Proj :index 0 (Split :axis 1 ?x))`; a multi-pattern binds both projections of one tuple.
// The projection op name is `kProjOp`.
//
// Provenance: each e-node records its origin, the name of what created it (a rule's name, or
// "fusion"), or kNoOrigin for the nodes of the input. `set_origin` names the creator of the
// nodes added from then on (OriginScope sets it for a scope); an add that finds an equal node
// keeps that node's origin (the first creator wins). The runner applies rules one after another in
// a fixed order, so origins, like the e-graph itself, do not depend on the thread count. Where
// `record_merges(true)` asks for it (off by default, as egg's explanations are: it costs 12 bytes
// a merge, and saturation-heavy e-graphs merge millions of times), each successful merge is
// logged too, with the two ids it was given and the origin current then (`kCongruenceOrigin` for
// rebuild's own congruence merges): since every merge joins two different classes, the log is a
// spanning forest of each class over its e-nodes, and the path between two e-nodes in it is the
// chain of merges that made them equal (egraph/merge_forest.h, egg's explanation forest without
// congruence's sub-proofs). `eqfuse optimize --explain` reads origins and merges.
#include <cstdint>
#include <limits>
#include <span>
#include <utility>
#include <vector>

#include "egraph/big_vector.h"
#include "egraph/symbol.h"
#include "egraph/unionfind.h"

namespace eqfuse::egraph {

using EClassId = uint32_t;
using NodeId = uint32_t;
inline constexpr uint32_t kNoId = std::numeric_limits<uint32_t>::max();
inline constexpr const char* kProjOp = "Proj";
inline constexpr Symbol kNoOrigin = kNoId;
// The origin of the merges that rebuild makes to restore congruence.
inline constexpr const char* kCongruenceOrigin = "congruence";

// One successful merge: the ids it was given (each the NodeId of an e-node of its class) and
// the origin current then.
struct MergeRecord {
  NodeId a, b;
  Symbol origin;
};

class EGraph;

// What an analysis's merge did: whether `into`'s data changed, and whether the result differs
// from what `from` had (egg's DidMerge).
struct DidMerge {
  bool into_changed = false;
  bool from_changed = false;
};

// Per-class facts computed bottom-up (constant values, tensor types), egg's `Analysis`. The
// analysis stores its data itself, indexed by class id (class ids are dense NodeIds; data of a
// class that has been absorbed is never read again). When reading a child's data use
// `egraph.find(child)`.
class Analysis {
 public:
  virtual ~Analysis() = default;
  // Node `n` has just created class `n` (== n): compute its data.
  virtual void make(const EGraph& egraph, NodeId n) = 0;
  // Classes `into` and `from` were united; `into` survives.
  virtual DidMerge merge(EClassId into, EClassId from) = 0;
  // Fold what node `n` says into the data of its class `c` (after a child's data changed);
  // return true when c's data changed.
  virtual bool join(const EGraph& egraph, EClassId c, NodeId n) = 0;
  // May add nodes and merge classes (e.g. union a constant-folded class with its literal).
  // Called after make and whenever a class's data changed.
  virtual void modify(EGraph& /*egraph*/, EClassId /*c*/) {}
};

class EGraph {
 public:
  explicit EGraph(Analysis* analysis = nullptr)
      : analysis_(analysis), congruence_origin_(intern(kCongruenceOrigin)) {}
  EGraph(const EGraph&) = delete;
  EGraph& operator=(const EGraph&) = delete;

  // Adds the node (children are canonicalized first) and returns its class; an equal node
  // already present returns the existing class.
  EClassId add(Symbol op, AttrId attrs, std::span<const EClassId> children);
  EClassId add(Symbol op, std::span<const EClassId> children = {}) {
    return add(op, kNoAttrs, children);
  }
  // The class of an equal node if there is one (canonical), else kNoId.
  EClassId lookup(Symbol op, AttrId attrs, std::span<const EClassId> children) const;

  // Hints that `add`/`lookup` of this node (children canonical) comes soon: fetches its
  // hash-cons slot into cache. The runner calls it a few matches ahead of applying.
  void prefetch(Symbol op, AttrId attrs, std::span<const EClassId> children) const {
    if (table_.empty()) return;
    __builtin_prefetch(&table_[hash_node(op, attrs, children) & (table_.size() - 1)]);
  }

  EClassId find(EClassId id) const { return unionfind_.find(id); }
  EClassId find_mut(EClassId id) { return unionfind_.find_mut(id); }
  // Unites two classes; returns false if they were already one. Congruence is restored by
  // `rebuild`.
  bool merge(EClassId a, EClassId b);
  // Restores congruence closure and the hash-cons invariant, runs analysis to a fixpoint and
  // rebuilds the read indexes. Returns the number of merges it performed.
  size_t rebuild();
  bool clean() const { return clean_; }

  // Counts. num_nodes is the number of distinct canonical e-nodes (exact when clean);
  // num_classes is always exact.
  size_t num_nodes() const { return live_nodes_; }
  size_t num_classes() const { return num_classes_; }
  // Every node ever created, including ones later found equal to another (an upper bound of
  // num_nodes that is exact at every moment: the runner's node limit reads it mid-iteration).
  size_t num_node_slots() const { return nodes_.size(); }

  // Node access by NodeId.
  Symbol op(NodeId n) const { return nodes_[n].op; }
  AttrId attrs(NodeId n) const { return nodes_[n].attrs; }
  std::span<const EClassId> children(NodeId n) const {
    return {children_.data() + nodes_[n].begin, nodes_[n].end - nodes_[n].begin};
  }
  bool is_live(NodeId n) const { return !dead_[n]; }
  // The live node equal to n: n itself while it lives; once a rebuild has found n congruent to
  // another node and kept that one, the one kept (kNoId if none is, as before the first rebuild).
  // Passes that remember nodes across rebuilds (a graph's original nodes) read them through it.
  NodeId live_node(NodeId n) const;
  // What created node n (kNoOrigin: it was in the input).
  Symbol origin(NodeId n) const { return origins_[n]; }
  // The origin of nodes added from now on; returns the previous one.
  Symbol set_origin(Symbol origin) { return std::exchange(origin_, origin); }
  // Overwrites node n's origin: for a pass that builds an e-graph from another's extracted graph
  // and carries its provenance over.
  void restamp_origin(NodeId n, Symbol origin) { origins_[n] = origin; }
  // Log merges from now on (see above); off by default.
  void record_merges(bool on) { record_merges_ = on; }
  // Every successful merge logged so far, in order.
  std::span<const MergeRecord> merges() const { return merge_log_; }

  // Read indexes, valid when clean. Classes ascend by id; a class's nodes are sorted by
  // (op, NodeId); classes_with_op lists, ascending, the classes having a node with that op.
  std::span<const EClassId> classes() const { return class_list_; }
  std::span<const NodeId> class_nodes(EClassId c) const {
    return {class_nodes_.data() + class_begin_[c], class_begin_[c + 1] - class_begin_[c]};
  }
  std::span<const EClassId> classes_with_op(Symbol op) const {
    if (op_begin_.empty() || op + 1 >= op_begin_.size()) return {};
    return {op_classes_.data() + op_begin_[op], op_begin_[op + 1] - op_begin_[op]};
  }

  Analysis* analysis() const { return analysis_; }
  // Room for `nodes` more e-nodes with `child_slots` more children, so a growing e-graph
  // reallocates once per iteration rather than once per doubling.
  void reserve(size_t nodes, size_t child_slots);
  // Bytes held by the e-graph's arrays (capacity, not size): what the memory limit reads.
  size_t memory_bytes() const;

 private:
  void link_parent_slot(uint32_t slot, EClassId child);
  void push_parents(EClassId c, BigVector<NodeId>& out) const;
  uint32_t hash_node(Symbol op, AttrId attrs, std::span<const EClassId> children) const;
  bool node_equals(NodeId n, Symbol op, AttrId attrs, std::span<const EClassId> children) const;
  NodeId lookup_node(Symbol op, AttrId attrs, std::span<const EClassId> children) const;
  bool merge_as(EClassId a, EClassId b, Symbol origin);
  // Finds an equal node in the table, or inserts `n` (when n != kNoId). Returns the node found,
  // or kNoId when none was there.
  NodeId find_or_insert(Symbol op, AttrId attrs, std::span<const EClassId> children, NodeId n);
  void grow_table();
  void erase_from_table(NodeId n);
  void build_indexes();

  Analysis* analysis_;
  // Nodes.
  // One 16-byte record per node, so comparing a node in the hash-cons costs one cache line
  // (plus one for its children).
  struct NodeRecord {
    Symbol op;
    AttrId attrs;
    uint32_t begin, end;  // children_[begin, end)
  };
  BigVector<NodeRecord> nodes_;
  BigVector<EClassId> children_;
  BigVector<uint8_t> dead_;
  BigVector<Symbol> origins_;
  Symbol origin_ = kNoOrigin;
  BigVector<MergeRecord> merge_log_;
  Symbol congruence_origin_;
  bool record_merges_ = false;
  // Parent rings: for each child slot, the next slot of the same ring, and its node; the head
  // slot of each class's ring (kNoId when it has no parents).
  BigVector<uint32_t> slot_next_;
  BigVector<NodeId> slot_node_;
  BigVector<uint32_t> parent_head_;
  UnionFind unionfind_;
  // Hash-cons: (hash << 32 | node), empty when the low word is kNoId.
  BigVector<uint64_t> table_;
  size_t table_used_ = 0;

  BigVector<NodeId> pending_;
  BigVector<NodeId> analysis_pending_;
  BigVector<EClassId> modify_pending_;
  size_t live_nodes_ = 0;
  size_t num_classes_ = 0;
  bool clean_ = true;

  // Read indexes (rebuilt by build_indexes).
  BigVector<EClassId> class_list_;
  BigVector<uint32_t> class_begin_;
  BigVector<NodeId> class_nodes_;
  BigVector<uint32_t> op_begin_;
  BigVector<EClassId> op_classes_;
};

// Names the creator of the nodes added while it lives, then restores the previous one.
class OriginScope {
 public:
  OriginScope(EGraph& egraph, Symbol origin) : egraph_(egraph), saved_(egraph.set_origin(origin)) {}
  ~OriginScope() { egraph_.set_origin(saved_); }
  OriginScope(const OriginScope&) = delete;
  OriginScope& operator=(const OriginScope&) = delete;

 private:
  EGraph& egraph_;
  Symbol saved_;
};

}  // namespace eqfuse::egraph
