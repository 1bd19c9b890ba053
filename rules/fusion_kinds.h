#pragma once
// Which fused kernels exist, declared in rule files (rules/library/fusion.rules) beside the
// rewrite rules. Fusion (optimizer/fusion.h) only ever forms a kernel of a declared kind, and
// code generation implements each kind; every kernel is still proved before it joins the
// e-graph, so a kind says what is worth fusing, never what is true.
//
//   (fusion-ops ROLE OP...)       OPs play ROLE in kernels (a role may be declared in parts)
//   (kernel-kind NAME STAGE (contract ITEM... [:operand K] [:operands computed]) STAGE ...)
//      STAGE = (stage ITEM... [:row-max N]), ITEM = a role, an op, or (one ITEM...)
//
// A kind reads a body in dataflow order: the ops that depend on no contraction form the first
// stage, the i-th contraction (an op of role `contraction`) and what depends on it the next,
// and so on; a kind has exactly as many `contract` parts as the body has contractions. Every op
// of a stage must be one of its items; `(one X)` asks for exactly one op matching X there;
// `:row-max N` bounds the rows (last dim, static) that the stage's reductions span. A contraction
// reads its operands from the kernel's inputs through `index-map` ops only, except operand K of
// `:operand K`, which the previous stage computes (attention's P in P.V); with `:operands
// computed` its other operands may also be computed by the first stage (code generation loads
// them element by element, computing their pointwise work as it loads them, as an attention
// stage does: the scale of Q, a bias of K), where a library call would need them stored.
//
// Roles with a fixed meaning: `pointwise` (built in: the op table's elementwise and broadcast
// ops with one output), `index-map` (layout ops code generation folds into indexing),
// `row-reduction` (reduce the last axis only, every one in a body over one row shape) and
// `contraction`. Kinds are tried in order; the first that admits a body names it.
#include <optional>
#include <string>
#include <vector>

#include "support/sexpr.h"

namespace eqfuse::rules {

inline constexpr const char* kPointwiseRole = "pointwise";
inline constexpr const char* kIndexMapRole = "index-map";
inline constexpr const char* kRowReductionRole = "row-reduction";
inline constexpr const char* kContractionRole = "contraction";

// An item of a stage or contraction: a role or op name, or `(one ...)` of such names.
struct KindItem {
  std::vector<std::string> names;  // one name, or the names inside (one ...)
  bool exactly_one = false;
};

struct KindStage {
  std::vector<KindItem> items;
  std::optional<int64_t> row_max;
};

struct KindContraction {
  std::vector<std::string> names;         // roles or ops
  std::optional<size_t> chained_operand;  // `:operand K`
  bool computed_operands = false;         // `:operands computed`
};

struct KernelKindDecl {
  std::string name;
  SourceLocation where;
  std::vector<KindStage> stages;              // contractions.size() + 1
  std::vector<KindContraction> contractions;  // in dataflow order
};

struct FusionKinds {
  std::vector<std::pair<std::string, std::vector<std::string>>> roles;  // declared, in order
  std::vector<KernelKindDecl> kinds;

  bool empty() const { return kinds.empty(); }
  // Whether `op` plays `role` (pointwise: see the file comment; elementwise is the caller's).
  bool declared_in_role(const std::string& role, const std::string& op) const;
  // Appends another file's declarations.
  void add(const FusionKinds& other);
};

// Whether `head` names a fusion form; reads it into `kinds`, throwing sexpr_error at the
// offending token (unknown op or role, a kind whose stages and contractions do not alternate, a
// bad option).
bool is_fusion_form(const std::string& head);
void read_fusion_form(const Sexpr& form, FusionKinds& kinds);

// The library's declarations (rules/library/fusion.rules), parsed once.
const FusionKinds& library_fusion_kinds();

}  // namespace eqfuse::rules
