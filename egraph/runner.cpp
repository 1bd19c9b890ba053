#include "egraph/runner.h"

#include <string>
#include <unordered_set>

namespace eqfuse::egraph {

const char* stop_reason_name(StopReason reason) {
  switch (reason) {
    case StopReason::Saturated:
      return "saturated";
    case StopReason::IterationLimit:
      return "iteration_limit";
    case StopReason::NodeLimit:
      return "node_limit";
    case StopReason::TimeLimit:
      return "time_limit";
    case StopReason::MemoryLimit:
      return "memory_limit";
    case StopReason::Hook:
      return "hook";
  }
  return "unknown";
}

size_t BackoffScheduler::search_limit(size_t iteration, size_t rule) {
  const RuleState& s = stats_[rule];
  if (iteration < s.banned_until) return 0;
  size_t threshold = match_limit_ << s.times_banned;
  return threshold + 1;  // one more than allowed tells "too many" apart
}

bool BackoffScheduler::accept(size_t iteration, size_t rule, size_t matches) {
  RuleState& s = stats_[rule];
  size_t threshold = match_limit_ << s.times_banned;
  if (matches > threshold) {
    size_t ban = ban_length_ << s.times_banned;
    ++s.times_banned;
    s.banned_until = iteration + ban;
    return false;
  }
  return true;
}

bool BackoffScheduler::can_stop(size_t iteration) {
  size_t min_ban = std::numeric_limits<size_t>::max();
  for (const RuleState& s : stats_)
    if (s.banned_until > iteration) min_ban = std::min(min_ban, s.banned_until - iteration);
  if (min_ban == std::numeric_limits<size_t>::max()) return true;
  for (RuleState& s : stats_)
    if (s.banned_until > iteration) s.banned_until -= min_ban;
  return false;
}

namespace {
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}
}  // namespace

