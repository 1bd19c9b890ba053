// docs/rules.md stays true: every rule example in it is a ```lisp block preceded by a line
// `<!-- expect: VERDICT -->` (or `<!-- expect: VERDICT file: NAME.rules -->`, which names the
// file the block is written to, so that another block can include it). Each block is written to
// a temporary folder and checked with `eqfuse rules check --no-cache --json`; every rule in it
// must get the stated verdict (proved, refuted, invalid, unseparated or unknown), or, for
// `error`, the file must be rejected before any proof (exit 2, {"error": ...}).
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/test_data.h"
#include "tests/tools/run_eqfuse.h"

namespace {

namespace fs = std::filesystem;
using eqfuse::test::describe;
using eqfuse::test::run_eqfuse;

struct Example {
  size_t line = 0;  // of the opening fence, 1-based
  std::string expect;
  std::string file;
  std::string text;
};

std::vector<std::string> read_lines(const fs::path& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

// The ```lisp blocks of the document, each with the marker on the last non-blank line before it
// (expect is empty where there is none).
std::vector<Example> lisp_blocks(const std::vector<std::string>& lines) {
  static const std::regex marker(R"(<!--\s*expect:\s*([a-z]+)(\s+file:\s*(\S+))?\s*-->)");
  std::vector<Example> out;
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string fence = trim(lines[i]);
    if (fence.rfind("```", 0) != 0) continue;
    size_t start = i;
    std::string text;
    for (++i; i < lines.size() && trim(lines[i]) != "```"; ++i) text += lines[i] + "\n";
    if (fence != "```lisp") continue;
    Example ex;
    ex.line = start + 1;
    ex.text = text;
    std::string before;
    for (size_t k = start; k-- > 0 && before.empty();) before = trim(lines[k]);
    std::smatch m;
    if (std::regex_match(before, m, marker)) {
      ex.expect = m[1];
      ex.file = m[3];
    }
    out.push_back(ex);
  }
  return out;
}

}  // namespace

TEST_CASE("every rule example in docs/rules.md gets the verdict the text states", "[docs][fast]") {
  fs::path doc = eqfuse::test::source_dir() / "docs" / "rules.md";
  std::vector<Example> examples = lisp_blocks(read_lines(doc));
  REQUIRE_FALSE(examples.empty());

  // Write every block first: a block may include the file of another one.
  fs::path dir = eqfuse::test::fresh_dir("docs_rules");
  std::set<std::string> names;
  for (size_t i = 0; i < examples.size(); ++i) {
    Example& ex = examples[i];
    if (ex.expect.empty())
      FAIL_CHECK("docs/rules.md:" << ex.line
                                  << ": a ```lisp block needs <!-- expect: VERDICT --> before it");
    if (ex.file.empty()) ex.file = "example_" + std::to_string(ex.line) + ".rules";
    INFO("docs/rules.md:" << ex.line << ": file " << ex.file << " is written twice");
    REQUIRE(names.insert(ex.file).second);
    std::ofstream(dir / ex.file) << ex.text;
  }

  static const std::set<std::string> verdicts = {"proved",      "refuted", "invalid",
                                                 "unseparated", "unknown", "error"};
  std::set<std::string> seen;
  bool multi_proved = false;
  for (const Example& ex : examples) {
    if (ex.expect.empty()) continue;
    INFO("docs/rules.md:" << ex.line << " (expect: " << ex.expect << ")\n" << ex.text);
    REQUIRE(verdicts.count(ex.expect));
    std::vector<std::string> args = {"rules", "check", "--no-cache", "--json", ex.file};
    eqfuse::test::Result r = run_eqfuse(args, dir);
    INFO(describe(args, r));
    nlohmann::json j = nlohmann::json::parse(r.out);
    if (ex.expect == "error") {
      CHECK(r.code == 2);
      CHECK(j.is_object());
      CHECK(j.contains("error"));
    } else {
      CHECK(r.code == (ex.expect == "proved" ? 0 : 1));
      REQUIRE(j.is_array());
      CHECK_FALSE(j.empty());
      for (const nlohmann::json& proof : j) {
        INFO("rule " << proof.at("name").get<std::string>());
        CHECK(proof.at("verdict") == ex.expect);
        if (ex.expect == "refuted") CHECK(proof.contains("counterexample"));
      }
    }
    seen.insert(ex.expect);
    if (ex.expect == "proved" && ex.text.find("(multi") != std::string::npos) multi_proved = true;
  }
  // The guide promises at least these worked examples.
  CHECK(seen.count("proved"));
  CHECK(seen.count("refuted"));
  CHECK(seen.count("invalid"));
  CHECK(multi_proved);
  fs::remove_all(dir);
}
