// `eqfuse version`: what this build is.
#include <iostream>

#include "tools/command.h"

namespace eqfuse::tools {
namespace {
RegisterCommand version_command{{"version", "Print the eqfuse version", [](CLI::App&) {
                                   return CommandMain([] {
                                     std::cout << "eqfuse 0.1.0\n";
                                     return 0;
                                   });
                                 }}};
}  // namespace
}  // namespace eqfuse::tools
