#pragma once
// The runner: equality saturation as a loop of search (read-only, parallel), apply (add
// right-hand sides, merge) and rebuild, until the e-graph stops changing or a limit is hit.
// It follows egg's Runner: the same iteration structure, the same `simple` and `backoff`
// schedulers, the same stop reasons, so results can be compared with egg's figure for figure.
// Unlike egg it checks the node, time and memory limits *inside* the apply phase (and the time
// limit inside search), so a node limit of N ends with at most N plus one right-hand side of
// e-nodes, and a time limit is honoured within one rebuild.
#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "egraph/rewrite.h"

namespace eqfuse::egraph {

enum class StopReason { Saturated, IterationLimit, NodeLimit, TimeLimit, MemoryLimit, Hook };
// "saturated", "iteration_limit", "node_limit", "time_limit", "memory_limit", "hook".
const char* stop_reason_name(StopReason reason);

struct RunnerLimits {
  size_t iterations = 30;
  size_t nodes = std::numeric_limits<size_t>::max();
  double seconds = std::numeric_limits<double>::infinity();
  // Bytes of the e-graph's arrays plus the matches held (EGraph::memory_bytes), not the RSS.
  size_t memory_bytes = std::numeric_limits<size_t>::max();
};

// Decides, per iteration and rule, how many matches to search for and whether to keep them.
class Scheduler {
 public:
  virtual ~Scheduler() = default;
  virtual void start(size_t num_rules) { (void)num_rules; }
  // Most matches worth finding for this rule now; 0 skips the rule (banned).
  virtual size_t search_limit(size_t iteration, size_t rule) = 0;
  // Told how many matches were found (capped at search_limit); false drops them all.
  virtual bool accept(size_t iteration, size_t rule, size_t matches) = 0;
  // The e-graph did not change this iteration: may the run stop as saturated?
  virtual bool can_stop(size_t iteration) = 0;
};

// Applies every match found at the start of the iteration.
class SimpleScheduler : public Scheduler {
 public:
  size_t search_limit(size_t, size_t) override { return std::numeric_limits<size_t>::max(); }
  bool accept(size_t, size_t, size_t) override { return true; }
  bool can_stop(size_t) override { return true; }
};

// egg's BackoffScheduler: a rule that finds more than match_limit << times_banned matches is
// banned for ban_length << times_banned iterations (its matches dropped); when the e-graph
// stops changing while rules are banned, bans are shortened instead of stopping.
class BackoffScheduler : public Scheduler {
 public:
  explicit BackoffScheduler(size_t match_limit = 1000, size_t ban_length = 5)
      : match_limit_(match_limit), ban_length_(ban_length) {}
  void start(size_t num_rules) override { stats_.assign(num_rules, {}); }
  size_t search_limit(size_t iteration, size_t rule) override;
  bool accept(size_t iteration, size_t rule, size_t matches) override;
  bool can_stop(size_t iteration) override;
  size_t times_banned(size_t rule) const { return stats_[rule].times_banned; }

 private:
  struct RuleState {
    size_t times_banned = 0;
    size_t banned_until = 0;
  };
  size_t match_limit_, ban_length_;
  std::vector<RuleState> stats_;
};

struct RuleStats {
  std::string name;
  size_t matches = 0;       // found and kept by the scheduler
  size_t applications = 0;  // matches whose conditions held and that were applied (once per
                            // run for an idempotent rule)
  size_t times_banned = 0;
  double search_seconds = 0, apply_seconds = 0;
};

struct IterationStats {
  size_t nodes = 0, classes = 0;  // after the iteration's rebuild
  size_t matches = 0, applications = 0, rebuild_merges = 0;
  double search_seconds = 0, apply_seconds = 0, rebuild_seconds = 0;
};

struct RunReport {
  StopReason stop_reason = StopReason::Saturated;
  size_t iterations = 0;
  size_t nodes = 0, classes = 0;
  double seconds = 0;  // the whole run
  double search_seconds = 0, apply_seconds = 0, rebuild_seconds = 0;
  std::vector<RuleStats> rules;
  std::vector<IterationStats> per_iteration;
};

struct RunnerOptions {
  RunnerLimits limits;
  int threads = 1;  // search threads (TBB); results do not depend on it
  std::shared_ptr<Scheduler> scheduler = std::make_shared<SimpleScheduler>();
  // Called before each iteration (after the previous rebuild); returning false stops the run
  // with StopReason::Hook.
  std::vector<std::function<bool(EGraph&, const RunReport&)>> hooks;
};

// Saturates `egraph` with `rules`. Rebuilds first if the e-graph is dirty; leaves it clean.
RunReport run(EGraph& egraph, const std::vector<Rewrite>& rules, const RunnerOptions& options = {});

}  // namespace eqfuse::egraph
