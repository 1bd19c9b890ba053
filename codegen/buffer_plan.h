#pragma once
// Memory planning for generated code: the values that stages write into the arena, each with a
// lifetime (the first stage that writes it to the last stage that reads it) and a symbolic size,
// are packed into slots. Two values share a slot only when their lifetimes are disjoint, so a
// slot is reused as soon as its value is dead. Sizes stay symbolic (batch*65536), so a slot
// takes a value only when the slot is surely at least as large, or the value surely larger
// (then the slot grows): no size comparison is left to run time, and the slot offsets are
// prefix sums that the generated runtime evaluates once per run.
//
// In place: a value may instead take over the slot of a value its own stage reads for the last
// time, when that stage reads it only at the element it writes (a pointwise stage over an
// operand of its own shape). The two then overlap at that one stage, which is safe because each
// element is read before it is written and by the same iteration; the plan says which values may
// do so (`Lifetime::reuses`) and the checker allows exactly that overlap.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/sym_int.h"

namespace eqfuse::codegen {

inline constexpr int64_t kBufferAlignment = 64;  // bytes; every slot starts on this boundary

struct Lifetime {
  size_t first = 0;  // stage that writes it
  size_t last = 0;   // last stage that reads it (>= first)
  ir::SymInt bytes = 0;
  // The value (an index into the same list) whose slot this one may take over in place: its
  // stage `first` is that value's last reader and reads it only at the element it writes.
  std::optional<size_t> reuses;
};

struct BufferPlan {
  std::vector<size_t> slot_of;          // per lifetime
  std::vector<ir::SymInt> slot_bytes;   // aligned
  std::vector<ir::SymInt> slot_offset;  // prefix sums of slot_bytes
  ir::SymInt total = 0;                 // arena bytes
};

BufferPlan plan_buffers(const std::vector<Lifetime>& values);

// Checks the plan at one binding of the dims: every value fits its slot, slots do not overlap
// and lie inside the arena, and no two values with overlapping lifetimes share memory, except a
// value and the one it `reuses` meeting at exactly that value's last stage. Returns a
// description of the first violation; nullopt when the plan is sound.
std::optional<std::string> check_buffer_plan(const BufferPlan& plan,
                                             const std::vector<Lifetime>& values,
                                             const std::map<std::string, int64_t>& dims);

}  // namespace eqfuse::codegen
