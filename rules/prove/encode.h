#pragma once
// The Z3 encoding of an ir::Graph at static shapes: one real term per element of every value.
//
// Each op's meaning comes from its op-table entry, so the prover and the interpreter cannot
// disagree about what an op does:
//  - elementwise ops: the entry's ScalarExpr (node_scalar_expr), applied element by element with
//    numpy broadcasting; + - * over the reals, / as multiplication by recip, max/min/abs/relu/
//    where/clip/comparisons as if-then-else, exp/log/sqrt/tanh/erf/pow as the uninterpreted
//    primitives of rules/prove/primitives.h;
//  - structured ops that are multi-affine in their inputs (layout ops, MatMul, Gemm, Conv,
//    ConvTranspose, sum and mean reductions, average pooling) and max/min windows (ReduceMax,
//    MaxPool...): the coefficients or windows read off the reference kernel (rules/prove/probe.h);
//  - Softmax, LogSoftmax, LayerNormalization and BatchNormalization (inference): written here
//    from the primitives (exp, sum, recip, sqrt), as ONNX defines them;
//  - integer Div and Mod (truncating division; ONNX Mod's fmod attribute picks the sign of the
//    remainder) through Z3's integer div/mod, adjusted from its Euclidean convention, with 0 for
//    a zero divisor as the interpreter gives; floating Mod as x - y*trunc(x/y); Round (half to
//    even) through to_int. Integer inputs are Z3 integers; integer arithmetic is unbounded, so
//    int64 wrap-around is not covered;
//  - a fused Kernel: its body's ops (ir/kernel_body.h), expanded in place;
//  - anything else (Resize, LSTM...): Error of kind Unsupported, which the prover reports as an
//    unknown verdict.
// Graph inputs are symbolic (element i of input "x" is the real constant "x[i]"); weights are
// numerals (integer weights such as Reshape's shape are read as they are).
#include <z3++.h>

#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "rules/prove/primitives.h"
#include "rules/prove/probe.h"

namespace eqfuse::rules::prove {

using Terms = std::vector<z3::expr>;

struct Encoding {
  std::vector<Terms> inputs;   // per graph input, its element constants
  std::vector<Terms> outputs;  // per graph output
};

// Bump when an encoding changes meaning: proofs cached under another version are not reused.
inline constexpr int kEncodingVersion = 2;

class Encoder {
 public:
  explicit Encoder(Primitives& primitives) : prims_(primitives) {}
  // Throws Error (Unsupported) naming the node when an op cannot be encoded, and Error when a
  // shape is not static.
  Encoding encode(const ir::Graph& graph);

 private:
  Primitives& prims_;
  // Structures probed from kernels, by op, attributes and input shapes: the two sides of a rule
  // and its several bindings share most nodes.
  std::map<std::string, Polynomials> polynomials_;
  std::map<std::string, Windows> windows_;
  friend class NodeEncoder;
};

}  // namespace eqfuse::rules::prove
