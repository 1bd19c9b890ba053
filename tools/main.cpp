// The `eqfuse` command-line tool: dispatches to the subcommands registered in tools/cmd_*.cpp.
#include <algorithm>
#include <iostream>

#include "support/error.h"
#include "tools/command.h"

namespace eqfuse::tools {
std::vector<Command>& command_registry() {
  static std::vector<Command> commands;
  return commands;
}
}  // namespace eqfuse::tools

int main(int argc, char** argv) {
  using namespace eqfuse::tools;
  CLI::App app{"eqfuse: optimizes deep-learning models by equality saturation"};
  app.require_subcommand(1);
  auto& commands = command_registry();
  std::sort(commands.begin(), commands.end(),
            [](const Command& a, const Command& b) { return a.name < b.name; });
  std::vector<std::pair<CLI::App*, CommandMain>> mains;
  for (auto& command : commands) {
    CLI::App* sub = app.add_subcommand(command.name, command.help);
    mains.emplace_back(sub, command.setup(*sub));
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  }
  try {
    for (auto& [sub, run] : mains) {
      if (sub->parsed()) return run();
    }
  } catch (const eqfuse::Error& e) {
    std::cerr << "eqfuse: " << e.what() << "\n";
    return e.exit_code();
  } catch (const std::exception& e) {
    std::cerr << "eqfuse: internal error: " << e.what() << "\n";
    return 70;
  }
  return 2;
}
