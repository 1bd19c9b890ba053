#include "rules/prove/batch.h"

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

namespace eqfuse::rules::prove {

std::vector<RuleProof> prove_rules(const std::vector<const Rule*>& rules,
                                   const ProveOptions& options, unsigned jobs,
                                   const ProofCache* cache, const ProofProgress& progress) {
  std::vector<RuleProof> results(rules.size());
  std::atomic<size_t> next{0};
  std::mutex progress_mutex;
  size_t done = 0;
  auto finished = [&](size_t i) {
    if (!progress) return;
    std::lock_guard<std::mutex> lock(progress_mutex);
    progress(++done, rules.size(), results[i]);
  };
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(options.file_seconds));
  auto work = [&] {
    for (size_t i = next++; i < rules.size(); i = next++) {
      const Rule& rule = *rules[i];
      if (cache) {
        if (auto hit = cache->load(rule, options)) {
          results[i] = std::move(*hit);
          finished(i);
          continue;
        }
      }
      if (Clock::now() >= deadline) {  // the rest of the files still get a verdict each
        results[i].name = rule.name;
        results[i].verdict = Verdict::Unknown;
        results[i].timed_out = true;
        results[i].reason =
            fmt::format("time limit: the limit of {} s for all rules was reached before this one",
                        options.file_seconds);
        finished(i);
        continue;
      }
      results[i] = prove_rule(rule, options, deadline);
      if (cache) cache->store(rule, options, results[i]);
      finished(i);
    }
  };
  if (jobs == 0) jobs = std::max(1u, std::thread::hardware_concurrency());
  jobs = std::min<unsigned>(jobs, static_cast<unsigned>(std::max<size_t>(rules.size(), 1)));
  std::vector<std::thread> threads;
  for (unsigned t = 1; t < jobs; ++t) threads.emplace_back(work);
  work();
  for (std::thread& t : threads) t.join();
  return results;
}

}  // namespace eqfuse::rules::prove
