#pragma once
// The proof cache: a rule's verdict, bounds and counterexample, stored under a key made of the
// rule's normalized text (Rule::text, so renaming variables' spelling or reordering attributes
// does not miss), the encodings' version (rules/prove/encode.h) and the proof options. Loading
// the library is then fast after the first run. It lives under $XDG_CACHE_HOME/eqfuse/proofs
// (default ~/.cache/eqfuse/proofs), never in the source tree. Every verdict but unknown is
// stored and reloaded as it is (proved, refuted, invalid, unseparated): unknown may become
// proved with a newer encoding or a larger limit.
#include <filesystem>
#include <optional>
#include <string>

#include "rules/prove/prover.h"

namespace eqfuse::rules::prove {

// Bump when what a stored proof means changes: no older proof is reused.
inline constexpr int kCacheVersion = 2;

class ProofCache {
 public:
  // `dir` empty: the default location above.
  explicit ProofCache(std::filesystem::path dir = {});
  static std::filesystem::path default_dir();
  const std::filesystem::path& dir() const { return dir_; }

  static std::string key(const Rule& rule, const ProveOptions& options);
  // The cached proof (from_cache set, name from the rule), or nullopt.
  std::optional<RuleProof> load(const Rule& rule, const ProveOptions& options) const;
  // Best effort: an unwritable cache only costs time.
  void store(const Rule& rule, const ProveOptions& options, const RuleProof& proof) const;

 private:
  std::filesystem::path dir_;
};

}  // namespace eqfuse::rules::prove
