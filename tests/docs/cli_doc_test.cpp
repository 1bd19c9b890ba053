// docs/cli.md and `eqfuse --help` agree. Every command that `eqfuse --help` lists (and every
// subcommand that `eqfuse CMD --help` lists) has a section whose heading names it
// ("## `eqfuse rules`", "### `eqfuse rules check`"); every flag that `eqfuse CMD --help` prints,
// short and long form, appears in that command's section; every flag in the first column of a
// table row of a section is one the command has; and no section names a command that does not
// exist. `-h,--help`, which every command has, is documented once at the top.
#include <catch2/catch.hpp>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <map>
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

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// What `--help` lists: subcommand names and flags (each short and long form apart).
struct Help {
  std::vector<std::string> subcommands;
  std::set<std::string> flags;
  std::vector<std::string> examples;  // the command lines under "Examples:"
};

Help parse_help(const std::string& text) {
  static const std::regex flag(R"((^|[ ,])(--?[A-Za-z0-9][A-Za-z0-9-]*))");
  Help help;
  std::string block;  // "Options:", "Subcommands:", ...
  for (const std::string& line : split_lines(text)) {
    if (line.empty()) continue;
    if (line[0] != ' ') {
      block = line;
      continue;
    }
    // An entry starts two spaces in; deeper lines continue the previous entry's description.
    if (line.size() < 3 || line[2] == ' ') continue;
    std::string entry = line.substr(2);
    std::string head = entry.substr(0, entry.find("  "));
    if (block == "Examples:") {
      help.examples.push_back(entry);
    } else if (block == "Subcommands:") {
      help.subcommands.push_back(head);
    } else if (block == "Options:") {
      std::string names = head.substr(0, head.find(' '));  // "-j,--jobs" without "UINT"
      for (std::sregex_iterator it(names.begin(), names.end(), flag), end; it != end; ++it)
        help.flags.insert((*it)[2]);
    }
  }
  return help;
}

// Whether `flag` occurs in `text` as a whole token: not part of a longer flag or word.
bool mentions(const std::string& text, const std::string& flag) {
  auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-'; };
  for (size_t at = text.find(flag); at != std::string::npos; at = text.find(flag, at + 1)) {
    bool left = at == 0 || !word(text[at - 1]);
    size_t end = at + flag.size();
    bool right = end == text.size() || !word(text[end]);
    if (left && right) return true;
  }
  return false;
}

struct Section {
  size_t line = 0;  // of the heading, 1-based
  int level = 0;
  std::string text;  // the heading's body, up to the next heading of the same or a higher level
  std::string own;   // the body up to the next heading of any level (no subsections)
};

// Sections of docs/cli.md keyed by the command their heading names ("rules check" for
// "### `eqfuse rules check`").
std::map<std::string, Section> command_sections(const std::vector<std::string>& lines) {
  static const std::regex heading(R"(^(#+)\s+`?eqfuse((\s+[a-z][a-z0-9-]*)+)`?\s*$)");
  std::map<std::string, Section> out;
  std::vector<std::pair<std::string, Section*>> open;
  bool fenced = false;
  int current = 0;  // the level of the last heading
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    if (line.rfind("```", 0) == 0) fenced = !fenced;
    if (!fenced && line.rfind("#", 0) == 0) {
      int level = static_cast<int>(line.find_first_not_of('#'));
      current = level;
      while (!open.empty() && open.back().second->level >= level) open.pop_back();
      std::smatch m;
      if (std::regex_match(line, m, heading)) {
        std::string name = std::regex_replace(std::string(m[2]), std::regex(R"(^\s+|\s+$)"), "");
        name = std::regex_replace(name, std::regex(R"(\s+)"), " ");
        Section& s = out[name];
        s.line = i + 1;
        s.level = level;
        open.emplace_back(name, &s);
      }
      continue;
    }
    for (auto& [name, s] : open) s->text += line + "\n";
    if (!open.empty() && open.back().second->level == current)
      open.back().second->own += line + "\n";
  }
  return out;
}

