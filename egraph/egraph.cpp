#include "egraph/egraph.h"

#include <algorithm>
#include <cstring>

namespace eqfuse::egraph {
namespace {

inline NodeId entry_node(uint64_t e) {
  return static_cast<NodeId>(e);
}
inline uint32_t entry_hash(uint64_t e) {
  return static_cast<uint32_t>(e >> 32);
}
constexpr uint64_t kEmpty = kNoId;

// Children of a node being added, canonicalized; inline for the usual small arities.
struct ChildBuffer {
  EClassId inline_[8];
  std::vector<EClassId> heap;
  EClassId* data = inline_;
  void resize(size_t n) {
    if (n > 8) {
      heap.resize(n);
      data = heap.data();
    }
  }
};

}  // namespace

uint32_t EGraph::hash_node(Symbol op, AttrId attrs, std::span<const EClassId> children) const {
  uint64_t h = (uint64_t(op) << 32 | attrs) * 0x9E3779B97F4A7C15ULL + children.size();
  for (EClassId c : children) h = (h ^ c) * 0xFF51AFD7ED558CCDULL + (h >> 32);
  // murmur3's finalizer: every input bit reaches the low bits that index the table.
  h ^= h >> 33;
  h *= 0xC4CEB9FE1A85EC53ULL;
  h ^= h >> 33;
  return static_cast<uint32_t>(h);
}

bool EGraph::node_equals(NodeId n, Symbol op, AttrId attrs,
                         std::span<const EClassId> children) const {
  const NodeRecord& rec = nodes_[n];
  if (rec.op != op || rec.attrs != attrs || rec.end - rec.begin != children.size()) return false;
  const EClassId* mine = children_.data() + rec.begin;
  for (size_t i = 0; i < children.size(); ++i)
    if (mine[i] != children[i]) return false;
  return true;
}

void EGraph::grow_table() {
  // The table holds exactly the live nodes, each under the hash of its current content, so
  // growing re-uses the stored hashes and never reads the nodes.
  size_t capacity = std::max<size_t>(1024, table_.size() * 2);
  BigVector<uint64_t> old;
  old.swap(table_);
  table_.assign(capacity, kEmpty);
  size_t mask = capacity - 1;
  for (uint64_t e : old) {
    if (entry_node(e) == kNoId) continue;
    size_t i = entry_hash(e) & mask;
    while (entry_node(table_[i]) != kNoId) i = (i + 1) & mask;
    table_[i] = e;
  }
}

NodeId EGraph::find_or_insert(Symbol op, AttrId attrs, std::span<const EClassId> children,
                              NodeId n) {
  if ((table_used_ + 1) * 5 > table_.size() * 3) grow_table();  // load <= 0.6
  uint32_t h = hash_node(op, attrs, children);
  size_t mask = table_.size() - 1;
  size_t i = h & mask;
  for (;;) {
    uint64_t e = table_[i];
    NodeId m = entry_node(e);
    if (m == kNoId) break;
    if (entry_hash(e) == h && node_equals(m, op, attrs, children)) return m;
    i = (i + 1) & mask;
  }
  if (n != kNoId) {
    table_[i] = (uint64_t(h) << 32) | n;
    ++table_used_;
  }
  return kNoId;
}

void EGraph::erase_from_table(NodeId n) {
  uint32_t h = hash_node(nodes_[n].op, nodes_[n].attrs, children(n));
  size_t mask = table_.size() - 1;
  size_t i = h & mask;
  while (entry_node(table_[i]) != n) i = (i + 1) & mask;
  // Backward-shift deletion keeps every probe chain unbroken without tombstones.
  for (size_t j = i;;) {
    j = (j + 1) & mask;
    uint64_t e = table_[j];
    if (entry_node(e) == kNoId) break;
    size_t home = entry_hash(e) & mask;
    bool stays = (j > i) ? (home > i && home <= j) : (home > i || home <= j);
    if (!stays) {
      table_[i] = e;
      i = j;
    }
  }
  table_[i] = kEmpty;
  --table_used_;
}

NodeId EGraph::lookup_node(Symbol op, AttrId attrs, std::span<const EClassId> children) const {
  if (table_.empty()) return kNoId;
  ChildBuffer buf;
  buf.resize(children.size());
  for (size_t i = 0; i < children.size(); ++i) buf.data[i] = find(children[i]);
  std::span<const EClassId> canon(buf.data, children.size());
  uint32_t h = hash_node(op, attrs, canon);
  size_t mask = table_.size() - 1;
  for (size_t i = h & mask;; i = (i + 1) & mask) {
    uint64_t e = table_[i];
    NodeId m = entry_node(e);
    if (m == kNoId) return kNoId;
    if (entry_hash(e) == h && node_equals(m, op, attrs, canon)) return m;
  }
}

EClassId EGraph::lookup(Symbol op, AttrId attrs, std::span<const EClassId> children) const {
  NodeId m = lookup_node(op, attrs, children);
  return m == kNoId ? kNoId : find(m);
}

NodeId EGraph::live_node(NodeId n) const {
  if (n == kNoId || !dead_[n]) return n;
  NodeId m = lookup_node(op(n), this->attrs(n), children(n));
  return m != kNoId && !dead_[m] ? m : kNoId;
}

void EGraph::link_parent_slot(uint32_t slot, EClassId child) {
  uint32_t& head = parent_head_[child];
  if (head == kNoId) {
    head = slot;
    slot_next_[slot] = slot;
  } else {
    slot_next_[slot] = slot_next_[head];
    slot_next_[head] = slot;
  }
}

EClassId EGraph::add(Symbol op, AttrId attrs, std::span<const EClassId> children) {
  ChildBuffer buf;
  buf.resize(children.size());
  for (size_t i = 0; i < children.size(); ++i) buf.data[i] = unionfind_.find_mut(children[i]);
  std::span<const EClassId> canon(buf.data, children.size());
  NodeId n = static_cast<NodeId>(nodes_.size());
  NodeId existing = find_or_insert(op, attrs, canon, n);
  if (existing != kNoId) return unionfind_.find_mut(existing);

  uint32_t begin = static_cast<uint32_t>(children_.size());
  children_.insert(children_.end(), canon.begin(), canon.end());
  nodes_.push_back({op, attrs, begin, static_cast<uint32_t>(children_.size())});
  dead_.push_back(0);
  origins_.push_back(origin_);
  slot_next_.resize(children_.size());
  slot_node_.resize(children_.size(), n);
  parent_head_.push_back(kNoId);
  unionfind_.make_set();
  for (uint32_t s = begin; s < children_.size(); ++s) link_parent_slot(s, children_[s]);
  ++live_nodes_;
  ++num_classes_;
  clean_ = false;
  if (analysis_) {
    analysis_->make(*this, n);
    analysis_->modify(*this, n);
  }
  return n;
}

void EGraph::push_parents(EClassId c, BigVector<NodeId>& out) const {
  uint32_t head = parent_head_[c];
  if (head == kNoId) return;
  uint32_t s = head;
  do {
    NodeId p = slot_node_[s];
    if (!dead_[p]) out.push_back(p);
    s = slot_next_[s];
  } while (s != head);
}

bool EGraph::merge(EClassId a, EClassId b) {
  return merge_as(a, b, origin_);
}

bool EGraph::merge_as(EClassId given_a, EClassId given_b, Symbol origin) {
  EClassId a = unionfind_.find_mut(given_a);
  EClassId b = unionfind_.find_mut(given_b);
  if (a == b) return false;
  if (record_merges_) merge_log_.push_back({given_a, given_b, origin});
  auto [root, absorbed] = unionfind_.unite_roots(a, b);
  // The absorbed class's parents now hold a non-canonical child: repair them in rebuild.
  push_parents(absorbed, pending_);
  uint32_t& ha = parent_head_[root];
  uint32_t hb = parent_head_[absorbed];
  if (hb != kNoId) {
    if (ha == kNoId) {
      ha = hb;
    } else {
      std::swap(slot_next_[ha], slot_next_[hb]);
    }
  }
  parent_head_[absorbed] = kNoId;
  --num_classes_;
  clean_ = false;
  if (analysis_) {
    DidMerge did = analysis_->merge(root, absorbed);
    if (did.into_changed || did.from_changed) push_parents(root, analysis_pending_);
    if (did.into_changed) modify_pending_.push_back(root);
  }
  return true;
}

size_t EGraph::rebuild() {
  size_t merges = 0;
  ChildBuffer buf;
  while (!pending_.empty() || !analysis_pending_.empty() || !modify_pending_.empty()) {
    while (!pending_.empty()) {
      NodeId n = pending_.back();
      pending_.pop_back();
      if (pending_.size() > 8) {
        // Pending nodes are scattered; fetch the record of one we will repair soon.
        NodeId ahead = pending_[pending_.size() - 8];
        __builtin_prefetch(&nodes_[ahead]);
        __builtin_prefetch(&dead_[ahead]);
      }
      if (dead_[n]) continue;
      uint32_t begin = nodes_[n].begin, end = nodes_[n].end;
      bool changed = false;
      for (uint32_t s = begin; s < end && !changed; ++s)
        changed = unionfind_.find_mut(children_[s]) != children_[s];
      if (!changed) continue;  // already repaired (listed twice)
      erase_from_table(n);
      for (uint32_t s = begin; s < end; ++s) children_[s] = unionfind_.find_mut(children_[s]);
      std::span<const EClassId> canon(children_.data() + begin, end - begin);
      NodeId m = find_or_insert(nodes_[n].op, nodes_[n].attrs, canon, n);
      if (m != kNoId && m != n) {
        // Congruence: n now equals m. Keep m, retire n.
        dead_[n] = 1;
        --live_nodes_;
        if (merge_as(m, n, congruence_origin_)) ++merges;
      }
    }
    while (!analysis_pending_.empty() && pending_.empty()) {
      NodeId n = analysis_pending_.back();
      analysis_pending_.pop_back();
      if (dead_[n]) continue;
      EClassId c = unionfind_.find_mut(n);
      if (analysis_->join(*this, c, n)) {
        push_parents(c, analysis_pending_);
        modify_pending_.push_back(c);
      }
    }
    if (pending_.empty() && analysis_pending_.empty()) {
      BigVector<EClassId> todo;
      todo.swap(modify_pending_);
      for (EClassId c : todo) analysis_->modify(*this, unionfind_.find_mut(c));
    }
  }
  build_indexes();
  clean_ = true;
  return merges;
}

void EGraph::build_indexes() {
  unionfind_.compress_all();
  const size_t n_nodes = nodes_.size();
  Symbol max_op = 0;
  for (NodeId n = 0; n < n_nodes; ++n)
    if (!dead_[n]) max_op = std::max(max_op, nodes_[n].op);
  // Counting sort of live nodes by op, then a stable counting sort by class: each class's nodes
  // come out sorted by (op, NodeId).
  std::vector<uint32_t> by_op_begin(max_op + 2, 0);
  for (NodeId n = 0; n < n_nodes; ++n)
    if (!dead_[n]) ++by_op_begin[nodes_[n].op + 1];
  for (size_t i = 1; i < by_op_begin.size(); ++i) by_op_begin[i] += by_op_begin[i - 1];
  BigVector<NodeId> by_op(live_nodes_);
  for (NodeId n = 0; n < n_nodes; ++n)
    if (!dead_[n]) by_op[by_op_begin[nodes_[n].op]++] = n;

  class_begin_.assign(n_nodes + 1, 0);
  for (NodeId n : by_op) ++class_begin_[unionfind_.find(n) + 1];
  class_list_.clear();
  class_list_.reserve(num_classes_);
  for (size_t c = 0; c < n_nodes; ++c) {
    if (class_begin_[c + 1] != 0) class_list_.push_back(static_cast<EClassId>(c));
    class_begin_[c + 1] += class_begin_[c];
  }
  class_nodes_.resize(live_nodes_);
  {
    std::vector<uint32_t> cursor(class_begin_.begin(), class_begin_.end() - 1);
    for (NodeId n : by_op) class_nodes_[cursor[unionfind_.find(n)]++] = n;
  }
  by_op.clear();
  by_op.shrink_to_fit();

  // op -> classes: walk classes in order, each distinct op of a class once.
  op_begin_.assign(max_op + 2, 0);
  for (EClassId c : class_list_) {
    Symbol last = kNoId;
    for (NodeId n : class_nodes(c))
      if (nodes_[n].op != last) ++op_begin_[(last = nodes_[n].op) + 1];
  }
  for (size_t i = 1; i < op_begin_.size(); ++i) op_begin_[i] += op_begin_[i - 1];
  op_classes_.resize(op_begin_.back());
  std::vector<uint32_t> cursor(op_begin_.begin(), op_begin_.end() - 1);
  for (EClassId c : class_list_) {
    Symbol last = kNoId;
    for (NodeId n : class_nodes(c))
      if (nodes_[n].op != last) op_classes_[cursor[last = nodes_[n].op]++] = c;
  }
}

void EGraph::reserve(size_t nodes, size_t child_slots) {
  auto grow = [](auto& v, size_t extra) {
    if (v.size() + extra > v.capacity()) v.reserve(v.size() + extra);
  };
  grow(nodes_, nodes);
  grow(dead_, nodes);
  grow(origins_, nodes);
  grow(parent_head_, nodes);
  grow(children_, child_slots);
  grow(slot_next_, child_slots);
  grow(slot_node_, child_slots);
  unionfind_.reserve(unionfind_.size() + nodes);
}

size_t EGraph::memory_bytes() const {
  auto bytes = [](const auto& v) { return v.capacity() * sizeof(v[0]); };
  return bytes(nodes_) + bytes(children_) + bytes(dead_) + bytes(origins_) + bytes(merge_log_) +
         bytes(slot_next_) + bytes(slot_node_) + bytes(parent_head_) + unionfind_.memory_bytes() +
         bytes(table_) + bytes(pending_) + bytes(analysis_pending_) + bytes(class_list_) +
         bytes(class_begin_) + bytes(class_nodes_) + bytes(op_begin_) + bytes(op_classes_);
}

}  // namespace eqfuse::egraph
