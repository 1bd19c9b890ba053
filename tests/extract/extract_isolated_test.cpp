// Work in child processes (extract/isolated.h): reports arrive, a crash loses only the crashed
// child's remaining work, the deadline and `stop` end the children.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>

#include "extract/isolated.h"

using namespace eqfuse::extract;

namespace {
double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}
}  // namespace

TEST_CASE("children report in order and finish", "[extract]") {
  auto runs = run_isolated(20, {[](const Report& r) {
                                  r("a");
                                  r("b");
                                },
                                [](const Report& r) { r("c"); }});
  REQUIRE(runs.size() == 2);
  CHECK(runs[0].received == "ab");
  CHECK(runs[0].finished);
  CHECK(runs[1].received == "c");
  CHECK(runs[1].finished);
}

TEST_CASE("a crashing child keeps what it reported and spares the others", "[extract]") {
  auto runs = run_isolated(20, {[](const Report& r) {
                                  r("before");
                                  std::abort();
                                },
                                [](const Report& r) { r("fine"); }});
  CHECK(runs[0].received == "before");
  CHECK_FALSE(runs[0].finished);
  CHECK(runs[1].received == "fine");
  CHECK(runs[1].finished);
  auto thrown = run_isolated(20, [](const Report&) { throw 1; });
  CHECK_FALSE(thrown.finished);
}

TEST_CASE("the deadline and stop end the children", "[extract]") {
  auto start = std::chrono::steady_clock::now();
  auto late = run_isolated(0.5, [](const Report& r) {
    r("x");
    sleep(30);
  });
  CHECK(seconds_since(start) < 10);
  CHECK(late.received == "x");
  CHECK_FALSE(late.finished);

  start = std::chrono::steady_clock::now();
  auto runs =
      run_isolated(30,
                   {[](const Report& r) {
                      r("done");
                      sleep(30);
                    },
                    [](const Report&) { sleep(30); }},
                   [](const std::vector<IsolatedRun>& r) { return r[0].received == "done"; });
  CHECK(seconds_since(start) < 10);
  CHECK(runs[0].received == "done");
  CHECK_FALSE(runs[1].finished);
}
