// Greedy, DAG-aware and ILP extraction on hand-made e-graphs (no shared data needed).
#include <algorithm>
#include <catch2/catch.hpp>
#include <string>

#include "extract/dag.h"
#include "extract/decompose.h"
#include "extract/greedy.h"
#include "extract/ilp.h"
#include "extract/reduce.h"
#include "support/error.h"
#include "tests/extract/small_problems.h"
#include "tests/extract/validator.h"

using namespace eqfuse;
using namespace eqfuse::extract;
using eqfuse::test::problem_from_text;
using eqfuse::test::to_choice_map;

namespace {
void check_valid(const char* text, const SerializedProblem& sp, const ExtractionResult& r) {
  auto v = test::validate_choice(egraph::parse_serialized_egraph(text), to_choice_map(sp, r));
  INFO(v.error);
  REQUIRE(v.ok);
  CHECK(v.dag_cost == Approx(r.dag_cost).margin(1e-12));
}
std::string chosen(const SerializedProblem& sp, const ExtractionResult& r, const char* eclass) {
  auto m = to_choice_map(sp, r);
  auto it = m.find(eclass);
  return it == m.end() ? "" : it->second;
}
}  // namespace

TEST_CASE("greedy takes the tree-optimal term, DAG-aware methods share", "[extract]") {
  auto sp = problem_from_text(test::kSharedSubterm);
  auto greedy = extract_greedy(sp.problem);
  check_valid(test::kSharedSubterm, sp, greedy);
  CHECK(greedy.dag_cost == 14);
  CHECK(greedy.tree_cost == 14);
  CHECK_FALSE(greedy.optimal);
  CHECK_FALSE(greedy.bound.has_value());

  auto dag = extract_dag(sp.problem);
  check_valid(test::kSharedSubterm, sp, dag);
  CHECK(dag.dag_cost == 12);
  CHECK(dag.tree_cost == 22);  // X counted once per use
  CHECK_FALSE(dag.bound.has_value());

  auto ilp = extract_ilp(sp.problem);
  check_valid(test::kSharedSubterm, sp, ilp);
  CHECK(ilp.dag_cost == 12);
  CHECK(ilp.optimal);
  REQUIRE(ilp.bound.has_value());
  CHECK(*ilp.bound == Approx(12));
}

TEST_CASE("the DAG-aware search keeps the best of the starts it is given", "[extract]") {
  auto sp = problem_from_text(test::kSharedSubterm);
  auto node = [&](const std::string& id) {
    return NodeIndex(std::find(sp.node_ids.begin(), sp.node_ids.end(), id) - sp.node_ids.begin());
  };
  auto cls = [&](const std::string& id) {
    return ClassIndex(std::find(sp.class_ids.begin(), sp.class_ids.end(), id) -
                      sp.class_ids.begin());
  };
  CHECK(extract_dag(sp.problem).stop_reason == "converged");
  DagOptions no_time;
  no_time.time_limit_seconds = 0;  // no search: each start is priced as it is
  CHECK(extract_dag(sp.problem, no_time).dag_cost == 14);  // the greedy start
  CHECK(extract_dag(sp.problem, no_time).stop_reason == "time limit");
  DagOptions no_work;
  no_work.work_limit = 0;  // the same by the step count
  CHECK(extract_dag(sp.problem, no_work).dag_cost == 14);
  CHECK(extract_dag(sp.problem, no_work).stop_reason == "work limit");
  Choice shared(sp.problem.num_classes(), kNoNode);
  shared[cls("A")] = node("a1");
  shared[cls("B")] = node("b1");  // R and X: the greedy choice fills them
  no_time.starts = {shared};
  auto from_start = extract_dag(sp.problem, no_time);
  check_valid(test::kSharedSubterm, sp, from_start);
  CHECK(from_start.dag_cost == 12);
  CHECK(chosen(sp, from_start, "A") == "a1");
  // A start that names an e-node of another e-class is not a choice: skipped, not trusted.
  Choice wrong(sp.problem.num_classes(), kNoNode);
  wrong[cls("A")] = node("b1");
  no_time.starts = {wrong};
  auto skipped = extract_dag(sp.problem, no_time);
  check_valid(test::kSharedSubterm, sp, skipped);
  CHECK(skipped.dag_cost == 14);
}

