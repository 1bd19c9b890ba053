#pragma once
// Proving many rules at once, as `eqfuse rules check` and library loading do: each rule on its
// own worker thread with its own Z3 context (Z3 contexts are not thread-safe), cached proofs
// reused. Results come back in the order of the rules given, whatever the schedule.
#include <vector>

#include "rules/prove/cache.h"
#include "rules/prove/prover.h"

namespace eqfuse::rules::prove {

// `cache` nullptr: prove everything afresh and store nothing. `jobs` 0: the hardware's threads.
std::vector<RuleProof> prove_rules(const std::vector<const Rule*>& rules,
                                   const ProveOptions& options, unsigned jobs,
                                   const ProofCache* cache);

}  // namespace eqfuse::rules::prove
