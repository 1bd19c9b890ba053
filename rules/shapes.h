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
//  - pairs: a bounded proof can hide a confusion of two things that happen to be equal in every
//    binding tried, so coverage is per pair, not per variable. For every two dims that the
//    conditions and shape inference do not force equal, some binding gives them two different
//    sizes > 1 (when none of the general bindings does, a targeted search moves one of them,
//    from the general binding or from a shrunk one with other dims at 1, up to 4x the element
//    cap); for every two attribute variables, every combination of their values when there are
//    at most `all_pairs` valid ones (all 36 of two rank-3 perms), else a deterministic covering
//    subset, and always a binding where they differ. A pair that can be separated only beyond
//    those bounds, or that the cap leaves uncovered, is listed in `BindingCoverage::unseparated`
//    (the prover then cannot call the rule proved);
//  - selection: every binding found is a candidate labelled with the features it covers (each
//    variable at each rank, each attribute value at each rank combination, the general binding
//    of each rank combination, each variable's dim at each position (from the right) being 1,
//    broadcast against a larger dim, and the pairs above); candidates are chosen greedily until
//    every feature is covered, up to `wanted` bindings (the cap is reported when it cuts
//    coverage short);
//  - the numeric witness gets its own bindings (`Enumeration::witness`): per rank combination, a
//    few general bindings with their sizes remapped at random (a fixed seed, never the rule's
//    name) to larger distinct sizes, every tensor up to `witness_numel` elements.
// Everything is deterministic, and independent of the rule's name: the same rule gives the same
// bindings under any name.
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "rules/rule.h"

namespace eqfuse::rules {

// Bump when the enumeration changes which bindings it picks: cached proofs name their bindings.
inline constexpr int kEnumerationVersion = 2;

struct ShapeChoice {
  int max_rank = 4;
  std::vector<int64_t> dims = {2, 3, 4};  // sizes > 1 given to dims (1 is always tried)
  size_t wanted = 128;                    // bindings to return at most (the cap)
  size_t max_tries = 40000;               // validity checks per rule at most
  size_t max_rank_combos = 25;            // full product of free ranks up to this many
  size_t max_numel = 48;  // generalization gives new sizes only while tensors stay this small
  size_t all_pairs = 64;  // every value pair of two attribute variables up to this many
  size_t separation_tries = 20000;  // validity checks for separating pairs of dims at most
  size_t witness_per_combo = 3;     // witness bindings per rank combination
  size_t witness_numel = 4096;      // their tensors' element cap
  uint64_t seed = 1;                // random fallback seeds and the witness's sizes
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
  size_t checks = 0;       // validity checks spent
  bool exhausted = false;  // max_tries ran out before the enumeration finished
  size_t dim_pairs = 0;    // pairs of dims separated (different sizes > 1) by some binding
  size_t attr_pairs = 0;   // attribute value pairs (and differing pairs) covered
  // Pairs a proof at these bindings does not separate although the rule allows it: e.g.
  // "?w10 dim 0 and ?w11 dim 0 at ranks (4,4,4,4)" (only beyond the element cap), or
  // "?p and ?q at (3): values (1 2 0) and (1 0 2) not tried together" (the cap).
  std::vector<std::string> unseparated;
  std::string str() const;  // "ranks ?a 0-4, ?b 0-4; dims 1,2,3,4; ?p 34 values; 40 bindings ..."
};

struct Enumeration {
  std::vector<RuleBinding> bindings;
  BindingCoverage coverage;
  std::vector<RuleBinding> witness;  // for the numeric witness, beside `bindings`
};

// The systematic enumeration described above.
Enumeration enumerate_bindings(const Rule& rule, const ShapeChoice& choice = {});

// The first `choice.wanted` bindings of enumerate_bindings (the most covering first).
std::vector<RuleBinding> representative_bindings(const Rule& rule, const ShapeChoice& choice = {});

}  // namespace eqfuse::rules