TEST_CASE("ILP improves a poor warm start", "[extract]") {
  auto sp = problem_from_text(test::kSharedSubterm);
  IlpOptions options;
  options.warm_start = extract_greedy(sp.problem).choice;
  auto ilp = extract_ilp(sp.problem, options);
  check_valid(test::kSharedSubterm, sp, ilp);
  CHECK(ilp.dag_cost == 12);
  CHECK(ilp.optimal);
}

TEST_CASE("cyclic e-graphs give acyclic choices", "[extract]") {
  auto sp = problem_from_text(test::kCycles);
  for (auto* method : {"greedy", "dag", "ilp"}) {
    INFO(method);
    ExtractionResult r = std::string(method) == "greedy" ? extract_greedy(sp.problem)
                         : std::string(method) == "dag"  ? extract_dag(sp.problem)
                                                         : extract_ilp(sp.problem);
    check_valid(test::kCycles, sp, r);
    // Best: R(1) + A=f(B)(0) + B=leaf(1) + C=leaf(2).
    CHECK(r.dag_cost == 4);
    CHECK(chosen(sp, r, "C") == "c2");
    CHECK(chosen(sp, r, "B") == "b2");
    CHECK(chosen(sp, r, "U").empty());  // unreachable: not chosen, and not an error
  }
}

TEST_CASE("ILP cuts the cycle of a relaxation and proves the optimum", "[extract]") {
  auto sp = problem_from_text(test::kCycles);
  IlpOptions options;  // a poor warm start, A=la: 1 + 5 + 2
  options.warm_start.assign(sp.problem.num_classes(), kNoNode);
  for (NodeIndex n = 0; n < sp.problem.num_nodes(); ++n)
    if (sp.node_ids[n] == "r" || sp.node_ids[n] == "a2" || sp.node_ids[n] == "c2")
      options.warm_start[sp.problem.node_class(n)] = n;
  REQUIRE(dag_cost(sp.problem, options.warm_start) == 8);
  auto ilp = extract_ilp(sp.problem, options);
  check_valid(test::kCycles, sp, ilp);
  CHECK(ilp.dag_cost == 4);  // the relaxation's A=f(B), B=g(A) costs 3 and is cut
  CHECK(ilp.optimal);
  REQUIRE(ilp.bound.has_value());
  CHECK(*ilp.bound == Approx(4));
}

TEST_CASE("neighbourhood search improves a poor start to the optimum", "[extract]") {
  auto sp = problem_from_text(test::kCycles);
  const auto& p = sp.problem;
  Choice poor(p.num_classes(), kNoNode);  // A=la: 1 + 5 + 2
  for (NodeIndex n = 0; n < p.num_nodes(); ++n)
    if (sp.node_ids[n] == "r" || sp.node_ids[n] == "a2" || sp.node_ids[n] == "c2")
      poor[p.node_class(n)] = n;
  REQUIRE(dag_cost(p, poor) == 8);
  LnsOptions options;  // regions of two e-classes: only {A, B} together can improve
  options.seconds = 30;
  options.initial_size = 2;
  options.max_size = 2;
  options.max_rounds = 40;
  int improvements = 0;
  Choice better =
      improve_by_neighbourhoods(p, poor, options, [&](const Choice&) { ++improvements; });
  auto result = make_result(p, better);
  check_valid(test::kCycles, sp, result);
  CHECK(result.dag_cost == 4);  // A=f(B), B=lb, C=lc; the cycle A=f(B), B=g(A) is refused
  CHECK(improvements >= 1);
}

