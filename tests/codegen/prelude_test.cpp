// The prelude's index division (eqf_divmod) compiled as generated units compile it, against
// C++'s % and / on both sides of 2^32, where it takes its 32-bit and its 64-bit path.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "codegen/prelude.h"

namespace fs = std::filesystem;

TEST_CASE("eqf_divmod splits an index as % and / do, in 32 or 64 bits") {
  const fs::path dir =
      fs::temp_directory_path() / ("eqfuse-prelude-test-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "divmod.cpp") << eqfuse::codegen::prelude_text() << R"(
#include <stdio.h>
int main() {
  const int64_t rs[] = {0, 1, 55, 56, 57, 4294967295LL, 4294967296LL, 4294967301LL,
                        3LL * (1LL << 40) + 7, 9223372036854775807LL};
  const int64_t ds[] = {1, 3, 56, 2147483648LL, 4294967295LL, 4294967296LL, 8589934593LL};
  int bad = 0;
  for (int64_t r0 : rs)
    for (int64_t d : ds) {
      int64_t r = r0;
      const int64_t m = eqf_divmod(&r, d);
      if (m != r0 % d || r != r0 / d) {
        printf("%lld / %lld: got %lld rest %lld\n", (long long)r0, (long long)d, (long long)r,
               (long long)m);
        ++bad;
      }
    }
  return bad;
}
)";
  const std::string cmd = "cd '" + dir.string() +
                          "' && c++ -std=c++17 -O2 -Wall -Wextra -Werror -o divmod divmod.cpp "
                          "-lm && ./divmod";
  CHECK(std::system(cmd.c_str()) == 0);
  fs::remove_all(dir);
}
