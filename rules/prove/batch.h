#pragma once
// Proving many rules at once, as `eqfuse rules check` and library loading do: each rule on its
// own worker thread with its own Z3 context (Z3 contexts are not thread-safe), cached proofs
// reused. Results come back in the order of the rules given, whatever the schedule.
#include <functional>
#include <vector>

#include "rules/prove/cache.h"
#include "rules/prove/prover.h"

namespace eqfuse::rules::prove {

// Called once per rule as its verdict is known, one call at a time (from any worker thread):
// how many rules are done so far, of how many, and the proof just finished.
using ProofProgress = std::function<void(size_t done, size_t total, const RuleProof& proof)>;

// `cache` nullptr: prove everything afresh and store nothing. `jobs` 0: the hardware's threads.
std::vector<RuleProof> prove_rules(const std::vector<const Rule*>& rules,
                                   const ProveOptions& options, unsigned jobs,
                                   const ProofCache* cache, const ProofProgress& progress = {});

}  // namespace eqfuse::rules::prove
