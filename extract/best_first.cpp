#include "extract/best_first.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <queue>
#include <span>
#include <vector>

#include "extract/scc.h"

namespace eqfuse::extract {
namespace {

constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();

// The e-classes that the roots reach in a top-down order of their strongly connected components
// (every component after all components with an edge into it: the reverse of a depth-first
// postorder over components, children in e-class order), the classes of a component next to each
// other. `block` gets, per position, one past the last position of its component. Iterative:
// e-class graphs are deep.
std::vector<ClassIndex> top_down_order(const ExtractionProblem& p, std::vector<uint32_t>* block) {
  const size_t num_classes = p.num_classes();
  std::vector<std::vector<ClassIndex>> children(num_classes);
  for (NodeIndex n = 0; n < p.num_nodes(); ++n)
    for (ClassIndex k : p.children(n)) children[p.node_class(n)].push_back(k);
  for (auto& list : children) {
    std::sort(list.begin(), list.end());
    list.erase(std::unique(list.begin(), list.end()), list.end());
  }
  uint32_t num_components = 0;
  const std::vector<uint32_t> component = strongly_connected_components(children, &num_components);
  std::vector<std::vector<ClassIndex>> members(num_components);
  for (ClassIndex c = 0; c < num_classes; ++c) members[component[c]].push_back(c);
  std::vector<std::vector<uint32_t>> successors(num_components);
  for (uint32_t k = 0; k < num_components; ++k)
    for (ClassIndex c : members[k])
      for (ClassIndex d : children[c])
        if (component[d] != k) successors[k].push_back(component[d]);

  std::vector<uint8_t> seen(num_components, 0);
  std::vector<uint32_t> postorder;
  std::vector<std::pair<uint32_t, size_t>> stack;  // component, next successor to visit
  for (ClassIndex root : p.roots()) {
    if (seen[component[root]]) continue;
    seen[component[root]] = 1;
    stack.push_back({component[root], 0});
    while (!stack.empty()) {
      auto& [k, next] = stack.back();
      if (next == successors[k].size()) {
        postorder.push_back(k);
        stack.pop_back();
        continue;
      }
      const uint32_t d = successors[k][next++];
      if (!seen[d]) {
        seen[d] = 1;
        stack.push_back({d, 0});
      }
    }
  }
  std::vector<ClassIndex> order;
  block->clear();
  for (auto k = postorder.rbegin(); k != postorder.rend(); ++k) {
    order.insert(order.end(), members[*k].begin(), members[*k].end());
    block->resize(order.size(), static_cast<uint32_t>(order.size()));
  }
  return order;
}

// The problem over positions in the top-down order: per position its e-nodes, each with its cost
// and the positions of its child e-classes (deduplicated; later than its own, or in its own
// component). E-nodes that read their own e-class are left out: no acyclic choice uses them.
struct Ordered {
  size_t size = 0;                     // positions
  std::vector<uint32_t> block_end;     // per position, one past its component's last position
  std::vector<uint32_t> block_begin;   // per position, its component's first position
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

Ordered order_problem(const ExtractionProblem& p, const std::vector<ClassIndex>& order,
                      std::vector<uint32_t> block_end) {
  Ordered o;
  o.size = order.size();
  o.block_end = std::move(block_end);
  o.block_begin.resize(o.size);
  for (size_t i = 0; i < o.size; i = o.block_end[i])
    std::fill(o.block_begin.begin() + static_cast<std::ptrdiff_t>(i),
              o.block_begin.begin() + o.block_end[i], static_cast<uint32_t>(i));
  o.words = (o.size + 63) / 64;
  std::vector<uint32_t> position(p.num_classes(), kNone);
  for (size_t i = 0; i < order.size(); ++i) position[order[i]] = static_cast<uint32_t>(i);
  o.child_begin.push_back(0);
  o.cheapest.assign(o.size, std::numeric_limits<double>::infinity());
  for (size_t i = 0; i < o.size; ++i) {
    o.option_begin.push_back(static_cast<uint32_t>(o.option_node.size()));
    for (NodeIndex n : p.nodes(order[i])) {
      const auto kids = p.children(n);
      if (std::find(kids.begin(), kids.end(), order[i]) != kids.end()) continue;
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
  // Bottom-up by component, to a fixed point inside one: an e-class needs itself and what every
  // one of its e-nodes' terms needs (greatest: a component's e-classes start from everything).
  o.mandatory.assign(o.size * o.words, ~uint64_t{0});
  std::vector<uint64_t> all(o.words), term(o.words);
  for (size_t end = o.size; end > 0;) {
    const size_t begin = o.block_begin[end - 1];
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t i = end; i-- > begin;) {
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
        auto row = o.mandatory.begin() + static_cast<std::ptrdiff_t>(i * o.words);
        if (!std::equal(all.begin(), all.end(), row)) {
          std::copy(all.begin(), all.end(), row);
          changed = end - begin > 1;
        }
      }
    }
    end = begin;
  }
  // An e-class on a cycle with no finite term keeps every bit; the padding past the last
  // position must not count.
  if (o.size % 64 != 0)
    for (size_t i = 0; i < o.size; ++i)
      o.mandatory[i * o.words + o.words - 1] &= (uint64_t{1} << (o.size % 64)) - 1;
  // Bottom-up by component, to a fixed point inside one (least: from infinity down, each pass
  // admits deeper terms): a term costs at least its root e-node plus a term of its costliest
  // child.
  o.critical_path.assign(o.size, std::numeric_limits<double>::infinity());
  for (size_t end = o.size; end > 0;) {
    const size_t begin = o.block_begin[end - 1];
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t i = end; i-- > begin;) {
        double least = std::numeric_limits<double>::infinity();
        for (uint32_t opt = o.option_begin[i]; opt < o.option_begin[i + 1]; ++opt) {
          double chain = 0;
          for (uint32_t j = o.child_begin[opt]; j < o.child_begin[opt + 1]; ++j)
            chain = std::max(chain, o.critical_path[o.child_position[j]]);
          least = std::min(least, o.option_cost[opt] + chain);
        }
        if (least < o.critical_path[i]) {
          o.critical_path[i] = least;
          changed = end - begin > 1;
        }
      }
    }
    end = begin;
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
  std::vector<uint32_t> block_end;
  const std::vector<ClassIndex> order = top_down_order(p, &block_end);
  // The closures take a bit set per e-class; past half the room, the states would not fit.
  const size_t closure_bytes = order.size() * ((order.size() + 63) / 64) * sizeof(uint64_t);
  if (closure_bytes > options.max_bytes / 2) return std::nullopt;
  const Ordered o = order_problem(p, order, std::move(block_end));
  const size_t words = o.words;
  // Inside a component with a cycle, the state also holds the e-node chosen for each of its
  // e-classes decided so far (16 bits each: the option's index + 1, 0 while undecided), so that
  // an e-node closing a cycle is refused. A state of another position leaves them 0.
  size_t largest_block = 0, most_options = 0;
  for (size_t i = 0; i < o.size; i = o.block_end[i])
    if (o.block_end[i] - i > 1) largest_block = std::max<size_t>(largest_block, o.block_end[i] - i);
  for (size_t i = 0; i < o.size; ++i)
    most_options = std::max<size_t>(most_options, o.option_begin[i + 1] - o.option_begin[i]);
  if (largest_block > 0 && most_options >= 0xFFFF) return std::nullopt;
  const size_t choice_words = (largest_block + 3) / 4, key_words = words + choice_words;
  auto cyclic = [&](size_t i) { return o.block_end[i] - o.block_begin[i] > 1; };
  auto chosen = [&](std::span<const uint64_t> key, size_t block_begin, size_t i) {
    const size_t k = i - block_begin;
    return static_cast<uint32_t>(key[words + k / 4] >> (16 * (k % 4)) & 0xFFFF);
  };
  auto set_chosen = [&](std::vector<uint64_t>& key, size_t block_begin, size_t i, uint32_t v) {
    const size_t k = i - block_begin;
    key[words + k / 4] |= uint64_t{v} << (16 * (k % 4));
  };
  auto first_of = [&](std::span<const uint64_t> key) {
    for (size_t w = 0; w < words; ++w)
      if (key[w]) return w * 64 + static_cast<size_t>(std::countr_zero(key[w]));
    return o.size;
  };

