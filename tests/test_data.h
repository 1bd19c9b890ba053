#pragma once
// Where tests find their data: the repo itself (bundled examples) and ../shared (models and
// e-graphs that only CI and developers have beside their clone).
#include <filesystem>

namespace eqfuse::test {

// The source tree (for bundled examples and rule files).
std::filesystem::path source_dir();
// ../shared, or $EQFUSE_SHARED; tests built with NEEDS_SHARED skip when it is absent.
std::filesystem::path shared_dir();
bool have_shared_dir();
// Set by eqfuse_test(... NEEDS_SHARED) (tests/needs_shared.cpp): such an executable exits 77
// (skipped) where ../shared is absent.
extern const bool kNeedsShared;

}  // namespace eqfuse::test
