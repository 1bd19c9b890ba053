#include "codegen/buffer_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

namespace eqfuse::codegen {

namespace {

ir::SymInt aligned(const ir::SymInt& bytes) {
  if (auto c = bytes.constant())
    return ir::SymInt((*c + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment);
  return ceil_div(bytes, ir::SymInt(kBufferAlignment)) * ir::SymInt(kBufferAlignment);
}

}  // namespace

BufferPlan plan_buffers(const std::vector<Lifetime>& values) {
  BufferPlan plan;
  plan.slot_of.assign(values.size(), 0);
  std::vector<size_t> order(values.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return values[a].first < values[b].first; });
  std::vector<size_t> busy_until;  // per slot: last stage of its latest value
  for (size_t v : order) {
    const Lifetime& life = values[v];
    ir::SymInt need = aligned(life.bytes);
    // In place over the value it reuses, when that value is the latest in its slot and the slot
    // surely holds this one.
    if (life.reuses) {
      size_t s = plan.slot_of[*life.reuses];
      if (values[*life.reuses].last == life.first && busy_until[s] == life.first &&
          surely_at_least(plan.slot_bytes[s], need)) {
        busy_until[s] = life.last;
        plan.slot_of[v] = s;
        continue;
      }
    }
    // Best free slot: the same size, else one surely large enough, else one it surely outgrows.
    std::optional<size_t> equal, larger, smaller;
    for (size_t s = 0; s < plan.slot_bytes.size(); ++s) {
      if (busy_until[s] >= life.first) continue;
      const ir::SymInt& have = plan.slot_bytes[s];
      if (have == need) {
        if (!equal) equal = s;
      } else if (surely_at_least(have, need)) {
        if (!larger) larger = s;
      } else if (surely_at_least(need, have)) {
        if (!smaller) smaller = s;
      }
    }
    std::optional<size_t> slot = equal ? equal : larger ? larger : smaller;
    if (!slot) {
      slot = plan.slot_bytes.size();
      plan.slot_bytes.push_back(need);
      busy_until.push_back(0);
    } else if (slot == smaller) {
      plan.slot_bytes[*slot] = need;
    }
    busy_until[*slot] = life.last;
    plan.slot_of[v] = *slot;
  }
  ir::SymInt offset = 0;
  for (const ir::SymInt& b : plan.slot_bytes) {
    plan.slot_offset.push_back(offset);
    offset = offset + b;
  }
  plan.total = offset;
  return plan;
}

std::optional<std::string> check_buffer_plan(const BufferPlan& plan,
                                             const std::vector<Lifetime>& values,
                                             const std::map<std::string, int64_t>& dims) {
  if (plan.slot_of.size() != values.size()) return "the plan has a different number of values";
  size_t n = plan.slot_bytes.size();
  if (plan.slot_offset.size() != n) return "slot offsets and sizes disagree";
  std::vector<int64_t> off(n), size(n);
  for (size_t s = 0; s < n; ++s) {
    auto o = plan.slot_offset[s].evaluate(dims), b = plan.slot_bytes[s].evaluate(dims);
    if (!o || !b) return fmt::format("slot {} has a size the dims do not fix", s);
    off[s] = *o;
    size[s] = *b;
    if (off[s] % kBufferAlignment != 0) return fmt::format("slot {} is not aligned", s);
  }
  auto total = plan.total.evaluate(dims);
  if (!total) return std::string("the arena size is not fixed by the dims");
  for (size_t s = 0; s < n; ++s) {
    if (off[s] < 0 || off[s] + size[s] > *total)
      return fmt::format("slot {} lies outside the arena", s);
    for (size_t t = s + 1; t < n; ++t)
      if (off[s] < off[t] + size[t] && off[t] < off[s] + size[s])
        return fmt::format("slots {} and {} overlap", s, t);
  }
  for (size_t v = 0; v < values.size(); ++v) {
    size_t s = plan.slot_of[v];
    if (s >= n) return fmt::format("value {} has no slot", v);
    auto b = values[v].bytes.evaluate(dims);
    if (!b) return fmt::format("value {} has a size the dims do not fix", v);
    if (*b > size[s])
      return fmt::format("value {} ({} bytes) overflows slot {} ({} bytes)", v, *b, s, size[s]);
    for (size_t w = v + 1; w < values.size(); ++w) {
      if (plan.slot_of[w] != s) continue;
      bool disjoint = values[v].last < values[w].first || values[w].last < values[v].first;
      auto in_place = [&](size_t a, size_t b) {  // b takes a's slot at a's last stage
        return values[b].reuses == a && values[a].last == values[b].first &&
               values[a].first < values[b].first;
      };
      if (!disjoint && !in_place(v, w) && !in_place(w, v))
        return fmt::format("values {} and {} are live together (stages {}-{} and {}-{}) in slot {}",
                           v, w, values[v].first, values[v].last, values[w].first, values[w].last,
                           s);
    }
  }
  return std::nullopt;
}

}  // namespace eqfuse::codegen