TEST_CASE("the reduction folds, drops dominated e-nodes, and maps choices both ways", "[extract]") {
  auto sp = problem_from_text(test::kReducible);
  const auto& p = sp.problem;
  ReducedProblem reduced = reduce_problem(p);
  CHECK(reduced.problem.num_classes() == 2);  // R and A
  CHECK(reduced.problem.num_nodes() == 2);    // r and a1
  REQUIRE(reduced.problem.roots().size() == 1);
  ClassIndex root = reduced.problem.roots()[0];
  NodeIndex r = reduced.problem.nodes(root)[0];
  REQUIRE(reduced.problem.children(r).size() == 1);  // S folded into A, repeats merged
  CHECK(reduced.problem.nodes(reduced.problem.children(r)[0]).size() == 1);

  Choice poor(p.num_classes(), kNoNode);  // A=a2, which also needs V: 1 + 4 + 2
  for (NodeIndex n = 0; n < p.num_nodes(); ++n)
    if (sp.node_ids[n] != "a1") poor[p.node_class(n)] = n;
  REQUIRE(dag_cost(p, poor) == 7);
  Choice back = reduced.expand(p, reduced.reduce(p, poor));
  REQUIRE(is_valid_choice(p, back));
  CHECK(dag_cost(p, back) == 4);

  IlpOptions options;
  options.warm_start = poor;
  auto ilp = extract_ilp(p, options);
  check_valid(test::kReducible, sp, ilp);
  CHECK(ilp.dag_cost == 4);
  CHECK(ilp.optimal);
}

TEST_CASE("ties go to the first e-node in file order", "[extract]") {
  auto sp = problem_from_text(test::kTie);
  CHECK(chosen(sp, extract_greedy(sp.problem), "T") == "t2");
  CHECK(chosen(sp, extract_dag(sp.problem), "T") == "t2");
  CHECK(extract_ilp(sp.problem).dag_cost == 1);
}

TEST_CASE("a root without a finite term is an error", "[extract]") {
  auto sp = problem_from_text(test::kNoFiniteTerm);
  CHECK_THROWS_AS(extract_greedy(sp.problem), Error);
  CHECK_THROWS_AS(extract_dag(sp.problem), Error);
  CHECK_THROWS_AS(extract_ilp(sp.problem), Error);
}

TEST_CASE("the problem rejects bad costs and indices", "[extract]") {
  ExtractionProblem p;
  ClassIndex a = p.add_class();
  std::vector<ClassIndex> none, bad{7};
  CHECK_THROWS_AS(p.add_node(a, std::numeric_limits<double>::infinity(), none), Error);
  CHECK_THROWS_AS(p.add_node(a, std::numeric_limits<double>::quiet_NaN(), none), Error);
  CHECK_THROWS_AS(p.add_node(a, 1, bad), Error);
  CHECK_THROWS_AS(p.add_root(3), Error);
  NodeIndex n = p.add_node(a, 2, none);
  p.add_root(a);
  CHECK(p.min_cost() == 0);
  Choice c{n};
  CHECK(is_valid_choice(p, c));
  CHECK(dag_cost(p, c) == 2);
  NodeIndex m = p.add_node(a, -1.5, none);  // negative costs are for the ILP (extract_verdicts)
  CHECK(p.min_cost() == -1.5);
  CHECK(dag_cost(p, Choice{m}) == -1.5);
  CHECK_FALSE(is_valid_choice(p, Choice{kNoNode}));
  CHECK_THROWS_AS(dag_cost(p, Choice{kNoNode}), Error);
}

TEST_CASE("a problem written as a serialized e-graph reads back as the same problem", "[extract]") {
  auto sp = problem_from_text(test::kSharedSubterm);
  ExtractionProblem p = sp.problem;
  // An e-node no term can use: its child e-class has no e-node. Dropped when written.
  ClassIndex empty = p.add_class();
  ClassIndex unused = p.add_class();
  std::vector<ClassIndex> kids{empty};
  p.add_node(unused, 1, kids);
  std::vector<std::string> ops(p.num_nodes(), "op");
  egraph::SerializedEGraph written = to_serialized(p, ops);
  CHECK(written.nodes.size() == sp.problem.num_nodes());
  SerializedProblem back = make_problem(
      egraph::parse_serialized_egraph(egraph::serialized_egraph_to_json(written), "back"));
  CHECK(back.problem.num_nodes() == sp.problem.num_nodes());
  CHECK(back.problem.roots().size() == sp.problem.roots().size());
  CHECK(extract_dag(back.problem).dag_cost == extract_dag(sp.problem).dag_cost);
  auto ilp = extract_ilp(back.problem);
  CHECK(ilp.optimal);
  CHECK(ilp.dag_cost == 12);
}

