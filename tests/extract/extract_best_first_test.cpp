// Best-first exact extraction (extract/best_first.h): against brute force on random problems,
// acyclic and cyclic, on the sharing that defeats the LP relaxation, and its stops and refusals.
#include <catch2/catch.hpp>
#include <chrono>
#include <optional>
#include <random>

#include "extract/best_first.h"
#include "extract/ilp.h"

using namespace eqfuse::extract;

namespace {

// The least DAG cost over every choice of one e-node per e-class (nullopt: none is valid).
std::optional<double> brute_force(const ExtractionProblem& p) {
  Choice choice(p.num_classes());
  std::vector<size_t> digit(p.num_classes(), 0);
  std::optional<double> best;
  for (;;) {
    for (ClassIndex c = 0; c < p.num_classes(); ++c) choice[c] = p.nodes(c)[digit[c]];
    if (is_valid_choice(p, choice)) {
      const double cost = dag_cost(p, choice);
      if (!best || cost < *best) best = cost;
    }
    ClassIndex c = 0;
    while (c < p.num_classes() && ++digit[c] == p.nodes(c).size()) digit[c++] = 0;
    if (c == p.num_classes()) return best;
  }
}

// Acyclic: e-class c's e-nodes have children among the e-classes after it. Cyclic: children
// anywhere, the e-node's own e-class included (no choice can use such an e-node).
ExtractionProblem random_problem(std::mt19937& rng, bool cyclic) {
  ExtractionProblem p;
  const ClassIndex num_classes = 3 + rng() % 7;
  for (ClassIndex c = 0; c < num_classes; ++c) p.add_class();
  for (ClassIndex c = 0; c < num_classes; ++c)
    for (int i = 1 + static_cast<int>(rng() % 3); i > 0; --i) {
      std::vector<ClassIndex> kids;
      const ClassIndex later = num_classes - 1 - c;
      if (cyclic)
        for (uint32_t j = rng() % 3; j > 0; --j) kids.push_back(rng() % num_classes);
      else if (later > 0)
        for (uint32_t j = rng() % 3; j > 0; --j) kids.push_back(c + 1 + rng() % later);
      p.add_node(c, static_cast<double>(rng() % 5), kids);
    }
  p.add_root(0);
  if (num_classes > 4) p.add_root(1);
  return p;
}

}  // namespace

TEST_CASE("best-first search finds the brute-force optimum of random problems, cyclic or not",
          "[extract]") {
  std::mt19937 rng(11);
  int cyclic_solved = 0;
  for (int trial = 0; trial < 1200; ++trial) {
    const bool cyclic = trial % 2 == 1;
    const ExtractionProblem p = random_problem(rng, cyclic);
    const std::optional<double> brute = brute_force(p);
    if (!brute) continue;  // no valid choice (a root only on cycles)
    const double optimum = *brute;
    cyclic_solved += cyclic;
    INFO("trial " << trial << (cyclic ? ", cyclic" : "") << ", optimum " << optimum);
    // From a poor incumbent it must find a cheaper choice, valid and optimal.
    auto found = best_first_search(p, optimum + 10);
    REQUIRE(found);
    CHECK(found->complete);
    CHECK(found->bound == Approx(optimum));
    REQUIRE(is_valid_choice(p, found->choice));
    CHECK(dag_cost(p, found->choice) == Approx(optimum));
    // From an optimal incumbent it proves it: nothing cheaper, bound at the incumbent.
    auto proof = best_first_search(p, optimum);
    REQUIRE(proof);
    CHECK(proof->complete);
    CHECK(proof->choice.empty());
    CHECK(proof->bound == Approx(optimum));
    // An incumbent below the optimum (a wrong claim) is never "improved" and never undercut.
    auto below = best_first_search(p, optimum - 0.5);
    REQUIRE(below);
    CHECK(below->choice.empty());
  }
  CHECK(cyclic_solved > 300);
}

