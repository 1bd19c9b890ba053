// Catch2 main shared by every test executable. Executables that need ../shared skip (exit 77,
// CTest's SKIP_RETURN_CODE) with a clear message where it is absent.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <cstdlib>
#include <iostream>

#include "tests/test_data.h"

namespace eqfuse::test {
std::filesystem::path source_dir() {
  return EQFUSE_SOURCE_DIR;
}
std::filesystem::path shared_dir() {
  if (const char* env = std::getenv("EQFUSE_SHARED")) return env;
  return EQFUSE_SHARED_DIR;
}
bool have_shared_dir() {
  return std::filesystem::is_directory(shared_dir() / "models");
}
}  // namespace eqfuse::test

int main(int argc, char** argv) {
  if (eqfuse::test::kNeedsShared && !eqfuse::test::have_shared_dir()) {
    std::cout << "skipped: shared test data not found at " << eqfuse::test::shared_dir()
              << " (set EQFUSE_SHARED to its folder)\n";
    return 77;
  }
  return Catch::Session().run(argc, argv);
}
