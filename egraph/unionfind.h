#pragma once
// Union-find over dense 4-byte ids: path halving on find, union by size. The e-graph's class
// ids are the ids of the e-nodes that created them, so one UnionFind maps every e-node to its
// e-class as well.
#include <cstdint>
#include <utility>
#include <vector>

#include "egraph/big_vector.h"

namespace eqfuse::egraph {

class UnionFind {
 public:
  uint32_t make_set() {
    uint32_t id = static_cast<uint32_t>(parent_.size());
    parent_.push_back(id);
    size_.push_back(1);
    return id;
  }
  size_t size() const { return parent_.size(); }
  void reserve(size_t n) {
    if (n > parent_.capacity()) {
      parent_.reserve(n);
      size_.reserve(n);
    }
  }

  // Read-only find (safe while other threads read too).
  uint32_t find(uint32_t id) const {
    while (parent_[id] != id) id = parent_[id];
    return id;
  }
  uint32_t find_mut(uint32_t id) {
    while (parent_[id] != id) {
      parent_[id] = parent_[parent_[id]];
      id = parent_[id];
    }
    return id;
  }
  // Unites two roots; returns {root, absorbed}. The larger set's root survives (ties: the
  // smaller id, so the outcome does not depend on argument order).
  std::pair<uint32_t, uint32_t> unite_roots(uint32_t a, uint32_t b) {
    if (size_[a] < size_[b] || (size_[a] == size_[b] && b < a)) std::swap(a, b);
    parent_[b] = a;
    size_[a] += size_[b];
    return {a, b};
  }
  // Points every id straight at its root, so later read-only finds take one step.
  void compress_all() {
    for (uint32_t i = 0; i < parent_.size(); ++i) parent_[i] = find_mut(i);
  }
  size_t memory_bytes() const { return (parent_.capacity() + size_.capacity()) * 4; }

 private:
  BigVector<uint32_t> parent_;
  BigVector<uint32_t> size_;
};

}  // namespace eqfuse::egraph
