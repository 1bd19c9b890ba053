#pragma once
// The interpreter's way of running a ScalarExpr over whole tensors: the expression is compiled
// once per node to a flat postfix program, which is then evaluated over chunks of elements (one
// instruction loop per chunk, not a tree walk per element), with numpy broadcasting of the
// inputs and the conversion of each input to the compute type done while loading a chunk.
//
// The compute type is double when any input is floating (f16/bf16 are widened, the result is
// rounded once when stored) and int64 otherwise (bool inputs read as 0/1), so integer ops get
// exact integer semantics (see ir/scalar_expr.h).
#include <vector>

#include "ir/scalar_expr.h"
#include "ir/tensor.h"

namespace eqfuse::ir {

class ScalarProgram {
 public:
  // `expr` must have its attributes bound (bind_attrs); Error (Internal) otherwise.
  explicit ScalarProgram(const ScalarExpr& expr);

  // out[i] = expr(inputs broadcast to the common shape)[i], stored as `out_dtype`. Inputs must
  // broadcast (Error otherwise). Runs in parallel on large tensors.
  Tensor run(const std::vector<const Tensor*>& inputs, DType out_dtype) const;

  struct Instr {
    ScalarOp op;
    int32_t input;  // ScalarOp::Input
    double value;   // ScalarOp::Const
  };
  const std::vector<Instr>& code() const { return code_; }

 private:
  std::vector<Instr> code_;
  int max_depth_ = 0;
  int num_inputs_ = 0;
};

// Compiles and runs in one call.
Tensor evaluate_elementwise(const ScalarExpr& expr, const std::vector<const Tensor*>& inputs,
                            DType out_dtype);

}  // namespace eqfuse::ir
