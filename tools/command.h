#pragma once
// Each `eqfuse` subcommand lives in its own tools/cmd_*.cpp and registers itself here, so adding
// a command touches no shared file. `setup` declares the command's options on its CLI11 app and
// returns the function that runs it; that function returns the process exit code
// (0 ok, 1 a check failed, 2 bad input or usage, 3 unsupported).
#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

namespace eqfuse::tools {

using CommandMain = std::function<int()>;

struct Command {
  std::string name;
  std::string help;
  std::function<CommandMain(CLI::App&)> setup;
};

std::vector<Command>& command_registry();

struct RegisterCommand {
  explicit RegisterCommand(Command command) { command_registry().push_back(std::move(command)); }
};

}  // namespace eqfuse::tools
