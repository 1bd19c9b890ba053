#include "extract/greedy.h"

#include <fmt/format.h>

#include <chrono>
#include <deque>
#include <limits>

#include "support/error.h"

namespace eqfuse::extract {

TreeCosts tree_costs(const ExtractionProblem& problem, const Choice* fixed) {
  const size_t num_classes = problem.num_classes(), num_nodes = problem.num_nodes();
  constexpr double kInf = std::numeric_limits<double>::infinity();
  TreeCosts out{Choice(num_classes, kNoNode), std::vector<double>(num_classes, kInf)};
  std::vector<char> is_fixed(num_classes, 0);
  if (fixed)
    for (ClassIndex c = 0; c < num_classes; ++c)
      if ((*fixed)[c] != kNoNode) {
        is_fixed[c] = 1;
        out.choice[c] = (*fixed)[c];
        out.cost[c] = 0;
      }

  // Parent e-nodes of each e-class (CSR), to revisit them when the class gets cheaper.
  std::vector<uint32_t> begin(num_classes + 1, 0);
  for (NodeIndex n = 0; n < num_nodes; ++n)
    for (ClassIndex k : problem.children(n)) ++begin[k + 1];
  for (size_t c = 0; c < num_classes; ++c) begin[c + 1] += begin[c];
  std::vector<NodeIndex> parents(begin.back());
  {
    std::vector<uint32_t> fill(begin.begin(), begin.end() - 1);
    for (NodeIndex n = 0; n < num_nodes; ++n)
      for (ClassIndex k : problem.children(n)) parents[fill[k]++] = n;
  }

  std::deque<NodeIndex> queue;
  std::vector<char> queued(num_nodes, 0);
  for (NodeIndex n = 0; n < num_nodes; ++n)
    if (!is_fixed[problem.node_class(n)]) {
      queue.push_back(n);
      queued[n] = 1;
    }
  while (!queue.empty()) {
    NodeIndex n = queue.front();
    queue.pop_front();
    queued[n] = 0;
    ClassIndex c = problem.node_class(n);
    double v = problem.cost(n);
    for (ClassIndex k : problem.children(n)) v += out.cost[k];
    // Strict improvement only: with non-negative costs this keeps the choice acyclic.
    if (!(v < out.cost[c])) continue;
    out.cost[c] = v;
    out.choice[c] = n;
    for (uint32_t i = begin[c]; i < begin[c + 1]; ++i) {
      NodeIndex p = parents[i];
      if (!queued[p] && !is_fixed[problem.node_class(p)]) {
        queued[p] = 1;
        queue.push_back(p);
      }
    }
  }
  return out;
}

void require_non_negative_costs(const ExtractionProblem& problem, const char* method) {
  if (problem.min_cost() >= 0) return;
  for (NodeIndex n = 0; n < problem.num_nodes(); ++n)
    if (problem.cost(n) < 0)
      fail(fmt::format(
          "e-node {} (e-class {}) costs {}: the {} extractor needs non-negative costs (its tree "
          "costs need not settle on a cycle, nor stay acyclic, with negative ones); the ILP "
          "extractor handles negative costs exactly",
          n, problem.node_class(n), problem.cost(n), method));
}

ExtractionResult extract_greedy(const ExtractionProblem& problem) {
  auto start = std::chrono::steady_clock::now();
  require_non_negative_costs(problem, "greedy");
  TreeCosts costs = tree_costs(problem);
  for (ClassIndex r : problem.roots())
    if (costs.choice[r] == kNoNode)
      fail("no finite term for a root e-class (every term is cyclic)");
  ExtractionResult result = make_result(problem, costs.choice);
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace eqfuse::extract
