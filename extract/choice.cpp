#include "extract/choice.h"

#include <cstdint>

#include "support/error.h"

namespace eqfuse::extract {

std::optional<std::vector<ClassIndex>> chosen_classes_bottom_up(const ExtractionProblem& problem,
                                                                const Choice& choice) {
  if (choice.size() != problem.num_classes()) return std::nullopt;
  // Iterative DFS; 0 = unseen, 1 = on the stack, 2 = done.
  std::vector<uint8_t> state(problem.num_classes(), 0);
  std::vector<ClassIndex> order;
  std::vector<std::pair<ClassIndex, uint32_t>> stack;
  for (ClassIndex root : problem.roots()) {
    if (state[root] == 2) continue;
    stack.push_back({root, 0});
    state[root] = 1;
    while (!stack.empty()) {
      auto& [c, next] = stack.back();
      NodeIndex n = choice[c];
      if (n == kNoNode || n >= problem.num_nodes() || problem.node_class(n) != c)
        return std::nullopt;
      auto kids = problem.children(n);
      if (next < kids.size()) {
        ClassIndex k = kids[next++];
        if (state[k] == 1) return std::nullopt;  // a cycle
        if (state[k] == 0) {
          state[k] = 1;
          stack.push_back({k, 0});
        }
      } else {
        state[c] = 2;
        order.push_back(c);
        stack.pop_back();
      }
    }
  }
  return order;
}

bool is_valid_choice(const ExtractionProblem& problem, const Choice& choice) {
  return chosen_classes_bottom_up(problem, choice).has_value();
}

namespace {
std::vector<ClassIndex> checked_order(const ExtractionProblem& problem, const Choice& choice) {
  auto order = chosen_classes_bottom_up(problem, choice);
  if (!order) throw Error("extractor produced an invalid or cyclic choice", Error::Kind::Internal);
  return std::move(*order);
}
}  // namespace

double dag_cost(const ExtractionProblem& problem, const Choice& choice) {
  double sum = 0;
  for (ClassIndex c : checked_order(problem, choice)) sum += problem.cost(choice[c]);
  return sum;
}

double tree_cost(const ExtractionProblem& problem, const Choice& choice) {
  std::vector<double> tree(problem.num_classes(), 0);
  double total = 0;
  for (ClassIndex c : checked_order(problem, choice)) {
    NodeIndex n = choice[c];
    double t = problem.cost(n);
    for (ClassIndex k : problem.children(n)) t += tree[k];
    tree[c] = t;
  }
  for (ClassIndex r : problem.roots()) total += tree[r];
  return total;
}

ExtractionResult make_result(const ExtractionProblem& problem, const Choice& choice) {
  ExtractionResult result;
  result.choice.assign(problem.num_classes(), kNoNode);
  for (ClassIndex c : checked_order(problem, choice)) result.choice[c] = choice[c];
  result.dag_cost = dag_cost(problem, result.choice);
  result.tree_cost = tree_cost(problem, result.choice);
  return result;
}

}  // namespace eqfuse::extract
