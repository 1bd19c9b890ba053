// `eqfuse rules check` and `eqfuse rules show`: exit codes (0 every rule proved, 1 one refuted,
// unknown or invalid, 2 a file unreadable or unparsable or bad usage) and `--json`, whose stdout
// must be one JSON document and nothing else. The binary runs with XDG_CACHE_HOME in a fresh
// temporary folder, so the tests never read or write the user's proof cache.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/test_data.h"
#include "tests/tools/run_eqfuse.h"

namespace {

namespace fs = std::filesystem;
using eqfuse::test::source_dir;
using namespace eqfuse::test;

std::string data(const char* name) {
  return (source_dir() / "tests" / "tools" / "data" / name).string();
}

nlohmann::json parse_json(const std::string& out) {
  INFO(out);
  nlohmann::json j;
  REQUIRE_NOTHROW(j = nlohmann::json::parse(out));
  return j;
}

// The --json array as name -> object, checking the fields every object has.
std::map<std::string, nlohmann::json> by_name(const nlohmann::json& doc) {
  REQUIRE(doc.is_array());
  std::map<std::string, nlohmann::json> out;
  for (const nlohmann::json& p : doc) {
    INFO(p.dump());
    REQUIRE(p.contains("name"));
    REQUIRE(p["name"].is_string());
    REQUIRE(p.contains("verdict"));
    std::string v = p["verdict"];
    CHECK((v == "proved" || v == "refuted" || v == "unknown" || v == "invalid"));
    REQUIRE(p.contains("seconds"));
    CHECK(p["seconds"].is_number());
    CHECK(p["seconds"].get<double>() >= 0);
    CHECK(p.contains("counterexample") == (v == "refuted"));
    out[p["name"]] = p;
  }
  return out;
}

}  // namespace

TEST_CASE("eqfuse rules check: exit 0 when every rule is proved", "[tools][rules]") {
  std::vector<std::string> args = {"rules", "check", "--no-cache", data("proved.rules")};
  Result r = run_eqfuse(args);
  INFO(describe(args, r));
  CHECK(r.code == 0);
  for (const char* name : {"cli-add-comm", "cli-relu-twice", "cli-mul-add-distribute",
                           "cli-mul-add-distribute-rev", "cli-transpose-twice"})
    CHECK(r.out.find(name) != std::string::npos);
  CHECK(r.out.find("refuted") == std::string::npos);

  args = {"rules", "check", "--json", "--no-cache", "--jobs", "2", data("proved.rules")};
  Result j = run_eqfuse(args);
  INFO(describe(args, j));
  CHECK(j.code == 0);
  auto proofs = by_name(parse_json(j.out));
  CHECK(proofs.size() == 5);  // the birewrite gives two rules
  for (auto& [name, p] : proofs) {
    INFO(name);
    CHECK(p["verdict"] == "proved");
  }
}

TEST_CASE("eqfuse rules check: exit 1 when a rule is refuted, unknown or invalid",
          "[tools][rules]") {
  std::vector<std::string> args = {"rules", "check", "--no-cache", data("mixed.rules")};
  Result r = run_eqfuse(args);
  INFO(describe(args, r));
  CHECK(r.code == 1);
  CHECK(r.out.find("counterexample") != std::string::npos);

  args = {"rules", "check", "--json", "--no-cache", data("mixed.rules")};
  Result j = run_eqfuse(args);
  INFO(describe(args, j));
  CHECK(j.code == 1);
  auto proofs = by_name(parse_json(j.out));
  REQUIRE(proofs.size() == 3);
  CHECK(proofs["cli-neg-twice"]["verdict"] == "proved");
  CHECK(proofs["cli-wrong-relu-distributes"]["verdict"] == "refuted");
  CHECK(proofs["cli-wrong-relu-distributes"]["counterexample"].is_object());
  CHECK(proofs["cli-invalid-rhs-shape"]["verdict"] == "invalid");

  args = {"rules", "check", "--json", "--no-cache", data("unsatisfiable.rules")};
  Result u = run_eqfuse(args);
  INFO(describe(args, u));
  CHECK(u.code == 1);
  auto unknown = by_name(parse_json(u.out));
  REQUIRE(unknown.size() == 1);
  CHECK(unknown["cli-never-applies"]["verdict"] == "unknown");

  // One bad file among good ones still fails the whole check.
  args = {"rules", "check", "--json", "--no-cache", data("proved.rules"), data("mixed.rules")};
  Result both = run_eqfuse(args);
  INFO(describe(args, both));
  CHECK(both.code == 1);
  CHECK(by_name(parse_json(both.out)).size() == 8);
}

