#pragma once
// The soundness prover: proves with Z3 that a rule's two sides are equal, element by element,
// at a set of small concrete shapes, or exhibits a counterexample.
//
// What a proof covers, stated plainly: the rule's sides are equal as functions over the REAL
// numbers, for every input value, at each binding tried (the shapes, ranks, size-1 dims and
// attribute values listed in `RuleProof::bounds` and summed up in `RuleProof::coverage`,
// enumerated systematically by rules/shapes.h within the conditions: every allowed rank up to
// 4, every attribute value, size-1 and broadcast dims). It does not cover shapes outside those
// bounds (the bindings are bounded, not an induction over all sizes), floating-point effects
// (reassociating a sum or a product, as most rules do, changes float results slightly: tests
// check those numerically), or division by zero: x/y is x * recip(y) with recip(0) an arbitrary
// real, so a rule that needs y != 0 (x*y/y -> x) is refuted at y = 0 unless a condition
// (`(nonzero ?y)` on a constant) excludes it. NaN and infinities do not exist over the reals.
//
// How (the traps of Z3 4.8.12 it avoids): one query per output element (a disjunction over all
// elements returns unknown even at 2x2); the difference of the two sides is simplified to a
// polynomial normal form first, and most rules end there; each query is bounded by a resource
// limit (rlimit: deterministic) and by a wall-clock limit that a watchdog enforces on the
// simplifier and the solver alike (rules/prove/watchdog.h; Z3's own timeout overruns); every
// counterexample is replayed in float64 with the interpreter, and one that does not replay is
// `unknown`, not `refuted`.
// A binding where the two sides get different types, or where the right side fails shape
// inference although the left side and the conditions hold, refutes the rule too (the
// counterexample is that binding); a right side that type-checks at no binding is `invalid`.
// A numeric check (float64 interpreter, at the proof's bindings and at the enumeration's
// witness bindings with larger distinct sizes, compared at 1e-9 relative) runs beside each
// proof: if it finds a difference the rule is refuted by it; if it disagrees with a proof, the
// verdict is unknown (an encoding bug must not pass silently).
// A proof whose bindings leave a pair of dims or attribute values unseparated (rules/shapes.h)
// is `unseparated`, not `proved`: the rule may confuse exactly that pair.
#include <z3++.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "rules/rule.h"
#include "rules/shapes.h"

namespace eqfuse::rules::prove {

// Only Proved is proved: Unseparated (proved at bounds that do not separate some pair) counts as
// unproved wherever a proof is required.
enum class Verdict { Proved, Refuted, Unknown, Invalid, Unseparated };
// "proved", "refuted", "unknown", "invalid", "unseparated"
std::string_view verdict_name(Verdict v);
std::optional<Verdict> parse_verdict(std::string_view name);

struct Counterexample {
  std::string text;     // readable: shapes, input values, the two outputs
  nlohmann::json json;  // {binding, inputs: {name: {shape, values}}, output, element, lhs, rhs}
};

struct ProveOptions {
  unsigned rlimit = 4000000;   // Z3 resource limit per element query
  unsigned timeout_ms = 5000;  // wall-clock limit per query (simplifier and solver), enforced
  double rule_seconds = 60;    // wall-clock limit per rule: then `unknown: time limit`
  double file_seconds = 1800;  // for all rules of one prove_rules call (rules/prove/batch.h)
  ShapeChoice shapes = {};     // the systematic enumeration's bounds (rules/shapes.h)
  int witness_trials = 2;      // random inputs per witness binding
  double witness_rtol = 1e-9;  // |l - r| <= rtol * (1 + max(|l|, |r|)) in float64
};

struct GraphProof {
  Verdict verdict = Verdict::Proved;
  std::string reason;  // for unknown/invalid/refuted
  std::optional<Counterexample> counterexample;
  int queries = 0;         // element queries that needed the solver
  bool timed_out = false;  // a wall-clock limit ended it (the context is then spent)
};

class Watchdog;

// Proves that output k equals output k + num_lhs of `graph`, element by element, for all
// values of the graph's inputs (weights are fixed numbers). Inputs named in `nonzero` are
// assumed nonzero element-wise.
// `proved`, when given, holds the structures (up to renaming of inputs) of element queries
// already proved in `ctx`: they are skipped, and the ones proved here are added.
// `watchdog` (on `ctx`), when given, holds each query to options.timeout_ms and to `deadline`;
// after it fires (GraphProof::timed_out) `ctx` is canceled for good and must be replaced.
GraphProof prove_graph(
    const ir::Graph& graph, size_t num_lhs, z3::context& ctx, const ProveOptions& options = {},
    const std::vector<std::string>& nonzero = {}, std::set<std::string>* proved = nullptr,
    Watchdog* watchdog = nullptr,
    std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max());

struct RuleProof {
  std::string name;
  Verdict verdict = Verdict::Unknown;
  double seconds = 0;
  std::string reason;
  std::vector<std::string> bounds;  // the bindings proved at (binding_string)
  // What those bindings cover (BindingCoverage of rules/shapes.h): {ranks: {var: [r...]},
  // dim_sizes: [...], attrs: {var: [value...]}, bindings, candidates, features, uncovered, cap,
  // exhausted}; and the same in one line of text.
  nlohmann::json coverage;
  std::string coverage_text;
  std::optional<Counterexample> counterexample;
  bool from_cache = false;
  bool timed_out = false;  // `unknown` because a wall-clock limit was reached (never cached)
};

// Proves one rule at the bindings of rules/shapes.h, enumerated within `options.shapes`, within
// options.rule_seconds and `deadline` (the file's limit), whichever comes first.
RuleProof prove_rule(
    const Rule& rule, const ProveOptions& options = {},
    std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max());

// The coverage of an enumeration as RuleProof::coverage holds it.
nlohmann::json coverage_json(const BindingCoverage& coverage);

// A proof as `eqfuse rules check --json` and the Python bindings report it: name, verdict,
// seconds, cached, bounds, coverage, reason and counterexample where there are.
nlohmann::json proof_json(const RuleProof& proof);

}  // namespace eqfuse::rules::prove