namespace {
// `stages` stages in a chain, each a separator S_i over S_{i-1}: S_i = h(A_i, B_i) (or one of
// `padding` costlier h_k), A_i = p(X_i) | a(S_{i-1}) at 1 | 7, B_i = q(X_i) | b(S_{i-1}) at 1 | 7,
// X_i = x(S_{i-1}, W) at 10 (or a costlier x_k) | neg(Y_i) at 0, Y_i = neg(X_i) at 0: each stage
// costs 12 at best (X shared by A and B) and 14 through the leaves, and holds a 2-cycle. W is
// a free weight that every stage reads. With `skip`, the last stage's A may read X_1 directly.
struct Stages {
  ExtractionProblem problem;
  std::vector<ClassIndex> separators;
  Choice leaves;  // every stage through a and b: 14 a stage
};
Stages stages(int stages, int padding, bool skip) {
  Stages s;
  ExtractionProblem& p = s.problem;
  std::vector<NodeIndex> leaf_nodes;
  ClassIndex w = p.add_class();
  leaf_nodes.push_back(p.add_node(w, 0, {}));
  ClassIndex input = p.add_class();
  leaf_nodes.push_back(p.add_node(input, 1, {}));
  ClassIndex previous = input, first_x = 0;
  for (int i = 0; i < stages; ++i) {
    ClassIndex x = p.add_class(), y = p.add_class(), a = p.add_class(), b = p.add_class(),
               sep = p.add_class();
    if (i == 0) first_x = x;
    std::vector<ClassIndex> x_children{previous, w};
    p.add_node(x, 10, x_children);
    for (int k = 0; k < padding; ++k) p.add_node(x, 11 + k, x_children);
    p.add_node(x, 0, std::vector<ClassIndex>{y});
    p.add_node(y, 0, std::vector<ClassIndex>{x});
    p.add_node(a, 1, std::vector<ClassIndex>{x});
    leaf_nodes.push_back(p.add_node(a, 7, std::vector<ClassIndex>{previous}));
    if (skip && i == stages - 1) p.add_node(a, 1, std::vector<ClassIndex>{first_x});
    p.add_node(b, 1, std::vector<ClassIndex>{x});
    leaf_nodes.push_back(p.add_node(b, 7, std::vector<ClassIndex>{previous}));
    std::vector<ClassIndex> sep_children{a, b};
    leaf_nodes.push_back(p.add_node(sep, 0, sep_children));
    for (int k = 0; k < padding; ++k) p.add_node(sep, 1 + k, sep_children);
    s.separators.push_back(sep);
    previous = sep;
  }
  p.add_root(previous);
  s.leaves.assign(p.num_classes(), kNoNode);
  for (NodeIndex n : leaf_nodes) s.leaves[p.node_class(n)] = n;
  return s;
}
}  // namespace

TEST_CASE("the exact extraction splits at separator e-classes and joins the parts' optima",
          "[extract]") {
  Stages s = stages(3, 30, false);
  auto parts = split_at_separators(s.problem, 64);
  REQUIRE(parts.size() == 4);  // a part per stage (with the one before it nested), and the root
  for (int i = 0; i < 3; ++i) CHECK(parts[i].separator == s.separators[i]);
  CHECK(parts[3].separator == kNoClass);
  CHECK(parts[1].nested == std::vector<std::pair<ClassIndex, size_t>>{{s.separators[0], 0}});
  // Smaller parts stay in their parent.
  CHECK(split_at_separators(s.problem, 1000).size() == 1);

  IlpOptions options;
  options.warm_start = s.leaves;
  REQUIRE(dag_cost(s.problem, options.warm_start) == 1 + 3 * 14);
  auto ilp = extract_ilp(s.problem, options);
  CHECK(is_valid_choice(s.problem, ilp.choice));
  CHECK(ilp.dag_cost == 1 + 3 * 12);
  CHECK(ilp.optimal);
  CHECK(*ilp.bound == Approx(1 + 3 * 12));

  // A node of the last stage that reads inside the first: no stage but the last separates.
  Stages skipping = stages(3, 30, true);
  parts = split_at_separators(skipping.problem, 64);
  REQUIRE(parts.size() == 2);
  CHECK(parts[0].separator == skipping.separators[2]);
  auto joined = extract_ilp(skipping.problem, {});
  CHECK(joined.dag_cost == 1 + 12 + 12 + 8);  // the last A reads X_1 at 1, its B is b at 7
  CHECK(joined.optimal);
}
