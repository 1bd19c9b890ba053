#include "extract/best_first.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <queue>
#include <span>
#include <vector>

namespace eqfuse::extract {
namespace {

constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();

// The e-classes that the roots reach, every one after all its parents (the reverse of a
// depth-first postorder), or nullopt when they hold a cycle. Iterative: e-class graphs are deep.
std::optional<std::vector<ClassIndex>> top_down_order(const ExtractionProblem& p) {
  std::vector<std::vector<ClassIndex>> children(p.num_classes());
  for (NodeIndex n = 0; n < p.num_nodes(); ++n)
    for (ClassIndex k : p.children(n)) children[p.node_class(n)].push_back(k);
  for (auto& list : children) {
    std::sort(list.begin(), list.end());
    list.erase(std::unique(list.begin(), list.end()), list.end());
  }
  enum : uint8_t { kUnseen, kOpen, kDone };
  std::vector<uint8_t> mark(p.num_classes(), kUnseen);
  std::vector<ClassIndex> postorder;
  std::vector<std::pair<ClassIndex, size_t>> stack;  // e-class, next child to visit
  for (ClassIndex root : p.roots()) {
    if (mark[root] != kUnseen) continue;
    mark[root] = kOpen;
    stack.push_back({root, 0});
    while (!stack.empty()) {
      auto& [c, next] = stack.back();
      if (next == children[c].size()) {
        mark[c] = kDone;
        postorder.push_back(c);
        stack.pop_back();
        continue;
      }
      ClassIndex k = children[c][next++];
      if (mark[k] == kOpen) return std::nullopt;
      if (mark[k] == kUnseen) {
        mark[k] = kOpen;
        stack.push_back({k, 0});
      }
    }
  }
  std::reverse(postorder.begin(), postorder.end());
  return postorder;
}

// The problem over positions in the top-down order: per position its e-nodes, each with its cost
// and the positions of its child e-classes (deduplicated, all later than its own).
struct Ordered {
  size_t size = 0;                     // positions
  size_t words = 0;                    // 64-bit words per bit set over the positions
  std::vector<uint32_t> option_begin;  // per position, into the option arrays; size + 1 entries
  std::vector<NodeIndex> option_node;
  std::vector<double> option_cost;
  std::vector<uint32_t> child_begin;  // per option, into child_position; options + 1 entries
  std::vector<uint32_t> child_position;
  std::vector<double> cheapest;       // per position, its cheapest e-node's cost
  std::vector<double> critical_path;  // per position, the least cost of a term's costliest chain
  std::vector<uint64_t> mandatory;    // per position, `words` words: the e-classes in every term
  std::vector<uint32_t> root_position;

  std::span<const uint64_t> mandatory_of(size_t position) const {
    return {mandatory.data() + position * words, words};
  }
};

Ordered order_problem(const ExtractionProblem& p, const std::vector<ClassIndex>& order) {
  Ordered o;
  o.size = order.size();
  o.words = (o.size + 63) / 64;
  std::vector<uint32_t> position(p.num_classes(), kNone);
  for (size_t i = 0; i < order.size(); ++i) position[order[i]] = static_cast<uint32_t>(i);
  o.child_begin.push_back(0);
  o.cheapest.assign(o.size, std::numeric_limits<double>::infinity());
  for (size_t i = 0; i < o.size; ++i) {
    o.option_begin.push_back(static_cast<uint32_t>(o.option_node.size()));
    for (NodeIndex n : p.nodes(order[i])) {
      o.option_node.push_back(n);
      o.option_cost.push_back(p.cost(n));
      o.cheapest[i] = std::min(o.cheapest[i], p.cost(n));
      const size_t first = o.child_position.size();
      for (ClassIndex k : p.children(n)) o.child_position.push_back(position[k]);
      std::sort(o.child_position.begin() + static_cast<std::ptrdiff_t>(first),
                o.child_position.end());
      o.child_position.erase(
          std::unique(o.child_position.begin() + static_cast<std::ptrdiff_t>(first),
                      o.child_position.end()),
          o.child_position.end());
      o.child_begin.push_back(static_cast<uint32_t>(o.child_position.size()));
    }
  }
  o.option_begin.push_back(static_cast<uint32_t>(o.option_node.size()));
  // Bottom-up: an e-class needs itself and what every one of its e-nodes' terms needs.
  o.mandatory.assign(o.size * o.words, 0);
  std::vector<uint64_t> all(o.words), term(o.words);
  for (size_t i = o.size; i-- > 0;) {
    std::fill(all.begin(), all.end(), ~uint64_t{0});
    for (uint32_t opt = o.option_begin[i]; opt < o.option_begin[i + 1]; ++opt) {
      std::fill(term.begin(), term.end(), 0);
      for (uint32_t j = o.child_begin[opt]; j < o.child_begin[opt + 1]; ++j) {
        auto row = o.mandatory_of(o.child_position[j]);
        for (size_t w = 0; w < o.words; ++w) term[w] |= row[w];
      }
      for (size_t w = 0; w < o.words; ++w) all[w] &= term[w];
    }
    if (o.option_begin[i] == o.option_begin[i + 1]) std::fill(all.begin(), all.end(), 0);
    all[i / 64] |= uint64_t{1} << (i % 64);
    std::copy(all.begin(), all.end(),
              o.mandatory.begin() + static_cast<std::ptrdiff_t>(i * o.words));
  }
  // Bottom-up: a term costs at least its root e-node plus a term of its costliest child.
  o.critical_path.assign(o.size, 0);
  for (size_t i = o.size; i-- > 0;) {
    double least = std::numeric_limits<double>::infinity();
    for (uint32_t opt = o.option_begin[i]; opt < o.option_begin[i + 1]; ++opt) {
      double chain = 0;
      for (uint32_t j = o.child_begin[opt]; j < o.child_begin[opt + 1]; ++j)
        chain = std::max(chain, o.critical_path[o.child_position[j]]);
      least = std::min(least, o.option_cost[opt] + chain);
    }
    o.critical_path[i] = least;
  }
  for (ClassIndex r : p.roots()) o.root_position.push_back(position[r]);
  return o;
}

// The states: bit sets of `words` words in one arena, found again through an open-addressing
// table of state numbers.
class StateTable {
 public:
  explicit StateTable(size_t words) : words_(words), slots_(1024, kNone) {}

