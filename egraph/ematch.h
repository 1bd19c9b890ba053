#pragma once
// E-matching: finding every substitution under which a pattern (or several patterns jointly)
// matches e-classes of a clean e-graph. Patterns compile into a small backtracking program
// (egg's machine, in the same spirit): `Bind` walks the nodes of one op in a class (nodes are
// sorted by op, so that is a contiguous run), `Compare` checks a repeated variable, `Scan`
// enumerates, through the op -> classes index, the roots of a multi-pattern's later patterns.
// The first pattern's roots also come from that index, so a rule only visits classes that
// contain its root operator.
//
// Search is read-only: it may run on many threads. Roots are split in fixed-size chunks and
// the chunks' results concatenated in order, so the matches (and everything built from them)
// are the same whatever the thread count.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <vector>

#include "egraph/big_vector.h"
#include "egraph/pattern.h"

namespace eqfuse::egraph {

// Matches of one query: for each, the root class (of the first pattern) followed by one value
// per variable of the rule's VarTable. Stored flat: one allocation for all matches.
struct Matches {
  size_t stride = 1;
  BigVector<uint32_t> data;
  bool timed_out = false;  // the search passed its deadline; the matches are a partial set
  size_t size() const { return data.size() / stride; }
  EClassId root(size_t i) const { return data[i * stride]; }
  Subst subst(size_t i) const { return {data.data() + i * stride + 1, stride - 1}; }
};

class Query {
 public:
  // One pattern.
  Query(const Pattern& pattern, size_t num_vars);
  // Several patterns matched jointly (a multi-pattern): `roots[i]` names the class variable the
  // i-th pattern's root binds (kNoId: none); variables shared across patterns must agree.
  Query(const std::vector<const Pattern*>& patterns, const std::vector<uint32_t>& roots,
        size_t num_vars);

  // Every match in `egraph` (which must be clean). `threads` > 1 uses TBB; the result does not
  // depend on it. `max_matches` stops early once that many are found (in order: the result is
  // then a deterministic prefix). Past `deadline` the search gives up (Matches::timed_out).
  using Deadline = std::chrono::steady_clock::time_point;
  Matches search(const EGraph& egraph, int threads = 1, size_t max_matches = SIZE_MAX,
                 Deadline deadline = Deadline::max()) const;
  // Matches rooted at one class (used by tests and conditions).
  Matches search_class(const EGraph& egraph, EClassId root) const;
  size_t num_vars() const { return num_vars_; }

  struct Insn {
    enum Kind : uint8_t { Bind, Compare, Scan, ScanAll, Yield } kind;
    uint32_t reg = 0;  // Bind: class register; Compare: first; Scan: output register
    uint32_t out = 0;  // Bind: first child register; Compare: second register
    Symbol op = 0;
    uint32_t arity = 0;
    AttrId attrs = kNoAttrs;  // literal payload to require, or kNoId
    // Bind with attribute variables: index into attr_specs_/attr_modes_ (per attribute, mode 1
    // = binds its variable here, 0 = compares with an earlier binding).
    uint32_t modes = 0;
  };

 private:
  void compile(const std::vector<const Pattern*>& patterns, const std::vector<uint32_t>& roots);
  uint32_t compile_node(const Pattern& p, uint32_t node, uint32_t reg);
  void search_roots(const EGraph& egraph, std::span<const EClassId> roots, Matches& out,
                    size_t max_matches, Deadline deadline, std::atomic<bool>* stop) const;

  std::vector<Insn> program_;
  std::vector<uint32_t> var_reg_;  // register holding each variable
  std::vector<uint32_t> attr_var_reg_;
  std::vector<std::vector<PatternNode::Attr>> attr_specs_;
  std::vector<std::vector<uint8_t>> attr_modes_;
  uint32_t num_regs_ = 1;
  size_t num_vars_;
  Symbol root_op_ = 0;
  bool root_is_var_ = false;
};

}  // namespace eqfuse::egraph
