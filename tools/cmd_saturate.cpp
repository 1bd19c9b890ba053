// `eqfuse saturate`: equality saturation of an untyped term under rewrites from a file, to
// try rule sets and to measure the engine (see egraph/runner.h).
#include <sys/resource.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "egraph/rewrite_file.h"
#include "egraph/runner.h"
#include "egraph/serialize.h"
#include "egraph/term.h"
#include "support/error.h"
#include "tools/command.h"

namespace eqfuse::tools {
namespace {

struct SaturateOptions {
  std::string rules;
  std::string term;
  size_t iter_limit = 30;
  size_t node_limit = 0;  // 0: none
  double time_limit = 0;  // 0: none
  size_t memory_limit_mb = 0;
  std::string scheduler = "simple";
  int threads = 1;
  bool json = false;
  std::string dump;
};

size_t peak_rss_bytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<size_t>(usage.ru_maxrss) * 1024;
}

int saturate(const SaturateOptions& o) {
  using namespace egraph;
  std::vector<Rewrite> rules = read_rewrite_file(o.rules);
  Sexpr term = parse_sexpr(o.term, "<term>");
  RunnerOptions options;
  options.limits.iterations = o.iter_limit;
  if (o.node_limit) options.limits.nodes = o.node_limit;
  if (o.time_limit > 0) options.limits.seconds = o.time_limit;
  if (o.memory_limit_mb) options.limits.memory_bytes = o.memory_limit_mb << 20;
  if (o.scheduler == "backoff") {
    options.scheduler = std::make_shared<BackoffScheduler>();
  } else if (o.scheduler != "simple") {
    fail("unknown scheduler '" + o.scheduler + "' (expected simple or backoff)");
  }
  options.threads = o.threads;
  if (!o.dump.empty() && !o.dump.ends_with(".json") && !o.dump.ends_with(".dot"))
    fail("--dump: expected a file name ending in .json or .dot, got '" + o.dump + "'");

  auto start = std::chrono::steady_clock::now();
  EGraph egraph;
  EClassId root = add_term(egraph, term);
  RunReport report = run(egraph, rules, options);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  size_t rss = peak_rss_bytes();

  if (!o.dump.empty()) {
    if (o.dump.ends_with(".dot")) {
      std::ofstream out(o.dump, std::ios::binary);
      out << to_dot(egraph, {root});
      if (!out) fail("cannot write '" + o.dump + "'");
    } else {
      write_serialized_egraph(to_serialized(egraph, {root}), o.dump);
    }
  }

  if (o.json) {
    nlohmann::json j;
    j["iterations"] = report.iterations;
    j["enodes"] = report.nodes;
    j["eclasses"] = report.classes;
    j["stop_reason"] = stop_reason_name(report.stop_reason);
    j["seconds"] = seconds;
    j["search_seconds"] = report.search_seconds;
    j["apply_seconds"] = report.apply_seconds;
    j["rebuild_seconds"] = report.rebuild_seconds;
    j["peak_rss_bytes"] = rss;
    std::cout << j.dump() << "\n";
    return 0;
  }
  std::cout << "iterations:  " << report.iterations << "\n"
            << "e-nodes:     " << report.nodes << "\n"
            << "e-classes:   " << report.classes << "\n"
            << "stop reason: " << stop_reason_name(report.stop_reason) << "\n"
            << "seconds:     " << seconds << " (search " << report.search_seconds << ", apply "
            << report.apply_seconds << ", rebuild " << report.rebuild_seconds << ")\n"
            << "peak RSS:    " << rss << " bytes (" << (report.nodes ? rss / report.nodes : 0)
            << " per e-node)\n";
  std::cout << "rules (matches / applied / search s / apply s):\n";
  for (const RuleStats& r : report.rules)
    std::cout << "  " << r.name << ": " << r.matches << " / " << r.applications << " / "
              << r.search_seconds << " / " << r.apply_seconds
              << (r.times_banned ? " (banned " + std::to_string(r.times_banned) + "x)" : "")
              << "\n";
  return 0;
}

RegisterCommand saturate_command{
    {"saturate", "Saturate a term under rewrite rules (the e-graph engine on its own)",
     [](CLI::App& app) {
       auto o = std::make_shared<SaturateOptions>();
       app.add_option("--rules", o->rules, "rule file: (rewrite NAME LHS RHS) forms")->required();
       app.add_option("--term", o->term, "the term, an s-expression")->required();
       app.add_option("--iter-limit", o->iter_limit, "iterations (default 30)");
       app.add_option("--node-limit", o->node_limit, "stop near this many e-nodes");
       app.add_option("--time-limit", o->time_limit, "stop after this many seconds");
       app.add_option("--memory-limit", o->memory_limit_mb,
                      "stop when the e-graph's arrays exceed this many MiB");
       app.add_option("--scheduler", o->scheduler, "simple (default) or backoff")
           ->check(CLI::IsMember({"simple", "backoff"}));
       app.add_option("--threads", o->threads, "search threads (default 1)")
           ->check(CLI::PositiveNumber);
       app.add_flag("--json", o->json, "print one JSON object");
       app.add_option("--dump", o->dump,
                      "write the e-graph: OUT.json (egraph-serialize) or OUT.dot");
       app.footer(
           "Examples:\n  eqfuse saturate --rules r.rules --term \"(* (+ a b) 1)\"\n  eqfuse "
           "saturate --rules r.rules --term \"(* (+ a b) 1)\" --node-limit 10000 --dump eg.json");
       return CommandMain([o] { return saturate(*o); });
     }}};

}  // namespace
}  // namespace eqfuse::tools
