#include "egraph/ematch.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>

namespace eqfuse::egraph {

Query::Query(const Pattern& pattern, size_t num_vars) : num_vars_(num_vars) {
  compile({&pattern}, {kNoId});
}

Query::Query(const std::vector<const Pattern*>& patterns, const std::vector<uint32_t>& roots,
             size_t num_vars)
    : num_vars_(num_vars) {
  compile(patterns, roots);
}

uint32_t Query::compile_node(const Pattern& p, uint32_t index, uint32_t reg) {
  const PatternNode& node = p.nodes()[index];
  if (node.is_var()) {
    if (var_reg_[node.var] == kNoId) {
      var_reg_[node.var] = reg;
    } else {
      program_.push_back({Insn::Compare, var_reg_[node.var], reg});
    }
    return 0;
  }
  uint32_t out = num_regs_;
  num_regs_ += static_cast<uint32_t>(node.children.size());
  Insn bind{Insn::Bind, reg, out, node.op, static_cast<uint32_t>(node.children.size())};
  bind.attrs = node.attrs_id;
  if (node.attrs_id == kNoId) {
    // Attribute variables get registers of their own; a repeated one compares in Bind.
    std::vector<uint8_t> modes;
    for (const auto& a : node.attrs) {
      bool first = a.var != kNoId && attr_var_reg_[a.var] == kNoId;
      if (first) attr_var_reg_[a.var] = num_regs_++;
      modes.push_back(first);
    }
    bind.modes = static_cast<uint32_t>(attr_modes_.size());
    attr_modes_.push_back(std::move(modes));
    attr_specs_.push_back(node.attrs);
  }
  program_.push_back(bind);
  // Variables first (cheap binds and compares prune early), then sub-patterns.
  for (size_t k = 0; k < node.children.size(); ++k)
    if (p.nodes()[node.children[k]].is_var()) compile_node(p, node.children[k], out + k);
  for (size_t k = 0; k < node.children.size(); ++k)
    if (!p.nodes()[node.children[k]].is_var()) compile_node(p, node.children[k], out + k);
  return 0;
}

void Query::compile(const std::vector<const Pattern*>& patterns,
                    const std::vector<uint32_t>& roots) {
  var_reg_.assign(num_vars_, kNoId);
  attr_var_reg_.assign(num_vars_, kNoId);
  num_regs_ = 1;
  for (size_t i = 0; i < patterns.size(); ++i) {
    const Pattern& p = *patterns[i];
    uint32_t reg;
    if (i == 0) {
      reg = 0;  // the search loop sets register 0 to each candidate root
      root_is_var_ = p.root().is_var();
      root_op_ = p.root().op;
    } else if (roots[i] != kNoId && var_reg_[roots[i]] != kNoId) {
      reg = var_reg_[roots[i]];
    } else {
      reg = num_regs_++;
      program_.push_back({p.root().is_var() ? Insn::ScanAll : Insn::Scan, reg, 0, p.root().op});
    }
    if (roots[i] != kNoId && var_reg_[roots[i]] == kNoId) var_reg_[roots[i]] = reg;
    compile_node(p, static_cast<uint32_t>(p.nodes().size() - 1), reg);
  }
  program_.push_back({Insn::Yield});
  for (size_t v = 0; v < num_vars_; ++v) {
    if (var_reg_[v] == kNoId) var_reg_[v] = attr_var_reg_[v];
  }
}

namespace {

struct Machine {
  const EGraph& egraph;
  const std::vector<Query::Insn>& program;
  const std::vector<uint32_t>& var_reg;
  const std::vector<uint32_t>& attr_var_reg;
  const std::vector<std::vector<PatternNode::Attr>>& attr_specs;
  const std::vector<std::vector<uint8_t>>& attr_modes;
  std::vector<uint32_t> regs;
  Matches& out;
  size_t max_matches;

  bool attrs_match(const Query::Insn& insn, NodeId n) {
    const AttrList& have = attr_list(egraph.attrs(n));
    const auto& want = attr_specs[insn.modes];
    if (have.size() != want.size()) return false;
    for (size_t i = 0; i < want.size(); ++i) {
      if (have[i].first != want[i].key) return false;
      if (want[i].var == kNoId) {
        if (have[i].second != want[i].value) return false;
      }
    }
    const std::vector<uint8_t>& modes = attr_modes[insn.modes];
    for (size_t i = 0; i < want.size(); ++i) {
      if (want[i].var == kNoId) continue;
      uint32_t& r = regs[attr_var_reg[want[i].var]];
      if (modes[i]) {
        r = have[i].second;
      } else if (r != have[i].second) {
        return false;
      }
    }
    return true;
  }