TEST_CASE("best-first search proves an optimum that sharing hides from the LP relaxation",
          "[extract]") {
  // The root needs two of a, b, c (each of cost 3) through one of three e-nodes: the LP takes
  // each at 1/3 and pays each child a third, 1 + 3 = 4 in all, while every choice costs 1 + 6.
  ExtractionProblem p;
  const ClassIndex root = p.add_class(), a = p.add_class(), b = p.add_class(), c = p.add_class();
  p.add_node(root, 1, std::vector<ClassIndex>{a, b});
  p.add_node(root, 1, std::vector<ClassIndex>{b, c});
  p.add_node(root, 1, std::vector<ClassIndex>{a, c});
  for (ClassIndex k : {a, b, c}) p.add_node(k, 3, std::vector<ClassIndex>{});
  p.add_root(root);
  auto proof = best_first_search(p, 7);
  REQUIRE(proof);
  CHECK(proof->complete);
  CHECK(proof->bound == 7);
  IlpOptions options;
  options.time_limit_seconds = 5;
  const ExtractionResult r = extract_ilp(p, options);
  CHECK(r.optimal);
  CHECK(r.dag_cost == 7);
}

TEST_CASE(
    "best-first search refuses the cycle x = f(g(x)) and negative costs, and stops at its "
    "limits",
    "[extract]") {
  // y = g(x) with x = f(y) is a cycle: x must take its leaf, though f costs less.
  ExtractionProblem cyclic;
  const ClassIndex x = cyclic.add_class(), y = cyclic.add_class();
  cyclic.add_node(x, 5, std::vector<ClassIndex>{});
  cyclic.add_node(x, 1, std::vector<ClassIndex>{y});
  cyclic.add_node(y, 1, std::vector<ClassIndex>{x});
  cyclic.add_root(y);
  auto searched = best_first_search(cyclic, 100);
  REQUIRE(searched);
  CHECK(searched->complete);
  CHECK(searched->bound == 6);
  REQUIRE(is_valid_choice(cyclic, searched->choice));
  CHECK(dag_cost(cyclic, searched->choice) == 6);

  ExtractionProblem negative;
  const ClassIndex n = negative.add_class();
  negative.add_node(n, -1, std::vector<ClassIndex>{});
  negative.add_root(n);
  CHECK_FALSE(best_first_search(negative, -1));

  // A chain of e-classes with two e-nodes each, the costly one first: stopped at once (past
  // deadline, or no room for states), the search reports a bound no higher than the optimum.
  ExtractionProblem chain;
  std::vector<ClassIndex> classes;
  for (int i = 0; i < 400; ++i) classes.push_back(chain.add_class());
  for (int i = 0; i < 400; ++i) {
    std::vector<ClassIndex> next;
    if (i + 1 < 400) next.push_back(classes[i + 1]);
    chain.add_node(classes[i], 2, next);
    chain.add_node(classes[i], 1, next);
  }
  chain.add_root(classes[0]);
  BestFirstOptions past;
  past.deadline = std::chrono::steady_clock::now();
  auto stopped = best_first_search(chain, 800, past);
  REQUIRE(stopped);
  CHECK_FALSE(stopped->complete);
  CHECK(stopped->bound <= 400);
  // Room for the closures (400 bit sets of 7 words) and a few states, not for 800 of them.
  BestFirstOptions small;
  small.max_bytes = 400 * 7 * 8 * 2 + 8192;
  auto full = best_first_search(chain, 800, small);
  REQUIRE(full);
  CHECK_FALSE(full->complete);
  CHECK(full->bound <= 400);
  CHECK(full->states < 800);
  small.max_bytes = 400 * 7 * 8;  // not even room for the closures: the search does not apply
  CHECK_FALSE(best_first_search(chain, 800, small));
  auto done = best_first_search(chain, 800);
  REQUIRE(done);
  CHECK(done->complete);
  CHECK(done->bound == 400);
}
