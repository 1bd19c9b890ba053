// `eqfuse rules check FILE... [--json] [--jobs N] [--no-cache] [--query-time S] [--rule-time S]
// [--time-limit S]`: proves every rule of the files (rules/prove/) and prints verdict, time and
// bounds (ranks, dim sizes, attribute values tried, pairs separated) per rule. Exit 0 when every
// rule is proved, 1 when one is refuted, unknown, invalid or unseparated, 2 when a file cannot be
// read or parsed (with --json, stdout then holds {"error": ...}).
// `eqfuse rules show NAME [--rules FILE...]`: the rule, the shapes it is proved at and its
// proof status (the library, rules/library/*.rules, when no file is given).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "rules/parser.h"
#include "rules/prove/batch.h"
#include "support/error.h"
#include "tools/command.h"
#include "tools/progress_line.h"

namespace eqfuse::tools {
namespace {

namespace fs = std::filesystem;
using namespace eqfuse::rules;
using namespace eqfuse::rules::prove;

struct RulesArgs {
  std::vector<std::string> files;
  bool json = false;
  unsigned jobs = 0;
  bool no_cache = false;
  bool progress = false;
  std::string name;
  ProveOptions options;
};

// The library's files: rules/library/*.rules found from the working directory or from the
// executable's location (a build tree inside the source tree).
std::vector<std::string> library_files() {
  std::vector<fs::path> roots = {fs::current_path()};
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec)
    for (fs::path p = exe.parent_path(); p.has_relative_path(); p = p.parent_path())
      roots.push_back(p);
  for (const fs::path& root : roots) {
    fs::path dir = root / "rules" / "library";
    if (!fs::is_directory(dir, ec)) continue;
    std::vector<std::string> files;
    for (const auto& entry : fs::directory_iterator(dir))
      if (entry.path().extension() == ".rules") files.push_back(entry.path().string());
    std::sort(files.begin(), files.end());
    if (!files.empty()) return files;
  }
  fail("no rule files given and rules/library/*.rules not found (use --rules FILE)");
}

// Bad input (exit 2): the message on stderr and, with --json, as stdout's one document.
int bad_input(const RulesArgs& args, const char* command, const std::string& message) {
  std::cerr << "eqfuse rules " << command << ": " << message << "\n";
  if (args.json) std::cout << nlohmann::json{{"error", message}}.dump(1) << "\n";
  return 2;
}

std::vector<RuleProof> prove_all(const RuleSet& set, const RulesArgs& args) {
  std::vector<const Rule*> rules;
  for (const Rule& r : set.rules) rules.push_back(&r);
  std::unique_ptr<ProofCache> cache;
  if (!args.no_cache) cache = std::make_unique<ProofCache>();
  ProgressLine line(args.progress);
  ProofProgress progress;
  if (line.enabled())
    progress = [&line](size_t done, size_t total, const RuleProof& p) {
      line.update(fmt::format("[{}/{}] {} {}", done, total, verdict_name(p.verdict), p.name));
    };
  return prove_rules(rules, args.options, args.jobs, cache.get(), progress);
}

int run_check(const RulesArgs& args) {
  RuleSet set;
  try {
    set = parse_rule_files(args.files);
  } catch (const Error& e) {
    return bad_input(args, "check", e.what());
  }
  auto start = std::chrono::steady_clock::now();
  std::vector<RuleProof> proofs = prove_all(set, args);
  double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  size_t proved = 0;
  nlohmann::json out = nlohmann::json::array();
  for (const RuleProof& p : proofs) {
    if (p.verdict == Verdict::Proved) ++proved;
    if (args.json) {
      out.push_back(proof_json(p));
      continue;
    }
    std::cout << fmt::format("{:<8} {:7.3f}s  {}{}  ({} shapes{})\n", verdict_name(p.verdict),
                             p.seconds, p.name, p.from_cache ? " [cached]" : "", p.bounds.size(),
                             p.coverage_text.empty() ? "" : ": " + p.coverage_text);
    if (!p.reason.empty()) std::cout << "         " << p.reason << "\n";
    if (p.counterexample) std::cout << "         counterexample " << p.counterexample->text << "\n";
  }
  if (args.json) std::cout << out.dump(1) << "\n";
  std::cerr << fmt::format("{} of {} rules proved in {:.2f}s\n", proved, proofs.size(), total);
  if (!set.fusion.empty())  // kinds are declarations, not claims: nothing to prove
    std::cerr << fmt::format("{} kernel kinds declared (fusion proves each kernel it forms)\n",
                             set.fusion.kinds.size());
  return proved == proofs.size() ? 0 : 1;
}

int run_show(const RulesArgs& args) {
  RuleSet set;
  try {
    set = parse_rule_files(args.files.empty() ? library_files() : args.files);
  } catch (const Error& e) {
    return bad_input(args, "show", e.what());
  }
  const Rule* rule = set.find(args.name);
  if (!rule) return bad_input(args, "show", "no rule named '" + args.name + "'");
  RuleSet one;
  one.rules.push_back(*rule);
  RuleProof p = prove_all(one, args).at(0);
  if (args.json) {
    nlohmann::json j = proof_json(p);
    j["text"] = rule->text;
    j["group"] = rule->group;
    j["where"] = rule->where.str();
    std::cout << j.dump(1) << "\n";
  } else {
    std::cout << rule->text << "\n";
    std::cout << fmt::format("  group {}, {}\n", rule->group, rule->where.str());
    std::cout << fmt::format("  {} in {:.3f}s{}\n", verdict_name(p.verdict), p.seconds,
                             p.from_cache ? " (cached)" : "");
    if (!p.coverage_text.empty()) std::cout << "  bounds: " << p.coverage_text << "\n";
    std::cout << "  shapes (over the reals at these bindings only):\n";
    for (const std::string& b : p.bounds) std::cout << "    " << b << "\n";
    if (!p.reason.empty()) std::cout << "  " << p.reason << "\n";
    if (p.counterexample) std::cout << "  counterexample " << p.counterexample->text << "\n";
  }
  return p.verdict == Verdict::Proved ? 0 : 1;
}

RegisterCommand rules_command{
    {"rules", "Prove rule files (check) and show a rule's proof (show)", [](CLI::App& app) {
       auto args = std::make_shared<RulesArgs>();
       app.require_subcommand(1);
       CLI::App* check = app.add_subcommand("check", "Prove every rule of the files with Z3");
       check->add_option("files", args->files, "rule files")->required();
       check->add_flag("--json", args->json, "stdout: a JSON array, one object per rule");
       check->add_option("--jobs,-j", args->jobs, "worker threads (default: all cores)");
       check->add_flag("--no-cache", args->no_cache, "ignore and do not update the proof cache");
       check->add_flag(
           "--progress", args->progress,
           "a line on stderr per rule proved (default: one updated line on a terminal)");
       auto limits = [&](CLI::App* sub) {
         sub->add_option_function<double>(
                "--query-time",
                [args](double s) { args->options.timeout_ms = static_cast<unsigned>(s * 1000); },
                "wall-clock limit per Z3 query, simplifier included, in seconds (default 5)")
             ->check(CLI::Range(0.0, 3600.0));
         sub->add_option("--rule-time", args->options.rule_seconds,
                         "wall-clock limit per rule in seconds (default 60)")
             ->check(CLI::Range(0.0, 86400.0));
         sub->add_option("--time-limit", args->options.file_seconds,
                         "wall-clock limit for all the rules in seconds (default 1800)")
             ->check(CLI::Range(0.0, 864000.0));
       };
       limits(check);
       check->footer(
           "Limits: each Z3 query (the polynomial simplifier and the solver) ends within "
           "--query-time, each rule within --rule-time, all rules within --time-limit. A rule "
           "that reaches a limit is 'unknown: time limit' with what was proved so far, and the "
           "other rules go on. Verdicts: proved; refuted (with a counterexample that replays in "
           "the interpreter); invalid (the right side type-checks nowhere); unseparated (proved "
           "at bounds that do not separate two dims or attribute values the rule may confuse: "
           "not a proof); unknown.\n\n"
           "Examples:\n  eqfuse rules check rules/library/*.rules\n"
           "  eqfuse rules check my.rules --json --no-cache\n"
           "  eqfuse rules check slow.rules --rule-time 300 --jobs 2");
       CLI::App* show = app.add_subcommand("show", "A rule, its proof shapes and status");
       show->add_option("name", args->name, "rule name")->required();
       show->add_option("--rules", args->files, "rule files (default: the library)");
       show->add_flag("--json", args->json, "stdout: one JSON object");
       show->add_flag("--no-cache", args->no_cache, "ignore and do not update the proof cache");
       limits(show);
       show->footer(
           "Examples:\n  eqfuse rules show mul-comm\n  eqfuse rules show my-rule --rules my.rules "
           "--json");
       return CommandMain(
           [args, check] { return check->parsed() ? run_check(*args) : run_show(*args); });
     }}};

}  // namespace
}  // namespace eqfuse::tools