TEST_CASE("eqfuse rules check: exit 2 on unreadable or unparsable files and bad usage",
          "[tools][rules]") {
  fs::path dir = fresh_dir("cli_rules_bad");
  std::ofstream(dir / "unbalanced.rules") << "(rewrite cli-open (Relu ?x) ?x\n";
  const std::vector<std::vector<std::string>> cases = {
      {"rules", "check", "--no-cache", data("parse_error.rules")},
      {"rules", "check", "--no-cache", (dir / "unbalanced.rules").string()},
      {"rules", "check", "--no-cache", (dir / "absent.rules").string()},
      {"rules", "check", "--no-cache", dir.string()},  // a folder
      {"rules", "check", "--no-cache", data("proved.rules"), (dir / "absent.rules").string()},
      {"rules", "check"},
      {"rules"},
      {"rules", "frobnicate"},
      {"rules", "check", "--jobs", "many", data("proved.rules")},
      {"rules", "check", "--no-such-flag", data("proved.rules")},
      {"rules", "show"},
  };
  for (const auto& args : cases) {
    Result r = run_eqfuse(args);
    INFO(describe(args, r));
    CHECK(r.code == 2);
    CHECK(!r.err.empty());  // says why, on stderr
    CHECK(r.out.find("proved") == std::string::npos);
  }
  // The parse error names the place and the op.
  Result p = run_eqfuse({"rules", "check", data("parse_error.rules")});
  CHECK(p.err.find("parse_error.rules:2:") != std::string::npos);
  CHECK(p.err.find("Frobnicate") != std::string::npos);
  // With --json, stdout is still one JSON document, saying what went wrong.
  for (const std::string& file : {data("parse_error.rules"), (dir / "absent.rules").string()}) {
    std::vector<std::string> args = {"rules", "check", "--json", "--no-cache", file};
    Result j = run_eqfuse(args);
    INFO(describe(args, j));
    CHECK(j.code == 2);
    CHECK(parse_json(j.out).contains("error"));
  }
  CHECK(run_eqfuse({"rules", "check", "--help"}).code == 0);
}

TEST_CASE("eqfuse rules check caches proofs under XDG_CACHE_HOME unless --no-cache",
          "[tools][rules]") {
  fs::path proofs = cache_home() / "eqfuse" / "proofs";
  fs::remove_all(cache_home() / "eqfuse");
  std::vector<std::string> args = {"rules", "check", "--json", "--no-cache", data("proved.rules")};
  Result none = run_eqfuse(args);
  INFO(describe(args, none));
  CHECK(none.code == 0);
  CHECK(!fs::exists(proofs));

  args = {"rules", "check", "--json", data("proved.rules")};
  Result cold = run_eqfuse(args);
  INFO(describe(args, cold));
  CHECK(cold.code == 0);
  CHECK(fs::exists(proofs));
  for (auto& [name, p] : by_name(parse_json(cold.out))) CHECK(p["cached"] == false);
  Result warm = run_eqfuse(args);
  INFO(describe(args, warm));
  CHECK(warm.code == 0);
  for (auto& [name, p] : by_name(parse_json(warm.out))) {
    CHECK(p["cached"] == true);
    CHECK(p["verdict"] == "proved");
  }
  // A refuted verdict comes back from the cache with its counterexample and exit code.
  args = {"rules", "check", "--json", data("mixed.rules")};
  run_eqfuse(args);
  Result again = run_eqfuse(args);
  INFO(describe(args, again));
  CHECK(again.code == 1);
  auto mixed = by_name(parse_json(again.out));
  CHECK(mixed["cli-wrong-relu-distributes"]["cached"] == true);
  CHECK(mixed["cli-wrong-relu-distributes"]["verdict"] == "refuted");
}

TEST_CASE("eqfuse rules show prints a rule, its shapes and its proof", "[tools][rules]") {
  std::vector<std::string> args = {
      "rules", "show", "--no-cache", "--rules", data("proved.rules"), "cli-transpose-twice"};
  Result r = run_eqfuse(args);
  INFO(describe(args, r));
  CHECK(r.code == 0);
  CHECK(r.out.find("(rewrite cli-transpose-twice") != std::string::npos);
  CHECK(r.out.find("proved") != std::string::npos);
  CHECK(r.out.find("cli-test") != std::string::npos);  // the group
  CHECK(r.out.find("proved.rules:") != std::string::npos);

  args = {"rules",
          "show",
          "--json",
          "--no-cache",
          "--rules",
          data("mixed.rules"),
          "cli-wrong-relu-distributes"};
  Result j = run_eqfuse(args);
  INFO(describe(args, j));
  CHECK(j.code == 1);
  nlohmann::json doc = parse_json(j.out);
  CHECK(doc["name"] == "cli-wrong-relu-distributes");
  CHECK(doc["verdict"] == "refuted");
  CHECK(doc.contains("counterexample"));
  CHECK(doc["bounds"].is_array());

  // Without --rules, the library (found from the working folder wherever the build tree is).
  args = {"rules", "show", "--json", "--no-cache", "transpose-2d-twice"};
  Result lib = run_eqfuse(args, source_dir());
  INFO(describe(args, lib));
  CHECK(lib.code == 0);
  CHECK(parse_json(lib.out)["verdict"] == "proved");

  args = {"rules", "show", "--no-cache", "--rules", data("proved.rules"), "no-such-rule"};
  Result missing = run_eqfuse(args);
  INFO(describe(args, missing));
  CHECK(missing.code == 2);
  CHECK(missing.err.find("no-such-rule") != std::string::npos);
  args = {"rules", "show", "--json", "--rules", data("proved.rules"), "no-such-rule"};
  Result missing_json = run_eqfuse(args);
  INFO(describe(args, missing_json));
  CHECK(missing_json.code == 2);
  CHECK(parse_json(missing_json.out).contains("error"));
}