  size_t size() const { return g_.size(); }
  size_t bytes() const {
    return bits_.capacity() * sizeof(uint64_t) + slots_.capacity() * sizeof(uint32_t) +
           g_.capacity() * (sizeof(double) + sizeof(uint32_t) + sizeof(NodeIndex));
  }
  std::span<const uint64_t> bits(uint32_t s) const { return {bits_.data() + s * words_, words_}; }
  double& g(uint32_t s) { return g_[s]; }
  uint32_t parent(uint32_t s) const { return parent_[s]; }
  NodeIndex via(uint32_t s) const { return via_[s]; }
  void set_step(uint32_t s, uint32_t parent, NodeIndex via) {
    parent_[s] = parent;
    via_[s] = via;
  }

  // The state with these bits, added (g infinite) if new.
  uint32_t find_or_add(std::span<const uint64_t> key) {
    if (2 * (size() + 1) > slots_.size()) grow();
    size_t mask = slots_.size() - 1;
    for (size_t i = hash(key) & mask;; i = (i + 1) & mask) {
      if (slots_[i] == kNone) {
        const auto s = static_cast<uint32_t>(size());
        slots_[i] = s;
        bits_.insert(bits_.end(), key.begin(), key.end());
        g_.push_back(std::numeric_limits<double>::infinity());
        parent_.push_back(kNone);
        via_.push_back(kNoNode);
        return s;
      }
      if (std::equal(key.begin(), key.end(), bits(slots_[i]).begin())) return slots_[i];
    }
  }

 private:
  static size_t hash(std::span<const uint64_t> key) {
    uint64_t h = 0x9E3779B97F4A7C15ull;
    for (uint64_t w : key) h = (h ^ w) * 0xBF58476D1CE4E5B9ull, h ^= h >> 31;
    return static_cast<size_t>(h);
  }
  void grow() {
    std::vector<uint32_t> old(slots_.size() * 2, kNone);
    slots_.swap(old);
    size_t mask = slots_.size() - 1;
    for (uint32_t s : old) {
      if (s == kNone) continue;
      size_t i = hash(bits(s)) & mask;
      while (slots_[i] != kNone) i = (i + 1) & mask;
      slots_[i] = s;
    }
  }