// The flags in the first column of the section's table rows: "| `--jobs N`, `-j` | ... |".
std::set<std::string> table_flags(const std::string& text) {
  static const std::regex flag(R"((^|[^A-Za-z0-9-])(--?[A-Za-z][A-Za-z0-9-]*))");
  std::set<std::string> out;
  for (const std::string& line : split_lines(text)) {
    if (line.rfind("|", 0) != 0) continue;
    size_t end = line.find('|', 1);
    if (end == std::string::npos) continue;
    std::string cell = line.substr(1, end - 1);
    if (cell.find('`') == std::string::npos) continue;
    for (std::sregex_iterator it(cell.begin(), cell.end(), flag), e; it != e; ++it)
      out.insert((*it)[2]);
  }
  return out;
}

std::vector<std::string> words(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

}  // namespace

TEST_CASE("docs/cli.md documents every command and flag that --help lists", "[docs][fast]") {
  fs::path doc = eqfuse::test::source_dir() / "docs" / "cli.md";
  std::ifstream in(doc);
  REQUIRE(in.good());
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  std::map<std::string, Section> sections = command_sections(split_lines(text));
  CHECK(mentions(text, "--help"));

  // Every command and subcommand, depth first: "info", ..., "rules", "rules check", ...
  std::vector<std::string> todo = {""};
  std::set<std::string> commands;
  while (!todo.empty()) {
    std::string command = todo.back();
    todo.pop_back();
    std::vector<std::string> args = words(command);
    args.push_back("--help");
    eqfuse::test::Result r = run_eqfuse(args);
    {
      INFO(describe(args, r));
      REQUIRE(r.code == 0);
    }
    Help help = parse_help(r.out);
    for (const std::string& sub : help.subcommands)
      todo.push_back(command.empty() ? sub : command + " " + sub);
    if (command.empty()) {
      CHECK(help.subcommands.size() >= 9);
      continue;
    }
    commands.insert(command);
    // Every command that does work shows examples in its --help, and each example of this
    // command uses only flags the command has.
    if (help.subcommands.empty() && command != "version") {
      INFO("`eqfuse " << command << " --help` has no Examples: section");
      CHECK(!help.examples.empty());
    }
    for (const std::string& example : help.examples) {
      std::vector<std::string> w = words(example);
      std::vector<std::string> own = words("eqfuse " + command);
      if (w.size() < own.size() || !std::equal(own.begin(), own.end(), w.begin())) continue;
      for (const std::string& token : w)
        if (token.rfind("-", 0) == 0) {
          INFO("`eqfuse " << command << " --help` example uses " << token << ": " << example);
          CHECK(help.flags.count(token.substr(0, token.find('='))));
        }
    }
    auto it = sections.find(command);
    if (it == sections.end()) {
      FAIL_CHECK("docs/cli.md needs a heading `eqfuse " << command << "`");
      continue;
    }
    const Section& section = it->second;
    for (const std::string& flag : help.flags) {
      if (flag == "-h" || flag == "--help") continue;
      INFO("docs/cli.md:" << section.line << ": section `eqfuse " << command << "` lacks " << flag);
      CHECK(mentions(section.text, flag));
    }
    for (const std::string& flag : table_flags(section.own)) {
      INFO("docs/cli.md:" << section.line << ": `eqfuse " << command << "` has no flag " << flag);
      CHECK(help.flags.count(flag));
    }
  }
  for (const auto& [name, section] : sections) {
    INFO("docs/cli.md:" << section.line << ": no command `eqfuse " << name << "`");
    CHECK(commands.count(name));
  }
}

TEST_CASE("docs/cli.md documents every flag that eqfuse-bench --help lists", "[docs][fast]") {
  std::ifstream in(eqfuse::test::source_dir() / "docs" / "cli.md");
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  size_t at = text.find("\n## `eqfuse-bench`");
  REQUIRE(at != std::string::npos);
  std::string section = text.substr(at, text.find("\n## ", at + 1) - at);

  std::string help;
  FILE* pipe = popen(EQFUSE_BENCH_BINARY " --help", "r");
  REQUIRE(pipe);
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, pipe)) > 0;) help.append(buf, n);
  REQUIRE(pclose(pipe) == 0);
  Help h = parse_help(help);
  CHECK(h.flags.size() >= 6);
  for (const std::string& flag : h.flags) {
    if (flag == "-h" || flag == "--help") continue;
    INFO("docs/cli.md: section `eqfuse-bench` lacks " << flag);
    CHECK(mentions(section, flag));
  }
  for (const std::string& flag : table_flags(section)) {
    INFO("docs/cli.md: eqfuse-bench has no flag " << flag);
    CHECK(h.flags.count(flag));
  }
}