  // h: the larger of two lower bounds on what is left to pay: the cheapest e-node of each
  // e-class in the mandatory closure of the state's e-classes, less those decided in the current
  // component, and the critical path of its costliest e-class outside a current component with a
  // cycle (inside one, a term may reuse what is decided already).
  std::vector<uint64_t> closure(words);
  auto estimate = [&](std::span<const uint64_t> key) {
    const size_t first = first_of(key);
    const bool in_cycle = first < o.size && cyclic(first);
    const size_t begin = first < o.size ? o.block_begin[first] : o.size;
    const size_t end = first < o.size ? o.block_end[first] : o.size;
    std::fill(closure.begin(), closure.end(), 0);
    double path = 0;
    for (size_t w = 0; w < words; ++w)
      for (uint64_t b = key[w]; b; b &= b - 1) {
        const size_t i = w * 64 + static_cast<size_t>(std::countr_zero(b));
        if (!in_cycle || i >= end) path = std::max(path, o.critical_path[i]);
        auto row = o.mandatory_of(i);
        for (size_t v = 0; v < words; ++v) closure[v] |= row[v];
      }
    double sum = 0;
    for (size_t w = 0; w < words; ++w)
      for (uint64_t b = closure[w]; b; b &= b - 1) {
        const size_t i = w * 64 + static_cast<size_t>(std::countr_zero(b));
        if (in_cycle && i >= begin && i < end && chosen(key, begin, i)) continue;
        sum += o.cheapest[i];
      }
    return std::max(sum, path);
  };
  // Whether choosing option `opt` for position i (in a component with a cycle, decided ones as in
  // `key`) closes a cycle: a decided child of its component reaches i through decided e-nodes.
  std::vector<uint32_t> stack;
  std::vector<uint8_t> visited;
  auto closes_cycle = [&](std::span<const uint64_t> key, size_t i, uint32_t opt) {
    const size_t begin = o.block_begin[i], end = o.block_end[i];
    visited.assign(end - begin, 0);
    stack.clear();
    for (uint32_t j = o.child_begin[opt]; j < o.child_begin[opt + 1]; ++j) {
      const uint32_t k = o.child_position[j];
      if (k >= begin && k < end && chosen(key, begin, k) && !visited[k - begin]) {
        visited[k - begin] = 1;
        stack.push_back(k);
      }
    }
    while (!stack.empty()) {
      const uint32_t x = stack.back();
      stack.pop_back();
      if (x == i) return true;
      const uint32_t x_opt = o.option_begin[x] + chosen(key, begin, x) - 1;
      for (uint32_t j = o.child_begin[x_opt]; j < o.child_begin[x_opt + 1]; ++j) {
        const uint32_t y = o.child_position[j];
        if (y < begin || y >= end || visited[y - begin]) continue;
        if (y != i && !chosen(key, begin, y)) continue;
        visited[y - begin] = 1;
        stack.push_back(y);
      }
    }
    return false;
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
  StateTable states(key_words);
  std::vector<uint64_t> key(key_words, 0), current;
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
    const size_t first = first_of(current);
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
    const bool in_cycle = cyclic(first);
    const size_t begin = o.block_begin[first], end = o.block_end[first];
    for (uint32_t opt = o.option_begin[first]; opt < o.option_begin[first + 1]; ++opt) {
      if (in_cycle && closes_cycle(current, first, opt)) continue;
      std::copy(current.begin(), current.end(), key.begin());
      key[first / 64] &= ~(uint64_t{1} << (first % 64));
      if (in_cycle) set_chosen(key, begin, first, opt - o.option_begin[first] + 1);
      for (uint32_t j = o.child_begin[opt]; j < o.child_begin[opt + 1]; ++j) {
        const uint32_t k = o.child_position[j];
        if (in_cycle && k >= begin && k < end && chosen(key, begin, k)) continue;  // decided
        key[k / 64] |= uint64_t{1} << (k % 64);
      }
      // Past the component, what was chosen in it no longer matters: no later e-class reads it.
      const size_t next = first_of(key);
      if (in_cycle && (next == o.size || next >= end))
        std::fill(key.begin() + static_cast<std::ptrdiff_t>(words), key.end(), 0);
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