  // Returns false to stop the whole search (max_matches reached).
  bool run(size_t pc) {
    const Query::Insn& insn = program[pc];
    switch (insn.kind) {
      case Query::Insn::Bind: {
        auto nodes = egraph.class_nodes(regs[insn.reg]);
        const NodeId* it = nodes.data();
        const NodeId* end = it + nodes.size();
        if (nodes.size() > 8) {
          it = std::partition_point(it, end, [&](NodeId n) { return egraph.op(n) < insn.op; });
        }
        for (; it != end; ++it) {
          NodeId n = *it;
          Symbol op = egraph.op(n);
          if (op != insn.op) {
            if (op > insn.op) break;
            continue;
          }
          auto kids = egraph.children(n);
          if (kids.size() != insn.arity) continue;
          if (insn.attrs != kNoId) {
            if (egraph.attrs(n) != insn.attrs) continue;
          } else if (!attrs_match(insn, n)) {
            continue;
          }
          std::copy(kids.begin(), kids.end(), regs.begin() + insn.out);
          if (!run(pc + 1)) return false;
        }
        return true;
      }
      case Query::Insn::Compare:
        if (regs[insn.reg] != regs[insn.out]) return true;
        return run(pc + 1);
      case Query::Insn::Scan:
        for (EClassId c : egraph.classes_with_op(insn.op)) {
          regs[insn.reg] = c;
          if (!run(pc + 1)) return false;
        }
        return true;
      case Query::Insn::ScanAll:
        for (EClassId c : egraph.classes()) {
          regs[insn.reg] = c;
          if (!run(pc + 1)) return false;
        }
        return true;
      case Query::Insn::Yield:
        out.data.push_back(regs[0]);
        for (uint32_t r : var_reg) out.data.push_back(r == kNoId ? kNoId : regs[r]);
        return out.size() < max_matches;
    }
    return true;
  }
};

constexpr size_t kChunk = 512;  // roots per parallel task: fixed, so results are deterministic

}  // namespace

void Query::search_roots(const EGraph& egraph, std::span<const EClassId> roots, Matches& out,
                         size_t max_matches, Deadline deadline, std::atomic<bool>* stop) const {
  Machine m{egraph,
            program_,
            var_reg_,
            attr_var_reg_,
            attr_specs_,
            attr_modes_,
            std::vector<uint32_t>(num_regs_, kNoId),
            out,
            max_matches};
  const bool timed = deadline != Deadline::max();
  for (size_t i = 0; i < roots.size(); ++i) {
    if (timed && (i & 63) == 0) {
      if ((stop && stop->load(std::memory_order_relaxed)) ||
          std::chrono::steady_clock::now() >= deadline) {
        out.timed_out = true;
        if (stop) stop->store(true, std::memory_order_relaxed);
        return;
      }
    }
    m.regs[0] = roots[i];
    if (!m.run(0)) return;
  }
}

Matches Query::search_class(const EGraph& egraph, EClassId root) const {
  Matches out;
  out.stride = num_vars_ + 1;
  EClassId c = egraph.find(root);
  search_roots(egraph, std::span<const EClassId>(&c, 1), out, SIZE_MAX, Deadline::max(), nullptr);
  return out;
}

Matches Query::search(const EGraph& egraph, int threads, size_t max_matches,
                      Deadline deadline) const {
  Matches out;
  out.stride = num_vars_ + 1;
  std::span<const EClassId> roots =
      root_is_var_ ? egraph.classes() : egraph.classes_with_op(root_op_);
  if (threads <= 1 || roots.size() <= kChunk || max_matches != SIZE_MAX) {
    search_roots(egraph, roots, out, max_matches, deadline, nullptr);
    return out;
  }
  size_t chunks = (roots.size() + kChunk - 1) / kChunk;
  std::vector<Matches> parts(chunks);
  std::atomic<bool> stop{false};
  tbb::task_arena arena(threads);
  arena.execute([&] {
    tbb::parallel_for(tbb::blocked_range<size_t>(0, chunks, 1), [&](const auto& range) {
      for (size_t i = range.begin(); i != range.end(); ++i) {
        parts[i].stride = out.stride;
        size_t begin = i * kChunk, end = std::min(roots.size(), begin + kChunk);
        search_roots(egraph, roots.subspan(begin, end - begin), parts[i], SIZE_MAX, deadline,
                     &stop);
      }
    });
  });
  size_t total = 0;
  for (const Matches& p : parts) total += p.data.size();
  out.timed_out = stop.load();
  out.data.reserve(total);
  for (Matches& p : parts) {
    out.data.insert(out.data.end(), p.data.begin(), p.data.end());
    BigVector<uint32_t>().swap(p.data);
  }
  return out;
}

}  // namespace eqfuse::egraph
