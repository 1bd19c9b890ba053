// The arena plan: no two live values share memory (the checker, at several bindings), slots are
// reused once a value is dead, and symbolic sizes never need a run-time comparison.
#include <catch2/catch.hpp>
#include <random>

#include "codegen/buffer_plan.h"
#include "codegen/plan.h"
#include "ir/builder.h"

using namespace eqfuse;
using codegen::Lifetime;

namespace {

Lifetime life(size_t first, size_t last, ir::SymInt bytes,
              std::optional<size_t> reuses = std::nullopt) {
  return {first, last, std::move(bytes), reuses};
}

}  // namespace

TEST_CASE("the buffer plan reuses dead slots and never overlaps live values") {
  ir::SymInt n = ir::SymInt::symbol("batch");
  std::vector<Lifetime> v = {life(0, 1, n * ir::SymInt(4096)), life(1, 2, n * ir::SymInt(4096)),
                             life(2, 3, n * ir::SymInt(4096)),  // may take value 0's slot
                             life(3, 5, ir::SymInt(100)), life(4, 5, n * ir::SymInt(8192))};
  codegen::BufferPlan p = codegen::plan_buffers(v);
  CHECK(p.slot_of[2] == p.slot_of[0]);
  CHECK(p.slot_bytes.size() <= 4);
  for (int64_t b : {1, 2, 7, 64})
    CHECK_FALSE(codegen::check_buffer_plan(p, v, {{"batch", b}}).has_value());
}

TEST_CASE("the checker finds a plan that lets two live values share a slot") {
  std::vector<Lifetime> v = {life(0, 2, ir::SymInt(64)), life(1, 3, ir::SymInt(64))};
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
      // Some values may be written in place over one whose last stage is their first.
      std::optional<size_t> reuses;
      for (size_t r = 0; r < v.size(); ++r)
        if (v[r].last == first && v[r].first < first && rng() % 2) reuses = r;
      v.push_back(life(first, first + len, bytes, reuses));
    }
    codegen::BufferPlan p = codegen::plan_buffers(v);
    for (int64_t b : {1, 3, 100}) {
      auto why = codegen::check_buffer_plan(p, v, {{"n", b}});
      INFO(why.value_or(""));
      CHECK_FALSE(why.has_value());
    }
  }
}

TEST_CASE("a value written in place takes the slot of the operand it reads last") {
  ir::SymInt n = ir::SymInt::symbol("batch");
  // 0 -> 1 in place at stage 1; 1 -> 2 in place at stage 2; 3 cannot (it is larger).
  std::vector<Lifetime> v = {life(0, 1, n * ir::SymInt(4096)), life(1, 2, n * ir::SymInt(4096), 0),
                             life(2, 3, n * ir::SymInt(4096), 1),
                             life(3, 4, n * ir::SymInt(8192), 2)};
  codegen::BufferPlan p = codegen::plan_buffers(v);
  CHECK(p.slot_of[1] == p.slot_of[0]);
  CHECK(p.slot_of[2] == p.slot_of[0]);
  CHECK(p.slot_of[3] != p.slot_of[2]);
  for (int64_t b : {1, 5, 64})
    CHECK_FALSE(codegen::check_buffer_plan(p, v, {{"batch", b}}).has_value());

  // Without the declaration, the same sharing is a violation.
  std::vector<Lifetime> undeclared = v;
  undeclared[1].reuses.reset();
  auto why = codegen::check_buffer_plan(p, undeclared, {{"batch", 2}});
  REQUIRE(why.has_value());
  CHECK_THAT(*why, Catch::Contains("live together"));
}

TEST_CASE("in place is refused where the operand lives on or the slot is too small") {
  // Value 0 is still read at stage 2, after value 1 is written at stage 1.
  std::vector<Lifetime> lives_on = {life(0, 2, ir::SymInt(256)), life(1, 3, ir::SymInt(256), 0)};
  codegen::BufferPlan p = codegen::plan_buffers(lives_on);
  CHECK(p.slot_of[1] != p.slot_of[0]);
  CHECK_FALSE(codegen::check_buffer_plan(p, lives_on, {}).has_value());
  // Forced into one slot, the checker refuses it: the overlap is more than the last stage.
  p.slot_of[1] = p.slot_of[0];
  CHECK(codegen::check_buffer_plan(p, lives_on, {}).has_value());

  ir::SymInt n = ir::SymInt::symbol("n");
  std::vector<Lifetime> larger = {life(0, 1, n * ir::SymInt(64)),
                                  life(1, 2, n * ir::SymInt(128), 0)};
  codegen::BufferPlan q = codegen::plan_buffers(larger);
  CHECK(q.slot_of[1] != q.slot_of[0]);
  CHECK_FALSE(codegen::check_buffer_plan(q, larger, {{"n", 3}}).has_value());
}
