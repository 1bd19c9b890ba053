#pragma once
// ScalarExpr: the meaning of an elementwise op, stated once, as a small expression tree over the
// op's inputs x0, x1, ... (each one element of a broadcast input), constants and attribute
// references. Relu is (max x0 0), LeakyRelu (select (lt x0 0) (mul @alpha x0) x0).
//
// It is plain data so that every reader can walk it: the interpreter compiles it to a postfix
// program (ir/scalar_program.h), the Z3 prover turns it into terms, code generators print it, and
// fused kernels are ScalarExprs over several inputs built by substitution (substitute()).
//
// Semantics are over the element type the op computes in: floating ops over the reals (the
// interpreter uses double), integer ops over int64 where div truncates toward zero, mod follows
// the sign of the divisor and fmod that of the dividend; comparisons and logical ops give 0 or 1
// and treat any nonzero operand as true.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace eqfuse::ir {

enum class ScalarOp : uint8_t {
  // leaves
  Input,  // x<index>
  Const,  // a number
  Attr,   // @name: a node attribute (a float or int), bound before evaluation
  // unary
  Neg,
  Abs,
  Exp,
  Log,
  Sqrt,
  Recip,
  Tanh,
  Erf,
  Sin,
  Cos,
  Tan,
  Asin,
  Acos,
  Atan,
  Sinh,
  Cosh,
  Asinh,
  Acosh,
  Atanh,
  Floor,
  Ceil,
  Round /* half to even */,
  Sign,
  Not,
  IsNaN,
  IsInf,
  // binary
  Add,
  Sub,
  Mul,
  Div,
  Pow,
  Max,
  Min,
  Mod /* sign of divisor */,
  FMod /* sign of dividend */,
  Eq,
  Ne,
  Lt,
  Le,
  Gt,
  Ge,
  And,
  Or,
  Xor,
  // ternary
  Select,  // (select c a b): a where c is nonzero, else b
};
inline constexpr int kNumScalarOps = static_cast<int>(ScalarOp::Select) + 1;

std::string_view scalar_op_name(ScalarOp op);  // "add", "select", ...
std::optional<ScalarOp> parse_scalar_op(std::string_view name);
int scalar_op_arity(ScalarOp op);  // 0 for leaves

struct ScalarExpr;
using ScalarExprPtr = std::shared_ptr<const ScalarExpr>;

struct ScalarExpr {
  ScalarOp op = ScalarOp::Const;
  int64_t input = 0;  // Input: which input
  double value = 0;   // Const
  std::string attr;   // Attr: attribute name
  std::vector<ScalarExprPtr> args;
};

// Builders. Numbers convert to constants implicitly through c().
namespace sx {
ScalarExprPtr x(int64_t input);
ScalarExprPtr c(double value);
ScalarExprPtr attr(std::string name);
ScalarExprPtr make(ScalarOp op, std::vector<ScalarExprPtr> args);
ScalarExprPtr neg(ScalarExprPtr a);
ScalarExprPtr abs(ScalarExprPtr a);
ScalarExprPtr exp(ScalarExprPtr a);
ScalarExprPtr log(ScalarExprPtr a);
ScalarExprPtr sqrt(ScalarExprPtr a);
ScalarExprPtr add(ScalarExprPtr a, ScalarExprPtr b);
ScalarExprPtr sub(ScalarExprPtr a, ScalarExprPtr b);
ScalarExprPtr mul(ScalarExprPtr a, ScalarExprPtr b);
ScalarExprPtr div(ScalarExprPtr a, ScalarExprPtr b);
ScalarExprPtr max(ScalarExprPtr a, ScalarExprPtr b);
ScalarExprPtr min(ScalarExprPtr a, ScalarExprPtr b);
ScalarExprPtr lt(ScalarExprPtr a, ScalarExprPtr b);
ScalarExprPtr le(ScalarExprPtr a, ScalarExprPtr b);
ScalarExprPtr gt(ScalarExprPtr a, ScalarExprPtr b);
ScalarExprPtr select(ScalarExprPtr c, ScalarExprPtr a, ScalarExprPtr b);
}  // namespace sx

// S-expression text: (max x0 0), (mul @alpha x0). Numbers print exactly (round-trip).
std::string to_string(const ScalarExpr& e);
inline std::string to_string(const ScalarExprPtr& e) {
  return to_string(*e);
}
// Parses the form to_string prints; Error (BadInput) on malformed text.
ScalarExprPtr parse_scalar_expr(std::string_view text);

bool equal(const ScalarExpr& a, const ScalarExpr& b);  // structural
// Number of inputs referenced: 1 + the largest input index (0 when none).
int64_t num_inputs(const ScalarExpr& e);
// Number of non-leaf nodes (the FLOPs of one element, as the cost model counts them).
int64_t op_count(const ScalarExpr& e);

// Replaces input i by replacement(i) where it returns non-null: fusion composes a producer's
// expression into its consumer's this way.
ScalarExprPtr substitute(const ScalarExprPtr& e,
                         const std::function<ScalarExprPtr(int64_t input)>& replacement);
// Replaces every attribute reference by its value (nullopt leaves it); folds constant
// subexpressions, so a select on a constant attribute disappears.
ScalarExprPtr bind_attrs(const ScalarExprPtr& e,
                         const std::function<std::optional<double>(const std::string&)>& value);
ScalarExprPtr fold_constants(const ScalarExprPtr& e);

// One primitive on doubles / on int64 (the semantics stated in the file comment). Integer
// division or mod by zero gives 0 instead of trapping.
double apply_scalar_op(ScalarOp op, const double* args);
int64_t apply_scalar_op_int(ScalarOp op, const int64_t* args);
// Evaluates at one point (slow; for tests, constant folding and the prover's checks). Throws
// Error on unbound attributes.
double evaluate(const ScalarExpr& e, const std::vector<double>& inputs);
int64_t evaluate_int(const ScalarExpr& e, const std::vector<int64_t>& inputs);

}  // namespace eqfuse::ir
