#pragma once
// IndexExpr: the meaning of a structured op (contraction, reduction) as an einsum-like index
// expression, stated for one node with concrete shapes:
//
//   out[v0, v1] = finalize( reduce_{v2 < K} body(x0[v0, v2], x1[v2, v1]) )      (MatMul)
//
// Output variables range over the output dims, reduction variables over given extents; each
// access reads one input at affine indices of the variables (a broadcast dim reads index 0);
// the body is a ScalarExpr over the accesses (its x<i> is access i); the reduction combines
// body values (sum, max, min, prod); `finalize` (optional) is a ScalarExpr over x0 = the reduced
// value and x1.. = `finalize_accesses` read at the output index (Gemm's beta*C, Mean's 1/N).
//
// It is built per node (shapes are concrete: the prover checks rules at small concrete shapes,
// and the interpreter's tests compare each fast kernel with evaluate() on small random shapes).
// evaluate() is a slow, obviously-correct loop nest; the interpreter runs hand-written kernels.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/scalar_expr.h"
#include "ir/tensor.h"

namespace eqfuse::ir {

// sum of coeff * var + constant.
struct AffineIndex {
  std::vector<std::pair<int, int64_t>> terms;  // (variable, coefficient)
  int64_t constant = 0;
  static AffineIndex var(int v) { return {{{v, 1}}, 0}; }
  static AffineIndex constant_index(int64_t c) { return {{}, c}; }
};

struct IndexAccess {
  int64_t input = 0;  // which op input
  std::vector<AffineIndex> indices;
};

enum class IndexReduce { None, Sum, Max, Min, Prod };

struct IndexExpr {
  std::vector<int64_t> output_dims;        // variables 0 .. output_dims.size()-1
  std::vector<int64_t> reduction_extents;  // variables after the output ones
  IndexReduce reduce = IndexReduce::None;
  std::vector<IndexAccess> accesses;  // the body's x<i> reads accesses[i]
  ScalarExprPtr body;
  ScalarExprPtr finalize;                      // nullptr: the reduced value itself
  std::vector<IndexAccess> finalize_accesses;  // finalize's x1, x2, ...

  size_t num_vars() const { return output_dims.size() + reduction_extents.size(); }
};

// "out[v0,v1] = sum(v2<4) (mul x0[v0,v2] x1[v2,v1])": for test messages and debugging.
std::string to_string(const IndexExpr& e);

// Evaluates the expression over `inputs` in double (int64 when every input is an integer
// tensor), storing the result as `out_dtype`. Throws Error on an access out of bounds.
Tensor evaluate(const IndexExpr& e, const std::vector<const Tensor*>& inputs, DType out_dtype);

}  // namespace eqfuse::ir
