#include "rules/prove/cache.h"

#include <fmt/format.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "rules/prove/encode.h"
#include "rules/shapes.h"

namespace eqfuse::rules::prove {

namespace fs = std::filesystem;

namespace {

uint64_t fnv1a(const std::string& s, uint64_t h) {
  for (unsigned char ch : s) {
    h ^= ch;
    h *= 1099511628211ULL;
  }
  return h;
}

}  // namespace

ProofCache::ProofCache(fs::path dir) : dir_(dir.empty() ? default_dir() : std::move(dir)) {}

fs::path ProofCache::default_dir() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  fs::path base;
  if (xdg && *xdg) {
    base = xdg;
  } else {
    const char* home = std::getenv("HOME");
    base = fs::path(home && *home ? home : "/tmp") / ".cache";
  }
  return base / "eqfuse" / "proofs";
}

std::string ProofCache::key(const Rule& rule, const ProveOptions& o) {
  std::string text = fmt::format("c{}|v{}|{}|{}|{}|{}|", kCacheVersion, kEncodingVersion, rule.text,
                                 o.rlimit, o.shapes.max_rank, o.witness_rtol);
  for (int64_t d : o.shapes.dims) text += fmt::format("{},", d);
  text += fmt::format("|{}|{}|{}|{}|{}|{}|{}|{}|{}|e{}", o.shapes.wanted, o.shapes.max_tries,
                      o.shapes.max_rank_combos * 1000 + o.shapes.max_numel, o.shapes.seed,
                      o.shapes.all_pairs, o.shapes.separation_tries, o.shapes.witness_per_combo,
                      o.shapes.witness_numel, o.witness_trials, kEnumerationVersion);
  return fmt::format("{:016x}{:016x}", fnv1a(text, 14695981039346656037ULL),
                     fnv1a(text, 0x84222325cbf29ce4ULL));
}

std::optional<RuleProof> ProofCache::load(const Rule& rule, const ProveOptions& options) const {
  std::ifstream in(dir_ / (key(rule, options) + ".json"));
  if (!in) return std::nullopt;
  try {
    nlohmann::json j = nlohmann::json::parse(in);
    if (j.at("text").get<std::string>() != rule.text) return std::nullopt;  // a hash collision
    RuleProof p;
    p.name = rule.name;
    auto v = parse_verdict(j.at("verdict").get<std::string>());
    if (!v) return std::nullopt;  // written by another version: prove again
    p.verdict = *v;
    p.seconds = j.at("seconds").get<double>();
    p.reason = j.value("reason", "");
    p.bounds = j.at("bounds").get<std::vector<std::string>>();
    p.coverage = j.value("coverage", nlohmann::json());
    p.coverage_text = j.value("coverage_text", "");
    if (j.contains("counterexample"))
      p.counterexample = Counterexample{j["counterexample"].at("text").get<std::string>(),
                                        j["counterexample"].at("json")};
    p.from_cache = true;
    return p;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

void ProofCache::store(const Rule& rule, const ProveOptions& options,
                       const RuleProof& proof) const {
  // Unknown may become proved with more time or a newer encoding: never stored.
  if (proof.verdict == Verdict::Unknown || proof.timed_out) return;
  nlohmann::json j;
  j["text"] = rule.text;
  j["verdict"] = verdict_name(proof.verdict);
  j["seconds"] = proof.seconds;
  j["reason"] = proof.reason;
  j["bounds"] = proof.bounds;
  j["coverage"] = proof.coverage;
  j["coverage_text"] = proof.coverage_text;
  if (proof.counterexample)
    j["counterexample"] = {{"text", proof.counterexample->text},
                           {"json", proof.counterexample->json}};
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) return;
  fs::path final_path = dir_ / (key(rule, options) + ".json");
  // Written aside and renamed, so that a concurrent reader never sees half a file.
  fs::path tmp = final_path;
  tmp += fmt::format(".tmp{}", reinterpret_cast<uintptr_t>(&proof));
  {
    std::ofstream out(tmp);
    if (!out) return;
    out << j.dump();
  }
  fs::rename(tmp, final_path, ec);
}

}  // namespace eqfuse::rules::prove
