// The arena plan: no two live values share memory (the checker, at several bindings), slots are
// reused once a value is dead, and symbolic sizes never need a run-time comparison.
#include <catch2/catch.hpp>
#include <random>

#include "codegen/buffer_plan.h"
#include "codegen/plan.h"
#include "ir/builder.h"

using namespace eqfuse;
using codegen::Lifetime;

TEST_CASE("the buffer plan reuses dead slots and never overlaps live values") {
  ir::SymInt n = ir::SymInt::symbol("batch");
  std::vector<Lifetime> v = {{0, 1, n * ir::SymInt(4096)},
                             {1, 2, n * ir::SymInt(4096)},
                             {2, 3, n * ir::SymInt(4096)},  // may take value 0's slot
                             {3, 5, ir::SymInt(100)},
                             {4, 5, n * ir::SymInt(8192)}};
  codegen::BufferPlan p = codegen::plan_buffers(v);
  CHECK(p.slot_of[2] == p.slot_of[0]);
  CHECK(p.slot_bytes.size() <= 4);
  for (int64_t b : {1, 2, 7, 64})
    CHECK_FALSE(codegen::check_buffer_plan(p, v, {{"batch", b}}).has_value());
}

TEST_CASE("the checker finds a plan that lets two live values share a slot") {
  std::vector<Lifetime> v = {{0, 2, ir::SymInt(64)}, {1, 3, ir::SymInt(64)}};
  codegen::BufferPlan p = codegen::plan_buffers(v);
  CHECK_FALSE(codegen::check_buffer_plan(p, v, {}).has_value());
  p.slot_of[1] = p.slot_of[0];
  auto why = codegen::check_buffer_plan(p, v, {});
  REQUIRE(why.has_value());
  CHECK_THAT(*why, Catch::Contains("live together"));
  codegen::BufferPlan q = codegen::plan_buffers(v);
  q.slot_bytes[0] = ir::SymInt(0);
  CHECK(codegen::check_buffer_plan(q, v, {}).has_value());
}

TEST_CASE("random lifetimes always give sound plans") {
  std::mt19937 rng(3);
  ir::SymInt n = ir::SymInt::symbol("n");
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<Lifetime> v;
    size_t count = 1 + rng() % 30;
    for (size_t i = 0; i < count; ++i) {
      size_t first = rng() % 40, len = rng() % 10;
      ir::SymInt bytes = rng() % 2 ? ir::SymInt(int64_t(1 + rng() % 5000))
                                   : n * ir::SymInt(int64_t(1 + rng() % 300));
      v.push_back({first, first + len, bytes});
    }
    codegen::BufferPlan p = codegen::plan_buffers(v);
    for (int64_t b : {1, 3, 100}) {
      auto why = codegen::check_buffer_plan(p, v, {{"n", b}});
      INFO(why.value_or(""));
      CHECK_FALSE(why.has_value());
    }
  }
}