  size_t words_;
  std::vector<uint64_t> bits_;
  std::vector<uint32_t> slots_;
  std::vector<double> g_;
  std::vector<uint32_t> parent_;
  std::vector<NodeIndex> via_;
};

}  // namespace

std::optional<BestFirstResult> best_first_search(const ExtractionProblem& p, double incumbent_cost,
                                                 const BestFirstOptions& options) {
  if (p.min_cost() < 0) return std::nullopt;
  auto order = top_down_order(p);
  if (!order) return std::nullopt;
  // The closures take a bit set per e-class; past half the room, the states would not fit.
  const size_t closure_bytes = order->size() * ((order->size() + 63) / 64) * sizeof(uint64_t);
  if (closure_bytes > options.max_bytes / 2) return std::nullopt;
  const Ordered o = order_problem(p, *order);
  const size_t words = o.words;

  // h: the larger of two lower bounds on what is left to pay: the cheapest e-node of each
  // e-class in the mandatory closure of the state's e-classes, and the critical path of its
  // costliest e-class.
  std::vector<uint64_t> closure(words);
  auto estimate = [&](std::span<const uint64_t> bits) {
    std::fill(closure.begin(), closure.end(), 0);
    double path = 0;
    for (size_t w = 0; w < words; ++w)
      for (uint64_t b = bits[w]; b; b &= b - 1) {
        const size_t i = w * 64 + static_cast<size_t>(std::countr_zero(b));
        path = std::max(path, o.critical_path[i]);
        auto row = o.mandatory_of(i);
        for (size_t v = 0; v < words; ++v) closure[v] |= row[v];
      }
    double sum = 0;
    for (size_t w = 0; w < words; ++w)
      for (uint64_t b = closure[w]; b; b &= b - 1)
        sum += o.cheapest[w * 64 + static_cast<size_t>(std::countr_zero(b))];
    return std::max(sum, path);
  };

  BestFirstResult result;
  // Only strictly cheaper choices are searched for (to a relative 1e-9, the ILP's own slack).
  const double cutoff = incumbent_cost - (1e-9 * std::abs(incumbent_cost) + 1e-12);
  struct Entry {
    double f, g;
    uint32_t state;
    // Least f first; on ties the deeper state (more cost already paid), to finish sooner.
    bool operator<(const Entry& other) const { return f != other.f ? f > other.f : g < other.g; }
  };
  std::priority_queue<Entry> open;
  StateTable states(words);
  std::vector<uint64_t> key(words, 0), current;
  for (uint32_t r : o.root_position) key[r / 64] |= uint64_t{1} << (r % 64);
  {
    const uint32_t s = states.find_or_add(key);
    states.g(s) = 0;
    const double f = estimate(key);
    if (f < cutoff) open.push({f, 0, s});
  }
  size_t taken = 0;
  while (!open.empty()) {
    const Entry top = open.top();
    open.pop();
    if (top.g > states.g(top.state)) continue;  // reached more cheaply since
    result.bound = std::max(result.bound, top.f);
    const auto stored = states.bits(top.state);
    current.assign(stored.begin(), stored.end());  // the arena moves as states are added
    std::span<const uint64_t> bits = current;
    size_t first = o.size;
    for (size_t w = 0; w < words; ++w)
      if (bits[w]) {
        first = w * 64 + static_cast<size_t>(std::countr_zero(bits[w]));
        break;
      }
    if (first == o.size) {  // nothing left to decide: the cheapest choice
      result.complete = true;
      result.bound = top.g;
      result.choice.assign(p.num_classes(), kNoNode);
      for (uint32_t s = top.state; states.parent(s) != kNone; s = states.parent(s))
        result.choice[p.node_class(states.via(s))] = states.via(s);
      result.states = states.size();
      return result;
    }
    if (closure_bytes + states.bytes() + open.size() * sizeof(Entry) > options.max_bytes ||
        (++taken % 256 == 0 && std::chrono::steady_clock::now() >= options.deadline)) {
      result.states = states.size();
      return result;
    }
    for (uint32_t opt = o.option_begin[first]; opt < o.option_begin[first + 1]; ++opt) {
      std::copy(bits.begin(), bits.end(), key.begin());
      key[first / 64] &= ~(uint64_t{1} << (first % 64));
      for (uint32_t j = o.child_begin[opt]; j < o.child_begin[opt + 1]; ++j)
        key[o.child_position[j] / 64] |= uint64_t{1} << (o.child_position[j] % 64);
      const double g = top.g + o.option_cost[opt];
      const double f = g + estimate(key);
      if (f >= cutoff) continue;
      const uint32_t s = states.find_or_add(key);
      if (states.g(s) <= g) continue;
      states.g(s) = g;
      states.set_step(s, top.state, o.option_node[opt]);
      open.push({f, g, s});
    }
  }
  // Every state that could lead to a cheaper choice was taken: the incumbent is optimal.
  result.complete = true;
  result.bound = incumbent_cost;
  result.states = states.size();
  return result;
}

}  // namespace eqfuse::extract
