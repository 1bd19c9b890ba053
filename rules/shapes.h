#pragma once
// The bindings a rule is tried at: concrete types for its class variables (and values for its
// attribute variables and constant leaves) under which the left-hand side type-checks and the
// conditions hold. The checker instantiates the right-hand side at them to reject rules whose
// right side fails shape inference, and the prover proves the rule at them. Kept apart from
// both so that one function decides which shapes a rule is tried at.
//
// The enumeration is systematic, not sampled (a bounded proof is only as good as the shapes it
// covers, and a seeded sample can miss the one shape where a rule is wrong):
//  - ranks: every rank in [0, max_rank] the conditions allow for each variable (variables tied
//    by `(same-shape ?a ?b)` share one shape; `(rank ?v N)` fixes one). All combinations of the
//    free ranks when there are at most `max_rank_combos`; beyond that, every variable at every
//    rank against the others at every common rank (all equal, and one variable lower: numpy
//    rank broadcasting);
//  - attribute variables: every value of their domain at every rank combination: integers in
//    [-max_rank, max_rank] (every axis, negative forms included), every permutation of every
//    rank in the combination and every single axis for integer lists, {-1, 0, 0.5, 2} for
//    floats; values the left side or the conditions reject are dropped;
//  - dims: for each rank combination and attribute value, a "general" binding where every dim
//    the rule does not force to be equal to another (or to 1) gets its own size > 1 (sizes from
//    `dims`, unused ones first, so transposition and reshape bugs show, while every tensor stays
//    within `max_numel` elements), found by starting from
//    a valid seed and giving each dim (then each pair and triple of dims) a new size while the
//    rule still type-checks; then its size-1 variants: each dim alone set to 1 (broadcasting
//    against a larger dim), each class of equal dims set to 1, each variable all ones;
//  - selection: every binding found is a candidate labelled with the features it covers (each
//    variable at each rank, each attribute value at each rank combination, the general binding
//    of each rank combination, each variable's dim at each position (from the right) being 1,
//    and broadcast against a larger dim); candidates are chosen greedily until every feature is
//    covered, up to `wanted` bindings (the cap is reported when it cuts coverage short).
// Everything is deterministic: the same rule gives the same bindings.
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "rules/rule.h"

namespace eqfuse::rules {

// Bump when the enumeration changes which bindings it picks: cached proofs name their bindings.
inline constexpr int kEnumerationVersion = 1;

struct ShapeChoice {
  int max_rank = 4;
  std::vector<int64_t> dims = {2, 3, 4};  // sizes > 1 given to dims (1 is always tried)
  size_t wanted = 128;                    // bindings to return at most (the cap)
  size_t max_tries = 40000;               // validity checks per rule at most
  size_t max_rank_combos = 25;            // full product of free ranks up to this many
  size_t max_numel = 48;  // generalization gives new sizes only while tensors stay this small
  uint64_t seed = 1;      // only for the random fallback seeds
};

// What an enumeration covered: the bounds a proof at these bindings states.
struct BindingCoverage {
  std::map<std::string, std::set<int64_t>> ranks;      // class variable -> ranks tried
  std::set<int64_t> dim_sizes;                         // every dim size used
  std::map<std::string, std::set<std::string>> attrs;  // attribute variable -> values tried
  size_t bindings = 0;                                 // chosen
  size_t candidates = 0;                               // distinct valid bindings found
  size_t features = 0;                                 // coverage features found
  size_t uncovered = 0;                                // features the cap left uncovered
  size_t cap = 0;
  size_t checks = 0;        // validity checks spent
  bool exhausted = false;   // max_tries ran out before the enumeration finished
  std::string str() const;  // "ranks ?a 0-4, ?b 0-4; dims 1,2,3,4; ?p 34 values; 40 bindings ..."
};

struct Enumeration {
  std::vector<RuleBinding> bindings;
  BindingCoverage coverage;
};

// The systematic enumeration described above.
Enumeration enumerate_bindings(const Rule& rule, const ShapeChoice& choice = {});

// The first `choice.wanted` bindings of enumerate_bindings (the most covering first).
std::vector<RuleBinding> representative_bindings(const Rule& rule, const ShapeChoice& choice = {});

// Random bindings within the conditions (fixed seed), for the numeric witness, which is meant to
// look beyond the systematic bounds: `choice.dims` are the sizes drawn (1 included if listed).
std::vector<RuleBinding> sampled_bindings(const Rule& rule, const ShapeChoice& choice);

}  // namespace eqfuse::rules