RunReport run(EGraph& egraph, const std::vector<Rewrite>& rules, const RunnerOptions& options) {
  const RunnerLimits& limits = options.limits;
  Scheduler& scheduler = *options.scheduler;
  scheduler.start(rules.size());
  RunReport report;
  std::vector<Symbol> rule_origins;
  for (const Rewrite& rw : rules) {
    report.rules.push_back({rw.name});
    rule_origins.push_back(intern(rw.name));
  }
  const Clock::time_point start = Clock::now();
  const bool timed = limits.seconds != std::numeric_limits<double>::infinity();
  const Clock::time_point deadline =
      timed ? start + std::chrono::duration_cast<Clock::duration>(
                          std::chrono::duration<double>(limits.seconds))
            : Clock::time_point::max();
  if (!egraph.clean()) {
    Clock::time_point t = Clock::now();
    egraph.rebuild();
    report.rebuild_seconds += since(t);
  }

  std::optional<StopReason> stop;
  // Per rule, the matches (root, then substitution) applied so far, for idempotent rules.
  std::vector<std::unordered_set<std::u32string>> applied_before(rules.size());
  size_t applied_bytes = 0;  // their memory, roughly (a hash node and the key), for the limit
  for (size_t iter = 0;; ++iter) {
    for (const auto& hook : options.hooks)
      if (!hook(egraph, report)) stop = StopReason::Hook;
    if (stop) break;
    if (iter >= limits.iterations) {
      stop = StopReason::IterationLimit;
      break;
    }
    if (egraph.num_nodes() >= limits.nodes) {
      stop = StopReason::NodeLimit;
      break;
    }
    if (timed && Clock::now() >= deadline) {
      stop = StopReason::TimeLimit;
      break;
    }
    IterationStats it;
    // Search every rule on the same (clean) e-graph.
    std::vector<Matches> found(rules.size());
    size_t match_bytes = 0;
    Clock::time_point phase = Clock::now();
    for (size_t r = 0; r < rules.size() && !stop; ++r) {
      size_t limit = scheduler.search_limit(iter, r);
      if (limit == 0) continue;
      Clock::time_point t = Clock::now();
      found[r] =
          rules[r].search(egraph, options.threads,
                          limit == std::numeric_limits<size_t>::max() ? SIZE_MAX : limit, deadline);
      if (found[r].timed_out) {
        // Nothing of this iteration is applied: a partial search would make the result depend
        // on timing.
        stop = StopReason::TimeLimit;
        found.clear();
        found.resize(rules.size());
        break;
      }
      if (!scheduler.accept(iter, r, found[r].size())) {
        found[r] = Matches{};
        report.rules[r].times_banned++;
      }
      report.rules[r].search_seconds += since(t);
      report.rules[r].matches += found[r].size();
      it.matches += found[r].size();
      match_bytes += found[r].data.capacity() * 4;
      if (timed && Clock::now() >= deadline) stop = StopReason::TimeLimit;
      if (egraph.memory_bytes() + match_bytes + applied_bytes > limits.memory_bytes)
        stop = StopReason::MemoryLimit;
    }
    it.search_seconds = since(phase);

    // Apply, checking limits as we go: the e-graph grows here, not in search.
    {
      size_t total = 0;
      for (const Matches& m : found) total += m.size();
      size_t room =
          std::min(total * 2, limits.nodes == std::numeric_limits<size_t>::max()
                                  ? total * 2
                                  : limits.nodes - std::min(limits.nodes, egraph.num_nodes()) + 64);
      egraph.reserve(room, room * 2);
    }
    const size_t slots_before = egraph.num_node_slots();
    const size_t classes_before = egraph.num_classes();
    phase = Clock::now();
    size_t since_check = 0;
    for (size_t r = 0; r < rules.size() && !stop; ++r) {
      const Rewrite& rw = rules[r];
      OriginScope origin(egraph, rule_origins[r]);
      Clock::time_point t = Clock::now();
      size_t applied = 0;
      constexpr size_t kAhead = 8;
      const Applier& applier = *rw.applier;
      for (size_t i = 0, n = found[r].size(); i < n; ++i) {
        if (i + kAhead < n) applier.prefetch(egraph, found[r].subst(i + kAhead));
        if (rw.idempotent) {
          Subst subst = found[r].subst(i);
          std::u32string key(1, static_cast<char32_t>(found[r].root(i)));
          key.append(subst.begin(), subst.end());
          if (applied_before[r].contains(key)) continue;
          if (rw.apply(egraph, found[r].root(i), subst)) {
            ++applied;
            applied_bytes += 48 + key.capacity() * sizeof(char32_t);
            applied_before[r].insert(std::move(key));
          }
        } else {
          applied += rw.apply(egraph, found[r].root(i), found[r].subst(i));
        }
        if (egraph.num_nodes() >= limits.nodes) {
          stop = StopReason::NodeLimit;
          break;
        }
        if (++since_check == 256) {
          since_check = 0;
          if (timed && Clock::now() >= deadline) {
            stop = StopReason::TimeLimit;
            break;
          }
          if (egraph.memory_bytes() + match_bytes + applied_bytes > limits.memory_bytes) {
            stop = StopReason::MemoryLimit;
            break;
          }
        }
      }
      BigVector<uint32_t>().swap(found[r].data);  // applied: free as we go
      report.rules[r].applications += applied;
      report.rules[r].apply_seconds += since(t);
      it.applications += applied;
    }
    found.clear();
    it.apply_seconds = since(phase);
    const bool changed =
        egraph.num_node_slots() != slots_before || egraph.num_classes() != classes_before;

    phase = Clock::now();
    it.rebuild_merges = egraph.rebuild();
    it.rebuild_seconds = since(phase);
    it.nodes = egraph.num_nodes();
    it.classes = egraph.num_classes();
    report.search_seconds += it.search_seconds;
    report.apply_seconds += it.apply_seconds;
    report.rebuild_seconds += it.rebuild_seconds;
    report.per_iteration.push_back(it);
    report.iterations = iter + 1;
    if (stop) break;
    if (!changed && scheduler.can_stop(iter)) {
      stop = StopReason::Saturated;
      break;
    }
  }
  report.stop_reason = *stop;
  report.nodes = egraph.num_nodes();
  report.classes = egraph.num_classes();
  report.seconds = since(start);
  return report;
}

}  // namespace eqfuse::egraph
