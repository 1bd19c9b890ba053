#pragma once
// Hand-made e-graphs, small enough to check by hand, for the extractor tests.
#include "egraph/serialized_egraph.h"
#include "extract/problem.h"

namespace eqfuse::test {

// Tree-greedy is wrong here: A and B each look cheapest as a leaf (7), but both can share X:
// A=p(X), B=q(X), X=10 costs 12 as a DAG against greedy's 14.
inline constexpr const char* kSharedSubterm = R"({"nodes": {
  "r":  {"op": "h", "children": ["a2", "b2"], "eclass": "R", "cost": 0},
  "a1": {"op": "p", "children": ["x"], "eclass": "A", "cost": 1},
  "a2": {"op": "la", "children": [], "eclass": "A", "cost": 7},
  "b1": {"op": "q", "children": ["x"], "eclass": "B", "cost": 1},
  "b2": {"op": "lb", "children": [], "eclass": "B", "cost": 7},
  "x":  {"op": "x", "children": [], "eclass": "X", "cost": 10}},
  "root_eclasses": ["R"]})";

// A zero-cost cycle A=f(B), B=g(A) beside a leaf for B (cost 1) and a leaf for A (cost 5); a
// self-loop C=id(C) beside C's leaf; an unreachable e-class U whose only term is cyclic.
inline constexpr const char* kCycles = R"({"nodes": {
  "a1": {"op": "f", "children": ["b1"], "eclass": "A", "cost": 0},
  "a2": {"op": "la", "children": [], "eclass": "A", "cost": 5},
  "b1": {"op": "g", "children": ["a1"], "eclass": "B", "cost": 0},
  "b2": {"op": "lb", "children": [], "eclass": "B", "cost": 1},
  "r":  {"op": "h", "children": ["a1", "c1"], "eclass": "R", "cost": 1},
  "c1": {"op": "id", "children": ["c1"], "eclass": "C", "cost": 0},
  "c2": {"op": "lc", "children": [], "eclass": "C", "cost": 2},
  "u":  {"op": "u", "children": ["u"], "eclass": "U", "cost": 0}},
  "root_eclasses": ["R"]})";

// Two e-nodes of equal cost: the first in file order wins, every time.
inline constexpr const char* kTie = R"({"nodes": {
  "t2": {"op": "second", "children": [], "eclass": "T", "cost": 1},
  "t1": {"op": "first", "children": [], "eclass": "T", "cost": 1}},
  "root_eclasses": ["T"]})";

// The only term of the root is cyclic.
inline constexpr const char* kNoFiniteTerm = R"({"nodes": {
  "a": {"op": "f", "children": ["a"], "eclass": "A", "cost": 1}},
  "root_eclasses": ["A"]})";

// For the ILP's reduction: S=split(A) and the weight W are single e-nodes of cost 0 (folded);
// a2 costs more than a1 and needs a superset of its children (dominated), which leaves V
// unreachable. The optimum is R(1) + A=a1(3).
inline constexpr const char* kReducible = R"({"nodes": {
  "r":  {"op": "h", "children": ["a1", "s"], "eclass": "R", "cost": 1},
  "s":  {"op": "split", "children": ["a1"], "eclass": "S", "cost": 0},
  "a1": {"op": "p", "children": ["w"], "eclass": "A", "cost": 3},
  "a2": {"op": "q", "children": ["w", "v"], "eclass": "A", "cost": 4},
  "w":  {"op": "weight", "children": [], "eclass": "W", "cost": 0},
  "v":  {"op": "v", "children": [], "eclass": "V", "cost": 2}},
  "root_eclasses": ["R"]})";

inline extract::SerializedProblem problem_from_text(const char* text) {
  return extract::make_problem(egraph::parse_serialized_egraph(text));
}

}  // namespace eqfuse::test
